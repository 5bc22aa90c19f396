package roots

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestReadAtSized: a count that reaches the size the file was opened at
// ends the read; one short of it (the file shrank) reads on to EOF, as
// ReadAt does; a file that grew is read as far as the buffer and the file
// go, never less than ReadAt would give.
func TestReadAtSized(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	g := guardFor(t, root)
	r := g.Roots()[0]
	path := filepath.Join(root, "f.txt")
	open := func(content string) *File {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := g.OpenIn(r, "f.txt", "f.txt")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	read := func(f *File, size int, off int64) (string, error) {
		b := make([]byte, size)
		n, err := f.ReadAtSized(b, off)
		return string(b[:n]), err
	}
	cases := []struct {
		name    string
		then    string // the file's content after the open ("" = unchanged)
		buf     int
		off     int64
		want    string
		wantEOF bool
	}{
		{name: "whole, buffer larger", buf: 64, want: "0123456789"},
		{name: "whole, buffer exact", buf: 10, want: "0123456789"},
		{name: "head", buf: 4, want: "0123"},
		{name: "from an offset", buf: 64, off: 6, want: "6789"},
		{name: "at the end", buf: 8, off: 10, want: "", wantEOF: true},
		{name: "empty buffer", buf: 0, want: ""},
		{name: "grew", then: "0123456789abcdef", buf: 64, want: "0123456789abcdef"},
		{name: "shrank", then: "01234", buf: 64, want: "01234", wantEOF: true},
	}
	for _, c := range cases {
		f := open("0123456789")
		if c.then != "" {
			// In place: the open descriptor sees the new content.
			w, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			w.WriteString(c.then)
			w.Close()
		}
		got, err := read(f, c.buf, c.off)
		if got != c.want || (err == io.EOF) != c.wantEOF || (err != nil && err != io.EOF) {
			t.Errorf("%s: got %q, %v; want %q (EOF %v)", c.name, got, err, c.want, c.wantEOF)
		}
	}
}
