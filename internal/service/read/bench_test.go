package read

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/testenv"
)

// benchFile makes (once, then reuses) a 1 GiB text file of varied lines.
func benchFile(b *testing.B) string {
	b.Helper()
	path := filepath.Join(os.TempDir(), "fsguard-bench", "1gib.txt")
	if fi, err := os.Stat(path); err == nil && fi.Size() == 1<<30 {
		return path
	}
	os.MkdirAll(filepath.Dir(path), 0o755)
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var n int64
	for i := 0; n < 1<<30; i++ {
		line := fmt.Sprintf("%08d func example%d(x int) int { return x * %d } // padding text\n", i, i%1000, i%97)
		if n+int64(len(line)) > 1<<30 {
			line = line[:(1<<30)-n]
		}
		w.WriteString(line)
		n += int64(len(line))
	}
	w.Flush()
	f.Close()
	return path
}

// BenchmarkRefuseFIFO is how long a read of a FIFO, named or reached
// through a link, takes to be refused (NOT_A_FILE): the figure beside
// TestFIFODoesNotBlock, which asserts only that the refusal comes.
func BenchmarkRefuseFIFO(b *testing.B) {
	root := b.TempDir()
	testenv.FIFO(b, filepath.Join(root, "fifo"))
	testenv.Symlinks(b, root, map[string]string{"to-fifo": "fifo"})
	p, err := policy.Default(root)
	if err != nil {
		b.Fatal(err)
	}
	g, err := roots.New(p)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	r := &Reader{Guard: g}
	for _, name := range []string{"fifo", "to-fifo"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := r.Read(Request{Path: name, Cwd: root}); refusal.CodeOf(err) != refusal.NotAFile {
					b.Fatalf("read %s: %v, want %s", name, err, refusal.NotAFile)
				}
			}
		})
	}
}

// BenchmarkRead1GiB compares, in one run on one file, fsguard's read (first
// window; last window) with sha256sum and wc -l. Run it with
// scripts/bench-read.sh; read ns/op ratios, not absolute numbers.
func BenchmarkRead1GiB(b *testing.B) {
	path := benchFile(b)
	p, err := policy.Default(filepath.Dir(path))
	if err != nil {
		b.Fatal(err)
	}
	p.Limits.MaxScanBytes = 2 << 30
	g, err := roots.New(p)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	r := &Reader{Guard: g}
	run := func(b *testing.B, offset int64) {
		b.SetBytes(1 << 30)
		for i := 0; i < b.N; i++ {
			res, err := r.Read(Request{Path: path, Offset: offset, Cwd: "/"})
			if err != nil {
				b.Fatal(err)
			}
			if res.Observation.ContentID == nil {
				b.Fatal("scan did not complete")
			}
		}
	}
	b.Run("fsguard-first-window", func(b *testing.B) { run(b, 1) })
	b.Run("fsguard-last-window", func(b *testing.B) { run(b, 14_000_000) })
	// The hash alone, in Go (SHA-NI): the floor for a hashing pass.
	b.Run("go-sha256", func(b *testing.B) {
		b.SetBytes(1 << 30)
		for i := 0; i < b.N; i++ {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			h := sha256.New()
			io.CopyBuffer(h, f, make([]byte, 256<<10))
			f.Close()
		}
	})
	for _, tool := range [][]string{{"sha256sum", path}, {"wc", "-l", path}} {
		b.Run(tool[0], func(b *testing.B) {
			b.SetBytes(1 << 30)
			for i := 0; i < b.N; i++ {
				if out, err := exec.Command(tool[0], tool[1:]...).CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}
