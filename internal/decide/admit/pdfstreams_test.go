package admit

import (
	"bytes"
	"compress/zlib"
	"math/rand/v2"
	"strings"
	"testing"
)

func zlibOf(b []byte) []byte {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(b)
	w.Close()
	return z.Bytes()
}

func streamPDF(bodies ...[]byte) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	for i, body := range bodies {
		b.WriteString(strings.Repeat("x", i) + "1 0 obj\n<< /Filter /FlateDecode >>\nstream\n")
		b.Write(body)
		b.WriteString("\nendstream\nendobj\n")
	}
	return b.Bytes()
}

var testKey = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + strings.Repeat("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n", 5) + "-----END OPENSSH PRIVATE KEY-----\n"

// A stream inflating past what is held whole is searched as it inflates:
// a key at its end is found; a large image's pixels are not refused; a
// PDF whose streams inflate past the budget is refused as unreadable.
func TestStreamSearchLargeLayers(t *testing.T) {
	t.Parallel()
	var d Decider
	big := append(bytes.Repeat([]byte{0}, maxStreamBytes+3<<20), testKey...)
	in, err := d.streamFinding(streamPDF(zlibOf([]byte("q Q")), zlibOf(big)), nil, nil)
	if err != nil || in == nil || in.Why != insideDocKey {
		t.Fatalf("a key past the held bytes: %+v %v", in, err)
	}
	pix := make([]byte, maxStreamBytes+1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range pix {
		pix[i] = byte(r.Uint32())
	}
	if in, err := d.streamFinding(streamPDF(zlibOf(pix)), nil, nil); err != nil || in != nil {
		t.Fatalf("a large image: %+v %v", in, err)
	}
	s := &streamSearch{budget: 4 << 20}
	if in, err := s.layers(zlibOf(bytes.Repeat([]byte{0}, 8<<20)), 0); err != nil || in == nil || in.Why != insideDocUnreadable {
		t.Fatalf("past the budget: %+v %v", in, err)
	}
	// Layers: hex inside flate inside flate.
	hexed := []byte(strings.ToUpper(strings.TrimSpace(hexOf(testKey))) + ">")
	if in, err := d.streamFinding(streamPDF(zlibOf(zlibOf(hexed))), nil, nil); err != nil || in == nil || in.Why != insideDocKey {
		t.Fatalf("hex in flate in flate: %+v %v", in, err)
	}
}

func hexOf(s string) string {
	const digits = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(digits[s[i]>>4])
		b.WriteByte(digits[s[i]&15])
		if i%32 == 31 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}
