// Command fusefloor mounts an in-memory copy of a tree: the least work any
// FUSE server can do per request on this machine, so benchmarks can tell
// what a cold command costs in FUSE round trips alone from what a server
// adds to them.
//
//	go run ./scripts/fusefloor TREE MOUNTPOINT
//
// It reads the whole tree (names, attributes, symlink targets and every
// regular file's bytes) into memory before it mounts, then answers each
// request from memory without a system call: no admission, no backing
// file, no watch. It asks the kernel for what fsguard's kernel open mode
// gets (no OPEN or OPENDIR, READDIRPLUS, kept listings, cached symlinks,
// entries and attributes for an hour, 1 MiB READs), so a cold command on
// it is the floor under fsguard's figure for the same command. It prints
// "Mounted!" when it serves, and unmounts on SIGTERM or SIGINT.
//
// Like fsguard's listings, its READDIRPLUS replies are followed by a push
// of each listed regular file of at most maxPush bytes into the kernel's
// page cache (FUSE_NOTIFY_STORE), so a reader of a listed file sends no
// READ; -push=false leaves every read to a READ.
//
// -splice keeps no file's bytes in memory: a READ is spliced from the
// backing file (opened at the first READ of each, and kept), as fsguard
// answers the READs of an admitted file in kernel open mode. It is the
// floor for a large first read, whose bytes must cross the daemon when
// the kernel is never asked to open (no passthrough); a push reads its
// file then.
//
// A benchmark tool, not part of fsguard: it serves the copy to anyone and
// never sees a change made to the tree after it started.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// maxRead is fsguard's READ size (mount.maxRead): the kernel reads ahead
// as far as one READ reaches once read_ahead_kb is raised to it.
const maxRead = 1<<20 - 8<<10

const timeout = time.Hour

// maxPush is fsguard's largest push (warm.MaxPush).
const maxPush = 128 << 10

var (
	push   = flag.Bool("push", true, "push each listed file of at most 128 KiB into the page cache after its listing")
	splice = flag.Bool("splice", false, "answer READs by splice from the backing files instead of from a copy in memory")
	other  = flag.Bool("allow-other", false, "let other users use the mount (benchmount -as)")
)

// node is one file of the copy; its index in floor.nodes is its node ID.
type node struct {
	attr     fuse.Attr
	data     []byte       // a regular file's bytes (none with -splice), a symlink's target
	path     string       // the backing file (-splice)
	fd       atomic.Int64 // its descriptor once opened, plus one (-splice)
	names    []string
	children map[string]uint64 // a directory's entries by name
}

type floor struct {
	fuse.RawFileSystem
	nodes  []*node // nodes[1] is the root (FUSE_ROOT_ID); nodes[0] is unused
	srv    *fuse.Server
	listed chan []uint64 // the files of each READDIRPLUS reply, to push

	// What it was asked and did, printed at exit.
	lookups, listings, reads, pushed, retried atomic.Int64
}

func main() {
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: fusefloor [-push=false] [-splice] TREE MOUNTPOINT")
		os.Exit(2)
	}
	tree, mp := flag.Arg(0), flag.Arg(1)
	f := &floor{RawFileSystem: fuse.NewDefaultRawFileSystem(), nodes: []*node{nil}, listed: make(chan []uint64, 1024)}
	if _, err := f.load(tree); err != nil {
		fatal(err)
	}
	srv, err := fuse.NewServer(f, mp, &fuse.MountOptions{
		FsName:               "fusefloor",
		Name:                 "fusefloor",
		Options:              []string{"default_permissions", "ro"},
		AllowOther:           *other,
		DirectMount:          os.Geteuid() == 0,
		DirectMountFlags:     syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV,
		EnableSymlinkCaching: true,
		MaxBackground:        64,
		MaxWrite:             maxRead,
	})
	if err != nil {
		fatal(err)
	}
	f.srv = srv
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		fatal(err)
	}
	raiseReadahead(mp)
	for range 2 {
		go f.pushes()
	}
	fmt.Println("Mounted!")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	srv.Unmount()
	fmt.Fprintf(os.Stderr, "fusefloor: %d lookups, %d listings, %d reads, %d pushes (%d tried again)\n",
		f.lookups.Load(), f.listings.Load(), f.reads.Load(), f.pushed.Load(), f.retried.Load())
}

// load copies the file at path into the tree, and under it whatever it
// holds; it returns the copy's node ID.
func (f *floor) load(path string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return 0, err
	}
	n := &node{}
	n.attr.FromStat(&st)
	id := uint64(len(f.nodes))
	f.nodes = append(f.nodes, n)
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		if *splice {
			n.path = path
			break
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, err
		}
		n.data = b
	case syscall.S_IFLNK:
		t, err := os.Readlink(path)
		if err != nil {
			return 0, err
		}
		n.data = []byte(t)
	case syscall.S_IFDIR:
		ents, err := os.ReadDir(path)
		if err != nil {
			return 0, err
		}
		n.children = make(map[string]uint64, len(ents))
		for _, e := range ents {
			c, err := f.load(filepath.Join(path, e.Name()))
			if err != nil {
				return 0, err
			}
			n.names = append(n.names, e.Name())
			n.children[e.Name()] = c
		}
	}
	return id, nil
}

func (f *floor) node(id uint64) *node {
	if id == 0 || id >= uint64(len(f.nodes)) {
		return nil
	}
	return f.nodes[id]
}

func (f *floor) entry(id uint64, out *fuse.EntryOut) {
	out.NodeId, out.Generation = id, 1
	out.Attr = f.nodes[id].attr
	out.SetEntryTimeout(timeout)
	out.SetAttrTimeout(timeout)
}

func (f *floor) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	f.lookups.Add(1)
	d := f.node(h.NodeId)
	if d == nil || d.children == nil {
		return fuse.ENOTDIR
	}
	c, ok := d.children[name]
	if !ok {
		out.SetEntryTimeout(timeout) // a negative entry, cached
		return fuse.ENOENT
	}
	f.entry(c, out)
	return fuse.OK
}

func (f *floor) GetAttr(_ <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	n := f.node(in.NodeId)
	if n == nil {
		return fuse.ENOENT
	}
	out.Attr = n.attr
	out.SetTimeout(timeout)
	return fuse.OK
}

// Open and OpenDir answer ENOSYS: the kernel then opens without asking,
// and keeps pages and listings (fsguard's kernel open mode).
func (f *floor) Open(<-chan struct{}, *fuse.OpenIn, *fuse.OpenOut) fuse.Status    { return fuse.ENOSYS }
func (f *floor) OpenDir(<-chan struct{}, *fuse.OpenIn, *fuse.OpenOut) fuse.Status { return fuse.ENOSYS }

func (f *floor) Read(_ <-chan struct{}, in *fuse.ReadIn, _ []byte) (fuse.ReadResult, fuse.Status) {
	f.reads.Add(1)
	n := f.node(in.NodeId)
	if n == nil {
		return nil, fuse.ENOENT
	}
	if n.path != "" {
		fd := n.fd.Load() - 1
		if fd < 0 {
			nfd, err := syscall.Open(n.path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
			if err != nil {
				return nil, fuse.ToStatus(err)
			}
			if !n.fd.CompareAndSwap(0, int64(nfd)+1) {
				syscall.Close(nfd) // another READ opened it first
			}
			fd = n.fd.Load() - 1
		}
		return fuse.ReadResultFd(uintptr(fd), int64(in.Offset), int(in.Size)), fuse.OK
	}
	lo := min(int(in.Offset), len(n.data))
	hi := min(lo+int(in.Size), len(n.data))
	return fuse.ReadResultData(n.data[lo:hi]), fuse.OK
}

func (f *floor) Readlink(_ <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	n := f.node(h.NodeId)
	if n == nil {
		return nil, fuse.ENOENT
	}
	return n.data, fuse.OK
}

func (f *floor) ReadDir(_ <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return f.list(in, out, false)
}

func (f *floor) ReadDirPlus(_ <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return f.list(in, out, true)
}

// list answers a listing from offset in.Offset: the offset after an entry
// is its index plus one.
func (f *floor) list(in *fuse.ReadIn, out *fuse.DirEntryList, plus bool) fuse.Status {
	d := f.node(in.NodeId)
	if d == nil || d.children == nil {
		return fuse.ENOTDIR
	}
	f.listings.Add(1)
	var files []uint64
	defer func() {
		if len(files) > 0 {
			f.listed <- files
		}
	}()
	for i := int(in.Offset); i < len(d.names); i++ {
		c := d.children[d.names[i]]
		e := fuse.DirEntry{Name: d.names[i], Ino: f.nodes[c].attr.Ino, Mode: f.nodes[c].attr.Mode, Off: uint64(i + 1)}
		if !plus {
			if !out.AddDirEntry(e) {
				break
			}
			continue
		}
		eo := out.AddDirLookupEntry(e)
		if eo == nil {
			break
		}
		f.entry(c, eo)
		if a := f.nodes[c].attr; *push && a.Mode&syscall.S_IFMT == syscall.S_IFREG && a.Size > 0 && a.Size <= maxPush {
			files = append(files, c)
		}
	}
	return fuse.OK
}

// pushes stores the listed files' bytes in the kernel's page cache. The
// kernel knows a listed node only once it has taken the listing's reply
// in, which may be after the push: that push is tried again, as fsguard's
// are, for up to a second.
func (f *floor) pushes() {
	for files := range f.listed {
		for _, id := range files {
			data := f.nodes[id].data
			if p := f.nodes[id].path; p != "" {
				data, _ = os.ReadFile(p)
			}
			for delay, waited := 100*time.Microsecond, time.Duration(0); waited < time.Second; delay = min(2*delay, 50*time.Millisecond) {
				if f.srv.InodeNotifyStoreCache(id, 0, data) != fuse.ENOENT {
					f.pushed.Add(1)
					break
				}
				f.retried.Add(1)
				time.Sleep(delay)
				waited += delay
			}
		}
	}
}

func (f *floor) StatFs(_ <-chan struct{}, _ *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	out.Bsize, out.NameLen = 4096, 255
	return fuse.OK
}

// raiseReadahead sets the mount's readahead to one READ, as fsguard does.
func raiseReadahead(mp string) {
	var st syscall.Stat_t
	if syscall.Stat(mp, &st) != nil {
		return
	}
	dev := strconv.Itoa(int(st.Dev>>8&0xfff)) + ":" + strconv.Itoa(int(st.Dev&0xff|st.Dev>>12&0xfff00))
	os.WriteFile("/sys/class/bdi/"+dev+"/read_ahead_kb", []byte(strconv.Itoa(maxRead>>10)), 0)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "fusefloor:", err)
	os.Exit(1)
}
