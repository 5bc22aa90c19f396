package window

import (
	"strconv"
	"strings"
)

// Render writes one line as shown to the agent: "N: text", with the
// clamped-line marker when it was cut, and a newline.
func Render(b *strings.Builder, l Line, maxLineChars int) {
	b.WriteString(strconv.FormatInt(l.N, 10))
	b.WriteString(": ")
	b.WriteString(l.Text)
	if l.Truncated {
		b.WriteString(truncMarker(maxLineChars))
	}
	b.WriteByte('\n')
}

// RenderedSize is the number of bytes Render writes for l.
func RenderedSize(l Line, maxLineChars int) int {
	n := len(strconv.FormatInt(l.N, 10)) + 2 + len(l.Text) + 1
	if l.Truncated {
		n += len(truncMarker(maxLineChars))
	}
	return n
}

func truncMarker(maxLineChars int) string {
	return "... (line truncated to " + strconv.Itoa(maxLineChars) + " chars)"
}
