package sniff

import (
	"bytes"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/policy"
)

// TestWindowIsWholeFile: a window read with Margins around a served range
// sees every credential and key overlapping that range as a scan of the
// whole file does, wherever the range falls against them: at, across or
// just past each one's edges, in UTF-8 and UTF-16.
func TestWindowIsWholeFile(t *testing.T) {
	t.Parallel()
	p, err := policy.Default(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDetector(p.Secrets)
	if err != nil {
		t.Fatal(err)
	}
	key := "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n"
	filler := bytes.Repeat([]byte("lorem ipsum dolor "), 4000)
	samples := SampleCredentials(5)
	for i, s := range samples[:min(len(samples), 40)] {
		at := 30000 + 7*i
		data := append(append(append([]byte{}, filler[:at]...), "\nkey = "+s.Value+"\n"...), filler[at:]...)
		in, unit, be := data, 1, false
		if i%5 == 0 {
			in = []byte(utf16Text(string(data)))
			unit, be = Units(in[:4])
		}
		whole := d.Find(in)
		if len(whole) == 0 {
			continue // a family this context does not show
		}
		m := whole[0]
		back, ahead := Margins(unit)
		for _, from := range []int64{m.Off - 4096, m.Off - 1, m.Off, m.Off + int64(m.Keep), m.Off + int64(m.Len) - 1, m.Off + int64(m.Len)} {
			to := from + 4096
			base := max(0, from-back)
			end := min(int64(len(in)), to+ahead)
			found := d.FindInWindow(in[base:end], base, end == int64(len(in)), unit, be)
			if !Covers(found, whole, from, to) || !Covers(whole, found, from, to) {
				t.Errorf("%s (unit %d), range [%d, %d): the window finds %v, the whole file %v", s.Family, unit, from, to, found, whole)
			}
		}
	}
	at := 40000
	data := append(append(append([]byte{}, filler[:at]...), key...), filler[at:]...)
	back, ahead := Margins(1)
	for _, from := range []int64{int64(at) - 4096, int64(at) - 1, int64(at) + 40, int64(at) + int64(len(key)) - 1} {
		to := from + 4096
		base := max(0, from-back)
		end := min(int64(len(data)), to+ahead)
		if !KeyInWindow(data[base:end], base, end == int64(len(data))) {
			t.Errorf("range [%d, %d) of a key at %d: the window finds no key", from, to, at)
		}
		if KeyInWindow(filler[base:min(end, int64(len(filler)))], base, false) {
			t.Errorf("range [%d, %d) of text: the window finds a key", from, to)
		}
	}
}

// TestCovers: masks cover what they fill, and only that.
func TestCovers(t *testing.T) {
	t.Parallel()
	v := []Mask{{Off: 10, Len: 20, Keep: 4}, {Off: 50, Len: 10}}
	for _, c := range []struct {
		found    []Mask
		from, to int64
		want     bool
	}{
		{[]Mask{{Off: 10, Len: 20, Keep: 4}}, 0, 100, true},
		{[]Mask{{Off: 12, Len: 10, Keep: 2}}, 0, 100, true},
		{[]Mask{{Off: 10, Len: 20, Keep: 2}}, 0, 100, false}, // fills bytes 12, 13, which the verdict shows
		{[]Mask{{Off: 40, Len: 15}}, 0, 100, false},
		{[]Mask{{Off: 40, Len: 15}}, 50, 100, true}, // the uncovered part is not served
		{[]Mask{{Off: 25, Len: 30}}, 0, 100, false},
	} {
		if got := Covers(v, c.found, c.from, c.to); got != c.want {
			t.Errorf("Covers(%v, [%d, %d)) = %v, want %v", c.found, c.from, c.to, got, c.want)
		}
	}
}

// BenchmarkWindowCheck is what a READ of 128 KiB of source text adds: a
// key search and a credential search of the range and its margins.
func BenchmarkWindowCheck(b *testing.B) {
	d := defaultDetector(b)
	text := bytes.Repeat([]byte("\tif err := run(ctx, cfg); err != nil {\n\t\treturn fmt.Errorf(\"run: %w\", err)\n\t}\n"), 4000)
	back, ahead := Margins(1)
	win := text[:back+128<<10+ahead]
	b.SetBytes(128 << 10)
	for b.Loop() {
		if KeyInWindow(win, 1<<20, false) || len(d.FindInWindow(win, 1<<20, false, 1, false)) > 0 {
			b.Fatal("found in clean text")
		}
	}
}
