package lines

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// reference splits content the slow, obvious way.
func reference(content []byte, skipBOM bool) []string {
	if len(content) == 0 {
		return nil
	}
	if skipBOM {
		content = bytes.TrimPrefix(content, []byte{0xEF, 0xBB, 0xBF})
	}
	var lines []string
	start := 0
	for i := 0; i < len(content); i++ {
		switch content[i] {
		case '\n':
			lines = append(lines, string(content[start:i]))
			start = i + 1
		case '\r':
			lines = append(lines, string(content[start:i]))
			if i+1 < len(content) && content[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	if start < len(content) {
		lines = append(lines, string(content[start:]))
	}
	if len(lines) == 0 && skipBOM {
		return nil
	}
	return lines
}

func opts(offset int64, limit int) Options {
	return Options{Offset: offset, Limit: limit, MaxLineChars: 2000, MaxBytes: 51200, MaxScanBytes: 1 << 30}
}

func TestSplitting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		want  []string
		total int64
	}{
		{"empty", "", nil, 0},
		{"one line no newline", "abc", []string{"abc"}, 1},
		{"final newline adds no line", "abc\n", []string{"abc"}, 1},
		{"blank line", "\n", []string{""}, 1},
		{"two blank lines", "\n\n", []string{"", ""}, 2},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}, 2},
		{"bare cr", "a\rb\rc", []string{"a", "b", "c"}, 3},
		{"mixed", "a\r\n\rb\n\r\n", []string{"a", "", "b", ""}, 4},
		{"cr then lf then cr", "\r\n\r", []string{"", ""}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Scan(strings.NewReader(tt.in), opts(1, 100))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range r.Lines {
				got = append(got, l.Text)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) || r.TotalLines != tt.total {
				t.Fatalf("got %q total %d, want %q total %d", got, r.TotalLines, tt.want, tt.total)
			}
			if !r.Complete || r.Sum != sha256.Sum256([]byte(tt.in)) {
				t.Fatalf("complete=%v or hash mismatch", r.Complete)
			}
		})
	}
}

func TestCRLFAcrossChunks(t *testing.T) {
	defer func(n int) { chunkSize = n }(chunkSize)
	for _, cs := range []int{1, 2, 3, 5, 7} {
		chunkSize = cs
		in := "ab\r\ncd\r\r\nef\rg\n"
		r, err := Scan(strings.NewReader(in), opts(1, 100))
		if err != nil {
			t.Fatal(err)
		}
		if r.TotalLines != 5 || len(r.Lines) != 5 || r.Lines[4].Text != "g" || r.Lines[2].Text != "" {
			t.Fatalf("chunk %d: %+v", cs, r)
		}
	}
}

func TestWindowAndCuts(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	in := b.String()
	tests := []struct {
		offset     int64
		limit      int
		maxBytes   int
		first, end int64
		cut        Cut
	}{
		{1, 100, 51200, 1, 10, CutNone},
		{1, 3, 51200, 1, 3, CutLines},
		{8, 3, 51200, 8, 10, CutNone},
		{10, 1, 51200, 10, 10, CutNone},
		{1, 100, 30, 1, 3, CutBytes}, // "1: line 1\n" is 10 bytes
		{11, 5, 51200, 0, 0, CutNone},
	}
	for _, tt := range tests {
		o := opts(tt.offset, tt.limit)
		o.MaxBytes = tt.maxBytes
		r, err := Scan(strings.NewReader(in), o)
		if err != nil {
			t.Fatal(err)
		}
		var first, end int64
		if len(r.Lines) > 0 {
			first, end = r.Lines[0].N, r.Lines[len(r.Lines)-1].N
		}
		if first != tt.first || end != tt.end || r.Cut != tt.cut || r.TotalLines != 10 {
			t.Errorf("offset %d limit %d bytes %d: got %d-%d cut %q total %d", tt.offset, tt.limit, tt.maxBytes, first, end, r.Cut, r.TotalLines)
		}
	}
}

func TestClampLongLine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 5000) + "\nshort\n"
	o := opts(1, 10)
	o.MaxLineChars = 100
	r, err := Scan(strings.NewReader(long), o)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Lines[0].Truncated || utf8.RuneCountInString(r.Lines[0].Text) != 100 || r.Lines[1].Text != "short" || r.Lines[1].Truncated {
		t.Fatalf("clamp: %+v", r.Lines)
	}
	// Exactly max chars is not truncated.
	r, _ = Scan(strings.NewReader(strings.Repeat("x", 100)), o)
	if r.Lines[0].Truncated {
		t.Fatal("a line of exactly max chars was marked truncated")
	}
}

func TestInvalidUTF8(t *testing.T) {
	defer func(n int) { chunkSize = n }(chunkSize)
	chunkSize = 7
	in := []byte("héllo wörld\nok\n")
	in = append(in, 0xff)
	in = append(in, []byte("\nmore\n")...)
	o := opts(1, 10)
	r, err := Scan(bytes.NewReader(in), o)
	if err != nil {
		t.Fatal(err)
	}
	if r.BadUTF8At != int64(bytes.IndexByte(in, 0xff)) {
		t.Fatalf("BadUTF8At = %d", r.BadUTF8At)
	}
	// A rune cut by the end of file is invalid; one cut by a chunk is not.
	r, _ = Scan(bytes.NewReader([]byte("abcdeé")), o)
	if r.BadUTF8At != -1 {
		t.Fatalf("split rune reported at %d", r.BadUTF8At)
	}
	r, _ = Scan(bytes.NewReader([]byte("abcdef\xc3")), o)
	if r.BadUTF8At != 6 {
		t.Fatalf("truncated rune at EOF: %d", r.BadUTF8At)
	}
}

func TestScanLimit(t *testing.T) {
	t.Parallel()
	in := strings.Repeat("abc\n", 100)
	o := opts(1, 2)
	o.MaxScanBytes = 40
	r, _ := Scan(strings.NewReader(in), o)
	if r.Complete || r.Bytes != 40 || r.TotalLines != 10 {
		t.Fatalf("limited scan: complete=%v bytes=%d total=%d", r.Complete, r.Bytes, r.TotalLines)
	}
	o.MaxScanBytes = int64(len(in))
	r, _ = Scan(strings.NewReader(in), o)
	if !r.Complete || r.TotalLines != 100 {
		t.Fatalf("file of exactly the limit: complete=%v total=%d", r.Complete, r.TotalLines)
	}
}

func TestBOM(t *testing.T) {
	t.Parallel()
	o := opts(1, 10)
	o.SkipBOM = true
	r, _ := Scan(strings.NewReader("\uFEFFfirst\nsecond"), o)
	if r.Lines[0].Text != "first" || r.TotalLines != 2 {
		t.Fatalf("BOM: %+v", r.Lines)
	}
}

// FuzzScan checks the scanner against the reference splitter for any
// content, chunking and window.
func FuzzScan(f *testing.F) {
	f.Add([]byte("a\r\nb\rc\n\n"), uint8(3), uint8(1), uint8(2))
	f.Add([]byte("\r\r\n\n\r"), uint8(1), uint8(2), uint8(1))
	f.Add([]byte("\xef\xbb\xbfé\xff\n"), uint8(2), uint8(1), uint8(9))
	f.Fuzz(func(t *testing.T, in []byte, cs, offset, limit uint8) {
		defer func(n int) { chunkSize = n }(chunkSize)
		chunkSize = int(cs%16) + 1
		o := opts(int64(offset%8)+1, int(limit%8)+1)
		o.MaxLineChars = 16
		ref := reference(in, false)
		r, err := Scan(bytes.NewReader(in), o)
		if err != nil {
			t.Fatal(err)
		}
		if r.TotalLines != int64(len(ref)) {
			t.Fatalf("total %d, reference %d", r.TotalLines, len(ref))
		}
		for i, l := range r.Lines {
			want := ref[int(o.Offset)-1+i]
			if l.N != o.Offset+int64(i) {
				t.Fatalf("line number %d at %d", l.N, i)
			}
			if !strings.HasPrefix(want, l.Text) || (l.Truncated != (len(l.Text) < len(want))) {
				t.Fatalf("line %d: %q (trunc %v), reference %q", l.N, l.Text, l.Truncated, want)
			}
		}
		wantShown := max(0, min(len(ref)-int(o.Offset)+1, o.Limit))
		if len(r.Lines) != wantShown {
			t.Fatalf("shown %d, want %d", len(r.Lines), wantShown)
		}
		if (r.Cut == CutLines) != (len(ref)-int(o.Offset)+1 > o.Limit) {
			t.Fatalf("cut %q with %d lines from offset", r.Cut, len(ref)-int(o.Offset)+1)
		}
		wantBad := int64(-1)
		if !utf8.Valid(in) {
			for i := 0; i < len(in); {
				r, size := utf8.DecodeRune(in[i:])
				if r == utf8.RuneError && size <= 1 {
					wantBad = int64(i)
					break
				}
				i += size
			}
		}
		if r.BadUTF8At != wantBad {
			t.Fatalf("BadUTF8At %d, want %d", r.BadUTF8At, wantBad)
		}
		if r.Sum != sha256.Sum256(in) {
			t.Fatal("hash mismatch")
		}
	})
}

// TestSizeHintChangesNothingButCost: a scan told the input's size — right,
// too small, too large — gives exactly the result of one told nothing.
func TestSizeHintChangesNothingButCost(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(7))
	for trial := 0; trial < 300; trial++ {
		n := rng.Intn(3 * chunkSize / 2)
		if trial%3 == 0 {
			n = rng.Intn(4096)
		}
		data := make([]byte, n)
		for i := range data {
			data[i] = "ab\n\r é"[rng.Intn(7)]
		}
		o := opts(1+int64(rng.Intn(5)), 1+rng.Intn(50))
		want, _ := Scan(bytes.NewReader(data), o)
		for _, hint := range []int64{int64(n), int64(n)/2 + 1, int64(n) * 2, 1} {
			o.SizeHint = hint
			got, _ := Scan(bytes.NewReader(data), o)
			if got.Sum != want.Sum || got.TotalLines != want.TotalLines || got.Bytes != want.Bytes || len(got.Lines) != len(want.Lines) || got.Complete != want.Complete {
				t.Fatalf("trial %d (%d bytes, hint %d): %+v, want %+v", trial, n, hint, got, want)
			}
		}
	}
}

// TestSmallScansAllocateLittle: a read of a small file no longer costs
// four 256 KiB buffers. Not parallel: it counts this process's allocations.
func TestSmallScansAllocateLittle(t *testing.T) {
	data := bytes.Repeat([]byte("a short line of a small file\n"), 70) // 2 KiB
	o := opts(1, 2000)
	o.SizeHint = int64(len(data))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 100 {
		Scan(bytes.NewReader(data), o)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 100; per > 64<<10 {
		t.Errorf("a 2 KiB scan allocates %d bytes", per)
	}
}
