package watch

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fanotify watches whole filesystems: one FAN_MARK_FILESYSTEM mark per
// filesystem that holds a root, with no per-directory watches to add,
// count or lose. Events name the parent directory by file handle and the
// entry by name (FAN_REPORT_DFID_NAME); the handle is turned back into a
// path with open_by_handle_at, and events outside the roots are dropped.
type fanotify struct {
	f     *os.File
	roots []string
	// mountFD holds, per filesystem id, a descriptor on that filesystem
	// for open_by_handle_at.
	mountFD map[[8]byte]int
	// dirs remembers which path a directory handle named; a directory
	// that moves or goes away clears it, since paths below it change.
	dirs map[string]string
	fn   func([]Event)
	done chan struct{}
}

const fanMask = unix.FAN_CREATE | unix.FAN_DELETE | unix.FAN_MOVED_FROM | unix.FAN_MOVED_TO |
	unix.FAN_MODIFY | unix.FAN_ATTRIB | unix.FAN_CLOSE_WRITE | unix.FAN_ONDIR

// renameMask adds FAN_RENAME (Linux 5.17): one event naming a renamed
// entry's old and new place, reported as Moved. A kernel without it gets
// the mark without it.
const renameMask = fanMask | unix.FAN_RENAME

// maxDirCache bounds the handle-to-path cache; a busy filesystem outside
// the roots could otherwise grow it without end.
const maxDirCache = 8192

func startFanotify(roots []string, _ Options, fn func([]Event)) (*Watcher, error) {
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK|unix.FAN_REPORT_DFID_NAME, unix.O_RDONLY|unix.O_LARGEFILE)
	if err != nil {
		return nil, fmt.Errorf("fanotify: %w", err)
	}
	w := &fanotify{roots: roots, mountFD: map[[8]byte]int{}, dirs: map[string]string{}, fn: fn, done: make(chan struct{})}
	closeAll := func() {
		unix.Close(fd)
		for _, m := range w.mountFD {
			unix.Close(m)
		}
	}
	for _, r := range roots {
		err := unix.FanotifyMark(fd, unix.FAN_MARK_ADD|unix.FAN_MARK_FILESYSTEM, renameMask, unix.AT_FDCWD, r)
		if err == unix.EINVAL {
			err = unix.FanotifyMark(fd, unix.FAN_MARK_ADD|unix.FAN_MARK_FILESYSTEM, fanMask, unix.AT_FDCWD, r)
		}
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("fanotify mark %s: %w", r, err)
		}
		if err := w.addMount(r); err != nil {
			closeAll()
			return nil, err
		}
	}
	w.f = os.NewFile(uintptr(fd), "fanotify") // non-blocking: Close wakes a pending Read
	go w.loop()
	return &Watcher{backend: Fanotify, stop: func() error {
		err := w.f.Close()
		<-w.done
		for _, m := range w.mountFD {
			unix.Close(m)
		}
		return err
	}}, nil
}

// addMount keeps a descriptor for root's filesystem and proves that its
// handles can be opened again: some filesystems (an overlayfs without
// index) report handles that open_by_handle_at cannot decode, and a watch
// whose events cannot be placed is no watch.
func (w *fanotify) addMount(root string) error {
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, root, 0)
	if err != nil {
		return fmt.Errorf("fanotify: file handles of %s: %w", root, err)
	}
	mfd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(mfd, &st); err != nil {
		unix.Close(mfd)
		return err
	}
	fsid := *(*[8]byte)(unsafe.Pointer(&st.Fsid))
	if _, ok := w.mountFD[fsid]; ok {
		unix.Close(mfd)
		return nil
	}
	w.mountFD[fsid] = mfd
	if _, err := w.resolve(fsid, h.Type(), h.Bytes()); err != nil {
		return fmt.Errorf("fanotify: handles of %s cannot be opened again: %w", root, err)
	}
	return nil
}

func (w *fanotify) loop() {
	defer close(w.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return // closed
		}
		if evs := w.parse(buf[:n]); len(evs) > 0 {
			w.fn(evs)
		}
	}
}

const metaLen = int(unsafe.Sizeof(unix.FanotifyEventMetadata{}))

// parse decodes one read's worth of events.
func (w *fanotify) parse(b []byte) []Event {
	var out []Event
	for len(b) >= metaLen {
		md := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&b[0]))
		n := int(md.Event_len)
		if n < metaLen || n > len(b) {
			break
		}
		if md.Fd >= 0 {
			unix.Close(int(md.Fd)) // not sent with FID reporting; never leak one
		}
		info := b[md.Metadata_len:n]
		if md.Mask&unix.FAN_Q_OVERFLOW != 0 {
			w.dirs = map[string]string{}
			out = append(out, Event{Op: Lost})
		} else if md.Mask&unix.FAN_RENAME != 0 {
			// Its own event, with the old and the new place and nothing
			// else; the same rename's MOVED_FROM and MOVED_TO follow.
			fromDir, fromName, ok := w.place(info, unix.FAN_EVENT_INFO_TYPE_OLD_DFID_NAME)
			if dir, name, ok2 := w.place(info, unix.FAN_EVENT_INFO_TYPE_NEW_DFID_NAME); ok && ok2 {
				out = append(out, Event{Op: Moved, Dir: dir, Name: name, FromDir: fromDir, FromName: fromName})
			}
		} else if dir, name, ok := w.place(info, unix.FAN_EVENT_INFO_TYPE_DFID_NAME); ok {
			out = appendOps(out, md.Mask, dir, name)
			if md.Mask&unix.FAN_ONDIR != 0 && md.Mask&(unix.FAN_MOVED_FROM|unix.FAN_DELETE) != 0 {
				w.dirs = map[string]string{}
			}
		}
		b = b[n:]
	}
	return out
}

// appendOps adds one event per kind of change in mask. The kernel merges
// events on one entry, so a single record may say created and modified.
func appendOps(out []Event, mask uint64, dir, name string) []Event {
	if mask&(unix.FAN_DELETE|unix.FAN_MOVED_FROM) != 0 {
		out = append(out, Event{Op: Removed, Dir: dir, Name: name})
	}
	if mask&(unix.FAN_CREATE|unix.FAN_MOVED_TO) != 0 {
		out = append(out, Event{Op: Added, Dir: dir, Name: name})
	}
	if mask&(unix.FAN_MODIFY|unix.FAN_ATTRIB|unix.FAN_CLOSE_WRITE) != 0 {
		out = append(out, Event{Op: Changed, Dir: dir, Name: name})
	}
	return out
}

// place finds the directory and name of an event from its info record
// of type want.
func (w *fanotify) place(info []byte, want uint8) (dir, name string, ok bool) {
	for len(info) >= 4 {
		typ, n := info[0], int(binary.NativeEndian.Uint16(info[2:4]))
		if n < 4 || n > len(info) {
			return "", "", false
		}
		rec := info[:n]
		info = info[n:]
		// header(4) fsid(8) handle_bytes(4) handle_type(4) f_handle[] name\0
		if typ != want || len(rec) < 20 {
			continue
		}
		var fsid [8]byte
		copy(fsid[:], rec[4:12])
		hlen := int(binary.NativeEndian.Uint32(rec[12:16]))
		htype := int32(binary.NativeEndian.Uint32(rec[16:20]))
		if 20+hlen > len(rec) {
			return "", "", false
		}
		handle := rec[20 : 20+hlen]
		name = string(rec[20+hlen:])
		if i := strings.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		dir, err := w.resolve(fsid, htype, handle)
		if err != nil || dir == "" || name == "" || name == "." {
			return "", "", false
		}
		return dir, name, true
	}
	return "", "", false
}

// resolve turns a directory handle into its path now, or "" when it lies
// outside the roots.
func (w *fanotify) resolve(fsid [8]byte, htype int32, handle []byte) (string, error) {
	key := string(fsid[:]) + string(handle)
	if p, ok := w.dirs[key]; ok {
		return p, nil
	}
	mfd, ok := w.mountFD[fsid]
	if !ok {
		return "", nil // a filesystem no root is on
	}
	fd, err := unix.OpenByHandleAt(mfd, unix.NewFileHandle(htype, handle), unix.O_PATH|unix.O_CLOEXEC)
	if err != nil {
		return "", err // gone already: nothing of it can be cached
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd), buf)
	unix.Close(fd)
	if err != nil {
		return "", err
	}
	p := string(buf[:n])
	if strings.HasSuffix(p, " (deleted)") || !inside(w.roots, p) {
		p = ""
	}
	if len(w.dirs) >= maxDirCache {
		w.dirs = map[string]string{}
	}
	w.dirs[key] = p
	return p, nil
}
