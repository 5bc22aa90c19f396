package sniff

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// goCorpus is Go's own sources concatenated, up to 64 MiB: real code
// with no credential in it.
var goCorpus = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	root := filepath.Join(runtime.GOROOT(), "src")
	filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || b.Len() >= 64<<20 {
			return filepath.SkipDir
		}
		if e.Type().IsRegular() && strings.HasSuffix(p, ".go") {
			if data, err := os.ReadFile(p); err == nil {
				b.Write(data)
			}
		}
		return nil
	})
	return b.Bytes()
})

func benchScan(b *testing.B, data []byte) {
	d := defaultDetector(b)
	buf := make([]byte, 1<<20)
	r := bytes.NewReader(data)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := d.Scan(r, int64(len(data)), buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScanGoSources scans real code without candidates.
func BenchmarkScanGoSources(b *testing.B) {
	data := goCorpus()
	if len(data) < 1<<20 {
		b.Skip("no Go sources under GOROOT")
	}
	benchScan(b, data)
}

// BenchmarkScanWorstCase scans text made of near misses: every anchor's
// start, over and over, each failing its rule only at the end.
func BenchmarkScanWorstCase(b *testing.B) {
	var unit bytes.Buffer
	for _, r := range builtin {
		for _, a := range r.anchors {
			unit.WriteString(" " + a)
			if len(a) < 4 {
				unit.WriteString("Abc1")
			}
			unit.WriteString("Abcdefgh123456")
		}
	}
	unit.WriteString(" path pattern https://golang.org/x/y user:pass@ Password=; eyJhbGciOi.eyJ0 AKIA1234 ")
	data := bytes.Repeat(unit.Bytes(), (16<<20)/unit.Len()+1)[:16<<20]
	benchScan(b, data)
}

// BenchmarkScanUTF16 scans Go's sources re-encoded as UTF-16LE.
func BenchmarkScanUTF16(b *testing.B) {
	src := goCorpus()
	if len(src) < 1<<20 {
		b.Skip("no Go sources under GOROOT")
	}
	src = src[:16<<20]
	data := credEncodings["utf16le"](strings.ToValidUTF8(string(src), "?"))
	benchScan(b, data)
}
