// Package termsafe is the one rule for putting a string that someone else
// chose (a path, a process name, a session id, an agent's argument) in
// front of a human: nothing that a terminal acts on rather than shows
// reaches it raw. Every human output (the CLI's tables and messages,
// refusals, the envelope's path) goes through Quote or Escape, and every
// JSON output through JSON, which keeps the JSON's value exact.
//
// Unsafe is any rune strconv.IsPrint refuses, other than the ASCII space:
// C0 and C1 controls and DEL (escape sequences, carriage returns, forged
// lines), the line and paragraph separators, the bidirectional overrides
// and isolates and every other format character, private use and
// unassigned runes; and any byte that is not UTF-8.
package termsafe

import (
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Safe reports whether s may be shown as it is.
func Safe(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !strconv.IsPrint(r) {
			return false
		}
		i += n
	}
	return true
}

// Quote is s as it may go to a terminal: s itself when it is safe and
// cannot be taken for a quoted string, else Go's quoted form of it (every
// unsafe rune as a backslash escape), which is unambiguous.
func Quote(s string) string {
	if Safe(s) && !strings.HasPrefix(s, `"`) {
		return s
	}
	return strconv.Quote(s)
}

// Escape is s with each unsafe rune written as its Go backslash escape
// (\x1b, \n, \u202e) in place: for a message that is already words, in
// which the strings others chose are quoted where they stand.
func Escape(s string) string {
	if Safe(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&15, 16))
		case r == ' ' || r == '\\' || r == '"' || strconv.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r) // 'X' with X escaped
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// JSON returns the JSON text b with each unsafe rune that it holds raw
// written as a \u escape. JSON keeps only its own structure outside
// strings, all of it ASCII, so every such rune stands inside a string and
// the escape decodes to the same value: the JSON is exactly as before to
// any reader, and harmless on a terminal. (Raw C0 controls cannot occur in
// valid JSON; encoders already escape them.) A byte that is not UTF-8
// becomes \ufffd, as encoding/json would have made it.
func JSON(b []byte) []byte {
	i := firstUnsafe(b)
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	out = append(out, b[:i]...)
	for i < len(b) {
		c := b[i]
		if c < utf8.RuneSelf {
			if c == 0x7f || c < 0x20 && c != '\n' && c != '\t' && c != '\r' {
				out = appendU(out, rune(c))
			} else {
				out = append(out, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = appendU(out, utf8.RuneError)
		case strconv.IsPrint(r):
			out = append(out, b[i:i+n]...)
		case r > 0xffff: // a UTF-16 surrogate pair, as JSON spells it
			r -= 0x10000
			out = appendU(appendU(out, 0xd800+(r>>10)), 0xdc00+(r&0x3ff))
		default:
			out = appendU(out, r)
		}
		i += n
	}
	return out
}

// firstUnsafe is the index of the first byte JSON would change, or -1.
// White space between tokens (newline, tab, CR) is JSON's own.
func firstUnsafe(b []byte) int {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c == 0x7f || c < 0x20 && c != '\n' && c != '\t' && c != '\r' {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 || !strconv.IsPrint(r) {
			return i
		}
		i += n
	}
	return -1
}

func appendU(b []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', hex[r>>12&15], hex[r>>8&15], hex[r>>4&15], hex[r&15])
}

// Writer passes JSON text written to it through JSON: for a JSON log
// handler, which writes one whole record per Write. It reports the length
// it was given, as io.Writer requires.
func Writer(w io.Writer) io.Writer { return jsonWriter{w} }

type jsonWriter struct{ w io.Writer }

func (j jsonWriter) Write(p []byte) (int, error) {
	if _, err := j.w.Write(JSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
