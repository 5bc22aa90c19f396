// Package admit is the one decision whether a version of a file may be
// shown: by `fsguard read`, through the control socket and MCP, and by every
// path through which bytes enter the mount's page cache. It weighs the
// policy's refused content classes against the file's content — a private
// key anywhere in the whole file, not only in a sample — and the file's
// other names (hard links), and remembers its verdict per file version, so
// a version is scanned once however many doors ask.
//
// What a front end does with an admitted file is its own business: the read
// tool shows text and refuses to render binary (BINARY), the mount serves
// any admitted bytes. A file this package refuses is served by none of them.
package admit

import (
	"bytes"
	"errors"
	"io"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsguard/fsguard/internal/concept/document"
	"github.com/fsguard/fsguard/internal/concept/fanout"
	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"

	"golang.org/x/sys/unix"
)

// Decider decides admissions and remembers verdicts per file version. Its
// zero value is not usable; New makes one. Safe for concurrent use.
type Decider struct {
	mu    sync.Mutex
	max   int
	cache map[key]remembered
	// sumBytes is the memory the remembered versions' block hashes hold.
	sumBytes int
	// Links, when set, knows every name of a multi-link file under the
	// roots (the daemon's index); without it a multi-link file is refused
	// unless the policy allows hard links.
	Links Linker
	// small and large scan buffers: most files are small, and a 1 MiB
	// buffer per concurrent scan of a small file would be most of the
	// daemon's memory.
	small, large sync.Pool
	scans        atomic.Int64
	keyScans     atomic.Int64
	// inflight holds the whole-content key scans under way, one per
	// version: a listing's admission and an agent's open of the same big
	// file would otherwise both read all of it, each on its own core.
	inflight map[key]*scan
	// settle: see Save (a field so that tests need not wait for it).
	settle time.Duration
	// unpacking holds a token per packed file being looked into.
	unpacking chan struct{}
	// dets is the credential detector of the policy in force.
	dets atomic.Pointer[detectorOf]
	// OnMasks, when set, is told of each version found to hold
	// credentials, once per version decided (the audit's record of what
	// was masked); f is open, at that version, while it runs.
	OnMasks func(f *roots.File, masks []sniff.Mask)
}

// remembered is a version's class, and when its content was read for it
// (unix nanoseconds): Save keeps only classes read well after the
// version's last change. sums are the hashes of the bytes its scans read
// (nil: none kept, see blocks.go); loaded marks a class brought back from
// disk (Load), whose bytes this daemon never read.
type remembered struct {
	res    sniff.Result
	at     int64
	sums   *sums
	loaded bool
}

// scan is one whole-content key scan under way; done closes when res and
// err are set.
type scan struct {
	done chan struct{}
	res  sniff.Result
	err  error
}

// Scans counts the content scans made (a verdict not found in the cache).
func (d *Decider) Scans() int64 { return d.scans.Load() }

// KeyScans counts the whole-content key scans made (past the sample).
func (d *Decider) KeyScans() int64 { return d.keyScans.Load() }

// Linker answers for a file with more than one link whether all its names
// are known, inside the roots, and none of them denied.
type Linker interface {
	// OtherNames returns every name of the file's inode under the roots
	// (root-relative, with their root), and whether that is all of them.
	OtherNames(g *roots.Guard, f *roots.File) ([]Name, bool)
}

// Name is one name of a file: a root and a path beneath it.
type Name struct {
	Root *roots.Root
	Rel  string
}

// key is a file version under one policy: any write moves size, mtime or
// ctime, and a reload brings a new policy.
type key struct {
	id  fileid.Identity
	pol *policy.Policy
}

// New returns a decider that remembers at most max verdicts.
func New(max int) *Decider {
	d := &Decider{max: max, cache: make(map[key]remembered), inflight: make(map[key]*scan), settle: settle,
		unpacking: make(chan struct{}, maxUnpacking)}
	d.small.New = func() any { b := make([]byte, 64<<10); return &b }
	d.large.New = func() any { b := make([]byte, 1<<20); return &b }
	return d
}

// Decide returns f's content class, or a DENIED refusal when the policy
// does not let this version be shown: its content is a refused class (a
// private key, wherever in the file), or it has other names that are denied,
// outside the roots, or unknown.
func (d *Decider) Decide(g *roots.Guard, f *roots.File) (sniff.Result, error) {
	return d.Start(g, f).Wait()
}

// Pending is a decision under way: the class of f's sample is known at
// once; the verdict (Wait) may still need the scan of the whole content.
type Pending struct {
	// Sample is the class of the start of the file, which says how it
	// would be shown (text with or without a BOM, image, binary); it is
	// not the verdict.
	Sample sniff.Result
	done   chan struct{}
	res    sniff.Result
	err    error
}

// Wait returns the verdict, as Decide does.
func (p *Pending) Wait() (sniff.Result, error) {
	<-p.done
	return p.res, p.err
}

// Start begins the decision on f and returns at once with the sample's
// class; the scan of the whole content (when the verdict is not already
// known) runs on its own goroutine, so a caller that reads the file anyway
// (fsguard read's window scan) overlaps the two. The caller must Wait
// before it closes f, and must show nothing of f before Wait says yes.
func (d *Decider) Start(g *roots.Guard, f *roots.File) *Pending {
	return d.start(g, f, nil)
}

// Keep asks a listing's admission for the whole content of the small files
// it admits: the mount pushes it into the kernel's page cache without
// reading the file a second time.
type Keep struct {
	// Fn is given each file's content; data is reused once Fn returns.
	Fn func(rel string, id fileid.Identity, data []byte)
	// Known: files whose verdict is already known are read for Fn too. A
	// directory listed again (its pages were reclaimed, as an idle
	// machine's are) wants its files pushed again, and so does one listed
	// by a walker that reads what it lists (grep -r); a first listing of a
	// directory whose verdicts are known (a fresh node for a directory
	// listed before) does not pay a read per file for a walker that may
	// read none of them (find, git status).
	Known bool
	// Want, when set, narrows Known: the content of a file whose verdict
	// is known is read only if Want says so for its name in the listed
	// directory and its version (the mount declines a version the kernel
	// was given a moment ago, by a refill).
	Want func(name string, id fileid.Identity) bool
	// ByName: a listing that decides its files by name and place alone
	// (deny rules, type, links), as an agent's listing of what it has not
	// asked to read: a single-link file whose verdict is not known yet is
	// shown unread, with its stat; a verdict already known still hides
	// it. Its content is decided when it is read (see VisibleByName).
	ByName bool
}

// wants reports whether keep asks for the content of the file name,
// version st, whose verdict may be known.
func (k *Keep) wants(name string, st *unix.Stat_t) bool {
	return k != nil && k.Known && (k.Want == nil || k.Want(name, fileid.Of(st)))
}

// start is Start; keep, when set, is given the content of a file admitted
// by a sample that was the whole file.
func (d *Decider) start(g *roots.Guard, f *roots.File, keep func(data []byte)) *Pending {
	p := &Pending{done: make(chan struct{})}
	finish := func(res sniff.Result, err error) *Pending {
		p.res, p.err = res, err
		close(p.done)
		return p
	}
	pol := g.Policy()
	if err := d.links(g, f); err != nil {
		return finish(sniff.Result{}, err)
	}
	k := key{f.Identity(), pol}
	if res, ok := d.cached(k); ok {
		p.Sample = res
		res, err := verdict(pol, f.Path(), res)
		if err == nil && keep != nil && f.Stat.Size <= readWhole {
			d.keepWhole(g, f, res, keep)
		}
		return finish(res, err)
	}
	began := time.Now().UnixNano()
	// Every byte the decision reads, it reads through rec: the hashes it
	// keeps are of the bytes it checked (see blocks.go).
	rec := newRecorder(f, f.Stat.Size)
	sample, data, whole, bp, pool, err := d.sample(pol, f, rec)
	if err != nil {
		return finish(sample, ioErr(f.Shown, err))
	}
	p.Sample = sample
	// A packed file is looked into, whatever its size; its kind is known
	// from the sample, before the scan reuses the sample's buffer.
	kind, err := packedKind(pol, data, rec, f.Stat.Size)
	if err != nil {
		pool.Put(bp)
		return finish(sample, ioErr(f.Shown, err))
	}
	docAt := document.At(data)
	// A sample that is the whole file was searched for keys and
	// credentials whole.
	creds := maskable(sample) && pol.Secrets.Masks()
	if sample.Class == sniff.PrivateKey || !pol.Refuses(string(sniff.PrivateKey)) && !creds && kind == "" && docAt < 0 || whole {
		if whole {
			if sample, err = d.findIn(pol, f.Shown, sample, data); err != nil {
				pool.Put(bp)
				return finish(sample, err)
			}
			if sample, err = d.unpack(pol, kind, bytes.NewReader(data), int64(len(data)), sample); err == nil {
				sample, err = d.documentOf(pol, docAt, bytes.NewReader(data), int64(len(data)), sample)
			}
			if err != nil {
				pool.Put(bp)
				return finish(sample, ioErr(f.Shown, err))
			}
			d.tell(f, sample)
		}
		d.remember(k, sample, began, rec.sums())
		res, err := verdict(pol, f.Path(), sample)
		if err == nil && whole && keep != nil {
			masked(keep, res)(data)
		}
		pool.Put(bp)
		return finish(res, err)
	}
	// One whole-content scan per version at a time: the first decision
	// runs it, any that overlaps waits for its answer.
	sc, mine := d.claim(k)
	go func() {
		if mine {
			sc.res = sample
			if pol.Refuses(string(sniff.PrivateKey)) {
				sc.res, sc.err = d.scanKeys(rec, sample, *bp)
			}
			if sc.err == nil && sc.res.Class != sniff.PrivateKey {
				sc.res, sc.err = d.scanFor(pol, f.Shown, rec, sc.res, *bp)
				if sc.err == nil {
					sc.res, sc.err = d.unpack(pol, kind, rec, f.Stat.Size, sc.res)
				}
				if sc.err == nil {
					sc.res, sc.err = d.documentOf(pol, docAt, f, f.Stat.Size, sc.res)
				}
				if sc.err == nil {
					d.tell(f, sc.res)
				}
			}
			if sc.err == nil {
				d.remember(k, sc.res, began, rec.sums())
			}
			d.release(k, sc)
		}
		pool.Put(bp)
		<-sc.done
		if sc.err != nil {
			finish(sample, ioErr(f.Shown, sc.err))
			return
		}
		finish(verdict(pol, f.Path(), sc.res))
	}()
	return p
}

// claim returns the scan under way for k (or a finished one, when k was
// decided since the caller looked), or registers a new one that the caller
// (mine) must run and release.
func (d *Decider) claim(k key) (sc *scan, mine bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if sc, ok := d.inflight[k]; ok {
		return sc, false
	}
	if c, ok := d.cache[k]; ok {
		sc = &scan{done: make(chan struct{}), res: c.res}
		close(sc.done)
		return sc, false
	}
	sc = &scan{done: make(chan struct{})}
	d.inflight[k] = sc
	return sc, true
}

// release ends a claimed scan whose res and err are set, waking those who
// wait on it. The verdict is remembered before: a decision that starts
// after the release finds it in the cache.
func (d *Decider) release(k key, sc *scan) {
	d.mu.Lock()
	delete(d.inflight, k)
	d.mu.Unlock()
	close(sc.done)
}

// scanKeys searches the whole of rec's file for a private key past its
// sample, whose class is sample; buf is the sample's buffer, reused.
func (d *Decider) scanKeys(rec *recorder, sample sniff.Result, buf []byte) (sniff.Result, error) {
	d.keyScans.Add(1)
	at, err := wholeScan(d, rec, buf, sniff.FindKeyIn, sniff.FindKeyInHalves)
	if err != nil {
		return sample, err
	}
	if at >= 0 {
		return keyFound, nil
	}
	return sample, nil
}

// wholeScan reads the whole of rec's file through one of a scan's two
// forms: in two halves at once (with a second buffer) from splitScan,
// else whole through buf.
func wholeScan[T any](d *Decider, rec *recorder, buf []byte,
	whole func(io.ReaderAt, int64, []byte) (T, error),
	halves func(io.ReaderAt, int64, []byte, []byte) (T, error)) (T, error) {
	if rec.size >= splitScan {
		bp2, pool2 := d.buffer(rec.size)
		defer pool2.Put(bp2)
		return halves(rec, rec.size, buf, *bp2)
	}
	return whole(rec, rec.size, buf)
}

// keepWhole gives keep the content of f, a small file whose verdict res
// was already known, read whole now: not the bytes the verdict was made
// from, so checked as a door checks what it serves (see Check), and not
// kept when they hold what the verdict did not see (forgotten then).
func (d *Decider) keepWhole(g *roots.Guard, f *roots.File, res sniff.Result, keep func([]byte)) {
	bp, pool := d.buffer(f.Stat.Size)
	defer pool.Put(bp)
	buf := (*bp)[:min(int64(len(*bp)), f.Stat.Size+1)]
	n, _ := f.ReadAtSized(buf, 0)
	if int64(n) != f.Stat.Size {
		return
	}
	data := buf[:n]
	if !d.Check(g, f, f.Identity(), res.Masks, Window{Bytes: data, AtEOF: true, Head: data[:min(4, n)], To: int64(n)}) {
		d.Forget(g, f.Identity())
		return
	}
	masked(keep, res)(data)
}

// ioErr is a read of shown that failed with err; a refusal (a scan's own
// decision) is returned as it is, with its code and advice.
func ioErr(shown string, err error) error {
	if _, ok := errors.AsType[*refusal.Error](err); ok {
		return err
	}
	if errors.Is(err, errChangedScanning) || errors.Is(err, io.ErrUnexpectedEOF) {
		return refusal.Of(refusal.ChangedChecking, refusal.OpRead, shown, refusal.Facts{})
	}
	return refusal.Of(refusal.IOFailedReading, refusal.OpRead, shown, refusal.Facts{Detail: err.Error()})
}

// cached returns a version's class if it is already decided.
func (d *Decider) cached(k key) (sniff.Result, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.cache[k]
	return c.res, ok
}

// remember caches a version's class, read for it at (unix nanoseconds),
// with the hashes of the bytes read (nil: none).
func (d *Decider) remember(k key, res sniff.Result, at int64, s *sums) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.cache) >= d.max || d.sumBytes+s.bytes() > maxSumBytes {
		// Dropped whole: cheaper than LRU bookkeeping on every open, and it
		// costs at most one rescan per file.
		d.cache, d.sumBytes = make(map[key]remembered), 0
	}
	if old, ok := d.cache[k]; ok {
		d.sumBytes -= old.sums.bytes()
	}
	d.cache[k] = remembered{res: res, at: at, sums: s}
	d.sumBytes += s.bytes()
}

// verdict applies the policy's refused classes to the class of the file p.
func verdict(pol *policy.Policy, p roots.Path, res sniff.Result) (sniff.Result, error) {
	if isDocumentFinding(res.Inside) {
		if err := documentVerdict(pol, p, res.Inside); err != nil {
			return res, err
		}
	} else if err := insideVerdict(pol, p, res.Inside); err != nil {
		return res, err
	}
	if pol.Refuses(string(res.Class)) && !pol.Allowed(p.Root.Path, p.Root.Real, p.Rel) {
		if res.Class == sniff.PrivateKey {
			return res, refusal.Of(refusal.DeniedKey, refusal.OpRead, p.Shown, refusal.Facts{})
		}
		return res, refusal.Of(refusal.DeniedContent, refusal.OpRead, p.Shown, refusal.Facts{Class: string(res.Class), MIME: res.MIME})
	}
	if res.Class == sniff.PrivateKey {
		// Keys are allowed here: they are text.
		res.Class, res.MIME = sniff.Text, "text/plain"
	}
	if len(res.Masks) > 0 && pol.SecretsShown(p.Root.Path, p.Root.Real, p.Rel) {
		res.Masks = nil // a fixture the operator admits as it is
	}
	return res, nil
}

// Visible decides whether a directory entry may be shown at all (a LOOKUP,
// a listing): a regular file that its content or its links keep from being
// read is hidden like a denied name, so a tree walker finds what it can
// read and nothing it cannot. st is the entry's own stat, from the guard;
// a version already decided costs no open.
func (d *Decider) Visible(g *roots.Guard, p roots.Path, st *unix.Stat_t) error {
	return d.visible(g, p, st, nil, false)
}

// visible is Visible; keep, when set, is given the content of a small file
// this call admitted from a whole sample, and with known of one whose
// verdict was already known too (see Keep).
func (d *Decider) visible(g *roots.Guard, p roots.Path, st *unix.Stat_t, keep func(data []byte), known bool) error {
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	if ok, err := d.decided(g, p, st, keep != nil && known); ok {
		return err
	}
	f, err := g.OpenIn(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return d.decideOpen(g, f, keep)
}

// VisibleByName decides, by name and place, whether a directory entry may
// be shown (a listing's or a LOOKUP's): a regular file is hidden only when
// a verdict on its version is already known and refuses it, or it has
// other names (decided whole each time, content too); otherwise it is
// shown unread. Its bytes are never served unread: every way they reach a
// reader (a READ, an open, a push) decides the version first. st is the
// entry's own stat, from the guard.
func (d *Decider) VisibleByName(g *roots.Guard, p roots.Path, st *unix.Stat_t) error {
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	if ok, err := d.decided(g, p, st, false); ok {
		return err
	}
	if st.Nlink > 1 {
		return d.visible(g, p, st, nil, false)
	}
	return nil
}

// Undecided reports whether the entry of stat st is a single-link regular
// file shown by name alone: no verdict on its version is known yet.
func (d *Decider) Undecided(g *roots.Guard, st *unix.Stat_t) bool {
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink > 1 {
		return false
	}
	_, ok := d.cached(key{fileid.Of(st), g.Policy()})
	return !ok
}

// EntryByName is ShownEntry deciding by name and place (see
// VisibleByName): the mount's LOOKUP of a name no listing has just
// decided.
func (d *Decider) EntryByName(g *roots.Guard, p roots.Path) (roots.Entry, error) {
	return d.shownEntry(g, p, &Keep{ByName: true})
}

// decided answers for the regular file version st from the verdicts
// already made, with no open; ok is false when the file must be opened:
// its version is not decided yet, it has other names (decided afresh each
// time), or its content is wanted (Keep.Known) and it is small enough to
// be kept.
func (d *Decider) decided(g *roots.Guard, p roots.Path, st *unix.Stat_t, content bool) (ok bool, err error) {
	if st.Nlink > 1 || content && st.Size <= readWhole {
		return false, nil
	}
	pol := g.Policy()
	res, ok := d.cached(key{fileid.Of(st), pol})
	if !ok {
		return false, nil
	}
	_, err = verdict(pol, p, res)
	return true, err
}

// decideOpen decides the open file f; keep, when set, is given its content
// if a whole read admitted it (never a multi-link file's: each read of one
// decides afresh).
func (d *Decider) decideOpen(g *roots.Guard, f *roots.File, keep func(data []byte)) error {
	if f.Stat.Nlink > 1 {
		keep = nil
	}
	_, err := d.start(g, f, keep).Wait()
	return err
}

// Shown filters a directory's listing by the guard (roots.Guard.List: no
// denied name, special file or escaping link) down to what may be shown:
// a regular file that Visible hides is left out, as is any entry skip
// names (nil: none). The mount's READDIR and fsguard read DIR both list
// through it, so both show the same names. dir is the directory listed,
// its entries shown beneath dir.Shown. keep (nil: none) is given the content of
// each small file admitted here from one whole read; its Fn may be called
// from several goroutines at once.
//
// Each regular file and directory shown carries the stat it was decided
// on (Stat). A directory is resolved here for its stat (the guard's Entry):
// the mount's READDIRPLUS answers with the stats of the listing that asked
// it, and resolved each directory itself otherwise, one at a time while the
// walker waited, where these are made in parallel, and ahead of the walker
// when the listing is (a cold walk of a large tree meets many directories,
// each a round trip the walker would wait for). Other
// entries (links) are left to their LOOKUP.
//
// The entries are decided by up to listWorkers goroutines: a cold listing
// is a walker's wait (find, grep -r and git status list one directory at
// a time), and each file costs an open, a read and a sniff.
func (d *Decider) Shown(g *roots.Guard, dir roots.Path, ents []roots.DirEntry, skip func(rel string) bool, keep *Keep) []roots.DirEntry {
	r := dir.Root
	crel := func(name string) string {
		if dir.Rel == "." {
			return name
		}
		return dir.Rel + "/" + name
	}
	show := make([]bool, len(ents))
	stats := make([]*unix.Stat_t, len(ents))
	var resolved []int
	for i, e := range ents {
		if skip != nil && skip(crel(e.Name)) {
			continue
		}
		if e.Mode == unix.S_IFREG || e.Mode == unix.S_IFDIR {
			resolved = append(resolved, i)
			continue
		}
		show[i] = true
	}
	decide := func(i int) {
		e := ents[i]
		if e.Mode == unix.S_IFDIR {
			// Resolved for its stat alone (O_PATH): shownEntry would first
			// try to open it for reading, as a file. Anything else found
			// there now (a race) is decided as a LOOKUP would decide it.
			ent, err := g.Entry(r, crel(e.Name))
			if err != nil {
				return
			}
			if ent.Stat.Mode&unix.S_IFMT == unix.S_IFDIR {
				show[i], stats[i] = true, &ent.Stat
				return
			}
		}
		ent, err := d.shownEntry(g, roots.Path{Root: r, Rel: crel(e.Name), Shown: path.Join(dir.Shown, e.Name)}, keep)
		if err != nil {
			return // hidden by name, kind, content or links: absent, as a denied name is
		}
		show[i], stats[i] = true, &ent.Stat
	}
	fanout.Each(len(resolved), listWorkers, minFilesPerWorker, func(k int) { decide(resolved[k]) })
	out := ents[:0:0]
	for i, e := range ents {
		if show[i] {
			e.Stat = stats[i]
			out = append(out, e)
		}
	}
	return out
}

// ShownEntry decides, as Shown decides each file of a listing, whether
// the entry p is shown: its entry if so,
// else the refusal that hides it (a not-found one when nothing is there).
// The mount's LOOKUP asks it of a name no listing has just decided, and
// its rewrite of a repository's index of every tracked path.
func (d *Decider) ShownEntry(g *roots.Guard, p roots.Path) (roots.Entry, error) {
	return d.shownEntry(g, p, nil)
}

// shownEntry is ShownEntry; keep (nil: none) is given the content of a
// small file admitted here (see Shown). One resolution of the name serves
// its stat and, when its verdict is not known yet, its content: a cold
// listing decides every file, and resolving each twice was two fifths of
// the daemon's time in a cold find.
func (d *Decider) shownEntry(g *roots.Guard, p roots.Path, keep *Keep) (roots.Entry, error) {
	base := path.Base(p.Rel)
	var known error
	answered, unread := false, false
	byName := keep != nil && keep.ByName
	ent, f, err := g.EntryFile(p, func(st *unix.Stat_t) bool {
		answered, known = d.decided(g, p, st, keep.wants(base, st))
		unread = !answered && byName && st.Nlink <= 1
		return !answered && !unread
	})
	if err != nil {
		return ent, err
	}
	var kept func([]byte)
	if keep != nil && keep.Fn != nil {
		id := fileid.Of(&ent.Stat)
		kept = func(data []byte) { keep.Fn(p.Rel, id, data) }
	}
	switch {
	case answered:
		err = known
	case unread:
		err = nil // shown by name and place: its content is decided when read
	case f != nil:
		err = d.decideOpen(g, f, kept)
		f.Close()
	default: // not a regular file, or met a link: as Visible decides
		err = d.visible(g, p, &ent.Stat, kept, keep.wants(base, &ent.Stat))
	}
	return ent, err
}

const (
	// listWorkers bounds the goroutines deciding one listing's files.
	listWorkers = 4
	// minFilesPerWorker: a small directory is decided by one.
	minFilesPerWorker = 4
)

// splitScan is the size from which a file's whole-content scan runs in
// two halves at once (the first read of a 1 GiB file waits for it).
const splitScan = 32 << 20

// readWhole is the largest file read whole by its first read: its key
// scan is then that read, with no second pass over the file, and the
// mount can push those bytes into the page cache (its pushes go up to
// this size).
const readWhole = 128 << 10

// sample classifies the start of f, counting a scan; it returns the bytes
// read, whether they were the whole file, and the buffer they are in (for
// the whole-content scan) and its pool.
func (d *Decider) sample(pol *policy.Policy, f *roots.File, rec *recorder) (sniff.Result, []byte, bool, *[]byte, *sync.Pool, error) {
	d.scans.Add(1)
	bp, pool := d.buffer(f.Stat.Size)
	limit := pol.Limits.SampleBytes
	if f.Stat.Size <= readWhole {
		limit = max(limit, int(f.Stat.Size))
	}
	buf := (*bp)[:min(len(*bp), limit)]
	n, err := rec.ReadAt(buf, 0)
	if err == io.EOF && int64(n) < min(f.Stat.Size, int64(len(buf))) {
		err = io.ErrUnexpectedEOF // shorter than its size: changed meanwhile
	}
	if err != nil && err != io.EOF || n == 0 && f.Stat.Size > 0 {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		pool.Put(bp)
		return sniff.Result{}, nil, false, nil, nil, err
	}
	whole := int64(n) >= f.Stat.Size
	if n <= pol.Limits.SampleBytes {
		return sniff.Classify(buf[:n], whole), buf[:n], whole, bp, pool, nil
	}
	// Read whole past the sample: the sample is classified, the whole is
	// searched for keys, as the scan of the rest would have.
	if sniff.HasKey(buf[:n]) {
		return keyFound, buf[:n], whole, bp, pool, nil
	}
	return sniff.Classify(buf[:pol.Limits.SampleBytes], false), buf[:n], whole, bp, pool, nil
}

// buffer takes a scan buffer fit for a file of size bytes from its pool.
func (d *Decider) buffer(size int64) (*[]byte, *sync.Pool) {
	pool := &d.small
	if size > 64<<10 {
		pool = &d.large
	}
	return pool.Get().(*[]byte), pool
}

// keyFound is the class of a file whose content holds a private key past
// its sample (the scan of the rest found it, or the whole read did).
var keyFound = sniff.Result{Class: sniff.PrivateKey, MIME: "application/x-pem-file"}
