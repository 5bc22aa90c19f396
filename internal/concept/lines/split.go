package lines

import "bytes"

// RawLine is one line of a whole file as the scanner divides it: the text
// (without the terminator, and line 1 without a UTF-8 byte order mark) and
// the terminator itself ("\n", "\r\n", "\r", or "" for a last line that
// has none), so a file can be rebuilt byte for byte.
type RawLine struct {
	Text string
	EOL  string
}

// Split divides data into lines by the scanner's rules, returning the byte
// order mark it stripped (or "").
func Split(data []byte) (bom string, lines []RawLine) {
	if bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}) {
		bom, data = string(data[:3]), data[3:]
	}
	for len(data) > 0 {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			lines = append(lines, RawLine{Text: string(data)})
			break
		}
		eol := 1
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			eol = 2
		}
		lines = append(lines, RawLine{Text: string(data[:i]), EOL: string(data[i : i+eol])})
		data = data[i+eol:]
	}
	return bom, lines
}

// Join rebuilds a file from Split's parts.
func Join(bom string, lines []RawLine) []byte {
	n := len(bom)
	for _, l := range lines {
		n += len(l.Text) + len(l.EOL)
	}
	b := make([]byte, 0, n)
	b = append(b, bom...)
	for _, l := range lines {
		b = append(b, l.Text...)
		b = append(b, l.EOL...)
	}
	return b
}

// Texts returns the lines' texts.
func Texts(lines []RawLine) []string {
	t := make([]string, len(lines))
	for i, l := range lines {
		t[i] = l.Text
	}
	return t
}
