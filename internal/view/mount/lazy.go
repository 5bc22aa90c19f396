package mount

import (
	"context"
	"time"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/refusal"

	"github.com/hanwen/go-fuse/v2/fs"
)

// A file is listed by its name and place; its content is decided at its
// first READ (or open, in daemon mode), by a push, or in the background
// (below). An agent's listing, and a LOOKUP, show a single-link file whose
// verdict is not known yet with its stat, unread (admit.Keep.ByName): a
// walker that reads nothing (find, ls -lR, git status) costs no open, read
// and scan per file. Until its content is decided a file's name and size
// may show; its bytes never do: every way to them (a READ, an open, a
// push: the gate) decides the version first, and masks keep lengths, so
// the size shown is the size served.
//
// A file whose content turns out refused (a key, a packed file not
// looked into) disappears from the view at once (hide): its name and the
// directory's listing are invalidated, so the next LOOKUP, decided from
// the verdict now known, answers as for any hidden name.
//
// The undecided queue holds the files the kernel was shown that way, and
// one worker decides them in the agent's pauses, as the warm walk does its
// own listings: a key an agent listed but never opened leaves the view
// without anyone reading it. A full queue drops the file: it is decided
// when it is read, as before.

// lazyJob is a file shown undecided: name in the directory dir, version id.
type lazyJob struct {
	dir  *fs.Inode
	name string
	id   fileid.Identity
}

// maxUndecided bounds the files waiting for a background decision.
const maxUndecided = 1 << 14

// undecided queues a background decision of the file name in dir, shown
// at version id without a verdict.
func (v *view) undecided(dir *fs.Inode, name string, id fileid.Identity) {
	if v.lazy == nil || !v.warm.On() {
		return
	}
	select {
	case v.lazy <- lazyJob{dir, name, id}:
	default: // decided when read
	}
}

// decideLazily is the worker deciding the files shown undecided, in the
// agent's pauses, until the mount goes.
func (v *view) decideLazily(ctx context.Context) {
	for {
		var j lazyJob
		select {
		case <-ctx.Done():
			return
		case j = <-v.lazy:
		}
		if v.warm.Quiet(ctx) != nil {
			return
		}
		v.decideShown(j)
	}
}

// decideShown decides the content of one file shown undecided, and hides
// it if it is refused. A file that is another version now is left alone:
// the watch tells the kernel of the change, and the new version is
// decided when it is read.
func (v *view) decideShown(j lazyJob) {
	dn, ok := nodeOf(j.dir)
	if !ok {
		return
	}
	g, p, errno := dn.resolve()
	if errno != 0 {
		return
	}
	cp := child(p, j.name)
	f, err := g.OpenIn(cp)
	if err != nil {
		return
	}
	defer f.Close()
	if f.Identity() != j.id {
		return
	}
	if _, err := v.admit.Decide(g, f); denied(err) {
		v.hideName(j.dir, j.name)
	}
}

// denied reports whether err is a refusal that hides a name (a denial:
// a key, refused content, links), not a failure to read it.
func denied(err error) bool {
	if err == nil {
		return false
	}
	_, denial := errnoOf(err, false)
	return denial && refusal.CodeOf(err) != refusal.NotFound
}

// hide takes the file n out of the view once its content was refused:
// its name in its directory and the directory's listing are invalidated
// (see unlist) before the request that found the refusal answers, so the
// reader's next look (ls, stat) finds it gone. That is done on one of the
// mount's goroutines, waited for at most hideWait: a READ holds no lock of
// the directory, but a kernel that took one would otherwise hold this
// request for ever. n's own pages go too (none was ever served), never
// from inside the request: the kernel may hold the very page a READ fills.
func (v *view) hide(n *node) {
	name, parent := n.Parent()
	if parent == nil {
		return
	}
	v.work.Go(func(context.Context) { n.NotifyContent(0, 0) })
	done := make(chan struct{})
	if !v.work.Go(func(context.Context) { v.unlist(parent, name); close(done) }) {
		return
	}
	select {
	case <-done:
	case <-time.After(hideWait):
	}
}

// hideWait bounds a request's wait for the kernel to drop a hidden name.
const hideWait = time.Second

// hideName is hide for a name in dir, from one of the mount's goroutines.
func (v *view) hideName(dir *fs.Inode, name string) {
	if c := dir.GetChild(name); c != nil {
		c.NotifyContent(0, 0)
	}
	v.unlist(dir, name)
}

// unlist invalidates the name in dir and dir's listing. The kernel then
// asks for the name again, and the LOOKUP, decided from the verdict now
// known, answers it as hidden; the listing is made again without it.
func (v *view) unlist(dir *fs.Inode, name string) {
	dir.NotifyEntry(name)
	dir.NotifyContent(0, 0)
	if dn, ok := nodeOf(dir); ok {
		dn.dropped.Store(true)
	}
}
