package admit_test

import (
	"crypto/rand"
	"fmt"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/roots"
)

// BenchmarkShownCold is the first listing of a directory of 100 small
// source files: every file is opened and decided (a fresh decider each
// time, so nothing is remembered). It is most of a cold tree walk's time
// in the daemon.
func BenchmarkShownCold(b *testing.B) {
	e := newEnv(&testing.T{}, "")
	for i := range 100 {
		e.write(fmt.Sprintf("d/f%03d.go", i), strings.Repeat(fmt.Sprintf("line of file %d with ordinary words\n", i), 20+i))
	}
	ents, err := e.g.List(e.g.Roots()[0], "d")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		d := admit.New(1 << 16)
		if got := d.Shown(e.g, roots.Path{Root: e.g.Roots()[0], Rel: "d", Shown: "d"}, ents, nil, nil); len(got) != 100 {
			b.Fatalf("shown %d of 100", len(got))
		}
	}
}

// BenchmarkDecideLargeBinary is the first decision of a 32 MiB binary of
// noise (a fresh decider each time): the whole-file key scan, and the
// look at its start for a packing.
func BenchmarkDecideLargeBinary(b *testing.B) {
	e := newEnv(&testing.T{}, "")
	noise := make([]byte, 32<<20)
	rand.Read(noise)
	e.write("big.bin", string(noise))
	b.SetBytes(int64(len(noise)))
	b.ResetTimer()
	for b.Loop() {
		if err := e.decide(admit.New(1<<16), "big.bin"); err != nil {
			b.Fatal(err)
		}
	}
}
