package roots

import (
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fsguard/fsguard/internal/testenv"
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
		f, err := g.OpenIn(Path{Root: r, Rel: "f.txt", Shown: "f.txt"})
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

// TestClosedFileReadsNothingElse is the hazard of a bare descriptor: a
// File closed (by a decision that gave up, say) while another goroutine
// still holds it, whose number the kernel then hands to the next open —
// of a file that goroutine must never read. Every read through the closed
// File fails with os.ErrClosed, however it asks; and reads racing Close
// (go test -race) read either the file or nothing.
//
// Not parallel: it puts another file at the very number the closed File
// held (dup3), which must not replace a descriptor another test opened.
func TestClosedFileReadsNothingElse(t *testing.T) {
	root := t.TempDir()
	g := guardFor(t, root)
	r := g.Roots()[0]
	testenv.WriteTree(t, root, map[string]string{"a.txt": "the admitted file\n", "key.txt": "another file entirely\n"})
	a, err := g.OpenIn(Path{Root: r, Rel: "a.txt", Shown: "a.txt"})
	if err != nil {
		t.Fatal(err)
	}
	fd := a.Fd()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// Another file at the number a held, as the next open may get it.
	other, err := os.Open(filepath.Join(root, "key.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if int(other.Fd()) != int(fd) { // the open may already have taken it
		if err := unix.Dup3(int(other.Fd()), int(fd), unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(int(fd))
	}
	b := make([]byte, 64)
	if n, err := a.ReadAt(b, 0); err != os.ErrClosed {
		t.Errorf("ReadAt after Close: %d bytes %q, %v; want os.ErrClosed", n, b[:n], err)
	}
	if n, err := a.ReadAtSized(b, 0); err != os.ErrClosed {
		t.Errorf("ReadAtSized after Close: %d bytes %q, %v; want os.ErrClosed", n, b[:n], err)
	}
	if n, err := a.Read(b); err != os.ErrClosed {
		t.Errorf("Read after Close: %d bytes %q, %v; want os.ErrClosed", n, b[:n], err)
	}
	if err := a.Close(); err != os.ErrClosed {
		t.Errorf("a second Close: %v; want os.ErrClosed (it must not close the number again)", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(fd), &st); err != nil {
		t.Errorf("the other file's descriptor was closed by the second Close: %v", err)
	}

	// Reads racing a Close.
	for range 50 {
		f, err := g.OpenIn(Path{Root: r, Rel: "a.txt", Shown: "a.txt"})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				b := make([]byte, 64)
				for range 20 {
					n, err := f.ReadAt(b, 0)
					if err != nil && err != io.EOF && err != os.ErrClosed {
						t.Errorf("a read racing Close: %v", err)
					}
					if n > 0 && string(b[:n]) != "the admitted file\n" {
						t.Errorf("a read racing Close read %q", b[:n])
					}
				}
			})
		}
		f.Close()
		wg.Wait()
	}
}
