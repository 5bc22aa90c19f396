package mount

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/fsguard/fsguard/internal/testenv"
)

// TestOpenlessListings drives openless over go-fuse's real node bridge (a
// loopback of a temporary tree), as the kernel would after OPENDIR said
// ENOSYS: listings read in pieces, abandoned midway, resumed by offset on a
// fresh handle, and directories forgotten while a listing of them is held.
// The bridge panics on a handle of a node it has dropped: a held listing
// released after its node's FORGET would end the daemon.
func TestOpenlessListings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const dirs, files = maxDirReads + 20, 30
	for d := range dirs {
		for f := range files {
			p := filepath.Join(dir, fmt.Sprintf("d%03d", d), fmt.Sprintf("file-%02d", f))
			testenv.Must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			testenv.Must(t, os.WriteFile(p, nil, 0o644))
		}
	}
	root, err := fs.NewLoopbackRoot(dir)
	testenv.Must(t, err)
	o := newOpenless(fs.NewNodeFS(root, &fs.Options{}))
	// A kernel without FUSE_NO_OPENDIR_SUPPORT gets a handle, and lists
	// through it.
	var opened fuse.OpenOut
	if st := o.OpenDir(nil, &fuse.OpenIn{InHeader: fuse.InHeader{NodeId: 1}}, &opened); st != fuse.OK || opened.Fh == 0 {
		t.Fatalf("OPENDIR from an older kernel: %v, handle %d", st, opened.Fh)
	}
	top := fuse.NewDirEntryList(make([]byte, 1<<16), 0)
	if st := o.ReadDir(nil, &fuse.ReadIn{InHeader: fuse.InHeader{NodeId: 1}, Fh: opened.Fh}, top); st != fuse.OK || len(direntNames(top)) < dirs {
		t.Fatalf("READDIR through the older kernel's handle: %v, %d names", st, len(direntNames(top)))
	}
	o.ReleaseDir(&fuse.ReleaseIn{InHeader: fuse.InHeader{NodeId: 1}, Fh: opened.Fh})
	o.on.Store(true) // as Init does for a kernel that offers it
	if st := o.OpenDir(nil, &fuse.OpenIn{}, &fuse.OpenOut{}); st != fuse.ENOSYS {
		t.Fatalf("OPENDIR: %v, want ENOSYS (the kernel then stops sending it)", st)
	}
	node := func(name string) uint64 {
		var out fuse.EntryOut
		if st := o.Lookup(nil, &fuse.InHeader{NodeId: 1}, name, &out); st != fuse.OK {
			t.Fatalf("lookup %s: %v", name, st)
		}
		return out.NodeId
	}
	// read asks for replies of buf bytes from off, as READDIR does, until
	// the end if all is set; it returns the names and the next offset.
	read := func(id, off uint64, buf int, all bool) (names []string, next uint64) {
		for {
			out := fuse.NewDirEntryList(make([]byte, buf), off)
			if st := o.ReadDir(nil, &fuse.ReadIn{InHeader: fuse.InHeader{NodeId: id}, Offset: off}, out); st != fuse.OK {
				t.Fatalf("readdir n%d at %d: %v", id, off, st)
			}
			if out.Offset == off {
				return names, off
			}
			for _, n := range direntNames(out) {
				if n != "." && n != ".." {
					names = append(names, n)
				}
			}
			off = out.Offset
			if !all {
				return names, off
			}
		}
	}
	want := func(d int) []string {
		ents, err := os.ReadDir(filepath.Join(dir, fmt.Sprintf("d%03d", d)))
		testenv.Must(t, err)
		var names []string // sorted by name
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}

	ids := make([]uint64, dirs)
	for d := range dirs {
		ids[d] = node(fmt.Sprintf("d%03d", d))
	}
	// Every listing read in part and left: each is held, up to the bound.
	part := make([][]string, dirs)
	next := make([]uint64, dirs)
	for d := range dirs {
		part[d], next[d] = read(ids[d], 0, 200, false)
		if len(part[d]) == 0 || len(part[d]) >= files {
			t.Fatalf("d%03d: a 200-byte reply held %d names", d, len(part[d]))
		}
		if d%7 == 0 {
			o.Forget(ids[d], 1) // the kernel dropped it, the listing held
		}
	}
	o.mu.Lock()
	held := len(o.dirs)
	o.mu.Unlock()
	if held > maxDirReads {
		t.Errorf("%d abandoned listings held, bound %d", held, maxDirReads)
	}
	// A listing resumed where it stopped, whether its handle was kept or
	// evicted, gives the rest of the directory; read from the start it
	// gives all of it; and either is let go at its end.
	for d := range dirs {
		if d%7 == 0 {
			continue
		}
		rest, _ := read(ids[d], next[d], 4096, true)
		if got := slices.Sorted(slices.Values(append(part[d], rest...))); !slices.Equal(got, want(d)) {
			t.Errorf("d%03d resumed lists %q", d, got)
		}
		if got, _ := read(ids[d], 0, 4096, true); !slices.Equal(slices.Sorted(slices.Values(got)), want(d)) {
			t.Errorf("d%03d lists %q", d, got)
		}
	}
	o.mu.Lock()
	held = len(o.dirs)
	o.mu.Unlock()
	if held != 0 {
		t.Errorf("%d listings held after every one was read to its end", held)
	}
}

// direntNames decodes the names in a READDIR reply.
func direntNames(l *fuse.DirEntryList) []string {
	var names []string
	b := l.Bytes()
	for len(b) >= 24 {
		// struct fuse_dirent: ino u64, off u64, namelen u32, type u32,
		// name, padded to 8 bytes.
		n := int(uint32(b[16]) | uint32(b[17])<<8 | uint32(b[18])<<16 | uint32(b[19])<<24)
		names = append(names, string(b[24:24+n]))
		b = b[(24+n+7)&^7:]
	}
	return names
}

// TestOpenlessConcurrentReaders: many readers list the same directories at
// once, each from the start to its end in small replies, with more
// directories than listings are held (so some are evicted under them):
// each reader gets each name once, and the bridge never meets a handle
// that was released (it panics on one).
func TestOpenlessConcurrentReaders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const dirs, files = maxDirReads + 36, 30
	var want []string
	for f := range files {
		want = append(want, fmt.Sprintf("file-%02d", f))
	}
	for d := range dirs {
		for _, name := range want {
			p := filepath.Join(dir, fmt.Sprintf("d%03d", d), name)
			testenv.Must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			testenv.Must(t, os.WriteFile(p, nil, 0o644))
		}
	}
	root, err := fs.NewLoopbackRoot(dir)
	testenv.Must(t, err)
	o := newOpenless(fs.NewNodeFS(root, &fs.Options{}))
	o.on.Store(true)
	ids := make([]uint64, dirs)
	for d := range dirs {
		var out fuse.EntryOut
		if st := o.Lookup(nil, &fuse.InHeader{NodeId: 1}, fmt.Sprintf("d%03d", d), &out); st != fuse.OK {
			t.Fatalf("lookup d%03d: %v", d, st)
		}
		ids[d] = out.NodeId
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 150 {
				d := (w*31 + i*7) % dirs
				var names []string
				for off := uint64(0); ; {
					out := fuse.NewDirEntryList(make([]byte, 300), off)
					if st := o.ReadDir(nil, &fuse.ReadIn{InHeader: fuse.InHeader{NodeId: ids[d]}, Offset: off}, out); st != fuse.OK {
						t.Errorf("readdir d%03d at %d: %v", d, off, st)
						return
					}
					if out.Offset == off {
						break
					}
					for _, n := range direntNames(out) {
						if n != "." && n != ".." {
							names = append(names, n)
						}
					}
					off = out.Offset
				}
				if slices.Sort(names); !slices.Equal(names, want) {
					t.Errorf("reader %d, d%03d: %d names, %q", w, d, len(names), names)
					return
				}
			}
		})
	}
	wg.Wait()
}
