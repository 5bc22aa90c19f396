package lines

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Render writes one line as shown to the agent: "N: text", or with
// anchors "N#hh: text", with the clamped-line marker when it was cut, and
// a newline.
func Render(b *strings.Builder, l Line, maxLineChars int, anchors bool) {
	b.WriteString(strconv.FormatInt(l.N, 10))
	if anchors {
		b.WriteByte('#')
		if l.Truncated {
			b.WriteString(NoAnchor) // its full text was not seen: no anchor
		} else {
			b.WriteString(Anchor(l.Text))
		}
	}
	b.WriteString(": ")
	b.WriteString(Visible(l.Text))
	if l.Truncated {
		b.WriteString(truncMarker(maxLineChars))
	}
	b.WriteByte('\n')
}

// RenderedSize is the number of bytes Render writes for l.
func RenderedSize(l Line, maxLineChars int, anchors bool) int {
	n := len(strconv.FormatInt(l.N, 10)) + 2 + len(Visible(l.Text)) + 1
	if anchors {
		n += 1 + AnchorLen
	}
	if l.Truncated {
		n += len(truncMarker(maxLineChars))
	}
	return n
}

// Visible returns text with every control character but the tab shown as a
// visible stand-in, so no byte of a file reaches the agent's terminal as an
// escape sequence: C0 controls and DEL as their Unicode control pictures
// (ESC is ␛), C1 controls as \u0080-style escapes. Text without any comes
// back as it is, at the cost of one scan.
func Visible(text string) string {
	clean := true
	for i := 0; i < len(text); i++ {
		if c := text[i]; (c < 0x20 && c != '\t') || c == 0x7f || c == 0xc2 {
			clean = false
			break
		}
	}
	if clean {
		return text
	}
	var b strings.Builder
	for _, r := range text {
		switch {
		case r == '\t':
			b.WriteRune(r)
		case r < 0x20:
			b.WriteRune(0x2400 + r)
		case r == 0x7f:
			b.WriteRune(0x2421)
		case r >= 0x80 && r <= 0x9f:
			b.WriteString(fmt.Sprintf("\\u%04x", r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// AnchorLen is the length of a line's anchor.
const AnchorLen = 2

// NoAnchor stands in for the anchor of a clamped line.
const NoAnchor = "--"

// Anchor is a line's short content hash: the first byte of the sha256 of
// its text, in hex. It tells an edit which line the agent saw; the
// journal, not the anchor, is what proves the line is unchanged.
func Anchor(text string) string {
	s := sha256.Sum256([]byte(text))
	return hex.EncodeToString(s[:1])
}

func truncMarker(maxLineChars int) string {
	return "... (line truncated to " + strconv.Itoa(maxLineChars) + " chars)"
}

// LineOf makes the shown form of line n of a whole file, clamped as the
// scanner clamps.
func LineOf(n int64, text string, maxLineChars int) Line {
	t, cut := clamp([]byte(text), maxLineChars, false)
	return Line{N: n, Text: t, Truncated: cut}
}
