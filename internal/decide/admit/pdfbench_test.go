package admit

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkStreamFinding is the stream search of a PDF of 2000 deflated
// streams of text (about 6 MiB decoded).
func BenchmarkStreamFinding(b *testing.B) {
	var bodies [][]byte
	for i := range 2000 {
		bodies = append(bodies, zlibOf([]byte(strings.Repeat(fmt.Sprintf("BT (line %d of a page) Tj ET\n", i), 100))))
	}
	pdf := streamPDF(bodies...)
	b.SetBytes(int64(len(pdf)))
	var d Decider
	for b.Loop() {
		if in, err := d.streamFinding(pdf, nil, nil); in != nil || err != nil {
			b.Fatal(in, err)
		}
	}
}
