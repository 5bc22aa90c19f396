package window

import (
	"crypto/sha256"
	"encoding/hex"
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
	b.WriteString(l.Text)
	if l.Truncated {
		b.WriteString(truncMarker(maxLineChars))
	}
	b.WriteByte('\n')
}

// RenderedSize is the number of bytes Render writes for l.
func RenderedSize(l Line, maxLineChars int, anchors bool) int {
	n := len(strconv.FormatInt(l.N, 10)) + 2 + len(l.Text) + 1
	if anchors {
		n += 1 + AnchorLen
	}
	if l.Truncated {
		n += len(truncMarker(maxLineChars))
	}
	return n
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
