package mount

import (
	"errors"
	"io"
	"path"
	"sync"

	"github.com/fsguard/fsguard/internal/concept/fanout"
	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/gitindex"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// A repository's index lists every tracked file. When the view hides some
// (a denied .env, a file that holds a key), git in the view would report
// them deleted, and a patch made from `git diff` would delete them; a file
// served masked it would report modified. So the
// view serves each <repo>/.git/index with skip-worktree set on the entries
// it hides (package gitindex): git then leaves them alone. The rewritten
// index is computed per version of the index file and of the view (any
// change the watch reports may hide or show a tracked file), and the kernel
// forgets its copy whenever either moves.

// indexWorkers bounds the goroutines deciding one index's paths.
const indexWorkers = 4

// maxIndex bounds the index files rewritten; a larger one is served as is.
const maxIndex = 256 << 20

// isIndex reports whether rel (beneath a root) is a repository's index,
// and the repository's working tree.
func isIndex(rel string) (repo string, ok bool) {
	if path.Base(rel) != "index" || path.Base(path.Dir(rel)) != ".git" {
		return "", false
	}
	return path.Dir(path.Dir(rel)), true
}

type indexKey struct {
	id  fileid.Identity
	pol *policy.Policy
	gen int64
}

type indexView struct {
	key  indexKey
	data []byte
}

// indexLen is the length of the rewritten index of one version of the file.
type indexLen struct {
	id fileid.Identity
	n  int64
}

// gitIndexes is the view's state for rewritten indexes.
type gitIndexes struct {
	mu    sync.Mutex
	gen   int64                  // moves with every change in the tree outside .git
	views map[string]*indexView  // by root name and rel
	sizes map[string]indexLen    // by root name and rel
	nodes map[*fs.Inode]struct{} // index nodes the kernel holds
	// hidden remembers, by root name and path, whether the view hides a
	// tracked path, for one generation and policy (hiddenFor): git
	// rewrites its index far more often than the tree's visible set
	// moves, and deciding every tracked path again at each rewrite would
	// redo a whole tree's decisions for nothing.
	hidden    map[string]bool
	hiddenFor struct {
		pol *policy.Policy
		gen int64
	}
}

// changed records that the tree changed and makes the kernel forget the
// indexes it holds, so the next read is rewritten afresh.
func (x *gitIndexes) changed() {
	x.mu.Lock()
	x.gen++
	x.hidden = nil
	nodes := make([]*fs.Inode, 0, len(x.nodes))
	for n := range x.nodes {
		nodes = append(nodes, n)
	}
	x.mu.Unlock()
	for _, n := range nodes {
		n.NotifyContent(0, 0)
	}
}

func (x *gitIndexes) hold(n *fs.Inode, held bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.nodes == nil {
		x.nodes = map[*fs.Inode]struct{}{}
	}
	if held {
		x.nodes[n] = struct{}{}
	} else {
		delete(x.nodes, n)
	}
}

// gitIndex returns the bytes the view shows of the index file f at p (nil:
// f is not an index, serve it as it is).
func (v *view) gitIndex(g *roots.Guard, p roots.Path, f *roots.File) []byte {
	r, rel := p.Root, p.Rel
	repo, ok := isIndex(rel)
	if !ok {
		return nil
	}
	x := &v.git
	x.mu.Lock()
	key := indexKey{f.Identity(), g.Policy(), x.gen}
	at := r.Name + "\x00" + rel
	if iv := x.views[at]; iv != nil && iv.key == key {
		x.mu.Unlock()
		return iv.data
	}
	x.mu.Unlock()
	data, err := readIndex(f)
	if err != nil {
		return nil
	}
	out, _, err := gitindex.Hide(data, func(paths []string) []bool {
		// A cold index names every tracked file, and git waits for this
		// read before anything else: the paths are decided on a few
		// goroutines.
		hide := make([]bool, len(paths))
		fanout.Each(len(paths), indexWorkers, 64, func(i int) {
			tracked := path.Join(repo, paths[i])
			hide[i] = v.hiddenTracked(g, roots.Path{Root: r, Rel: tracked, Shown: tracked}, key)
		})
		return hide
	})
	if err != nil {
		out = data // not an index we rewrite: as it is
	}
	x.mu.Lock()
	if x.views == nil {
		x.views = map[string]*indexView{}
	}
	x.views[at] = &indexView{key: key, data: out}
	x.setSizeLocked(at, indexLen{key.id, int64(len(out))}) // a GETATTR after this READ reads nothing
	x.mu.Unlock()
	return out
}

// setSizeLocked keeps the length of the view of one version of the index
// at at; x.mu is held.
func (x *gitIndexes) setSizeLocked(at string, l indexLen) {
	if x.sizes == nil {
		x.sizes = map[string]indexLen{}
	}
	x.sizes[at] = l
}

// warmIndexes makes the view of every index the kernel holds (the warm
// walk's listings looked them up), so that the first reader of one — git
// status, grep -r — does not wait inside its READ while every tracked path
// is decided again. It returns how many indexes have a view now.
func (v *view) warmIndexes() (made int) {
	x := &v.git
	x.mu.Lock()
	nodes := make([]*fs.Inode, 0, len(x.nodes))
	for in := range x.nodes {
		nodes = append(nodes, in)
	}
	x.mu.Unlock()
	for _, in := range nodes {
		n, ok := nodeOf(in)
		if !ok {
			continue
		}
		g, p, errno := n.resolve()
		if errno != 0 {
			continue
		}
		if f, err := g.OpenIn(p); err == nil {
			if v.gitIndex(g, p, f) != nil {
				made++
			}
			f.Close()
		}
	}
	return made
}

// indexSize puts the size of the index the view shows in attributes; st is
// the index file's stat. The size depends on the file alone
// (gitindex.Size), so it is kept per version of the file, and no path is
// decided for it: a walker that lists .git (find, ls -l) does not make the
// view decide the whole tree, only a reader of the index does.
func (v *view) indexSize(g *roots.Guard, p roots.Path, st *unix.Stat_t, a *fuse.Attr) {
	x := &v.git
	at := p.Root.Name + "\x00" + p.Rel
	x.mu.Lock()
	l, ok := x.sizes[at]
	x.mu.Unlock()
	if ok && l.id == fileid.Of(st) {
		a.Size = uint64(l.n)
		return
	}
	f, err := g.OpenIn(p)
	if err != nil {
		return
	}
	defer f.Close()
	data, err := readIndex(f)
	if err != nil {
		return
	}
	l = indexLen{f.Identity(), gitindex.Size(data)}
	x.mu.Lock()
	x.setSizeLocked(at, l)
	x.mu.Unlock()
	a.Size = uint64(l.n)
}

// readIndex reads the index file f whole, refusing one larger than
// maxIndex (served as it is).
func readIndex(f *roots.File) ([]byte, error) {
	if f.Stat.Size > maxIndex {
		return nil, errors.New("index too large to rewrite")
	}
	return io.ReadAll(io.NewSectionReader(f, 0, f.Stat.Size))
}

// hiddenTracked is hidden, remembered for the generation and policy of key
// while a watch holds: then every change that could hide or show a path
// moves the generation. Without a watch nothing would, so each rewrite
// decides afresh.
func (v *view) hiddenTracked(g *roots.Guard, p roots.Path, key indexKey) bool {
	if !v.watched() {
		return v.hidden(g, p)
	}
	x := &v.git
	at := p.Root.Name + "\x00" + p.Rel
	x.mu.Lock()
	h, ok := false, false
	if x.hiddenFor.pol == key.pol && x.hiddenFor.gen == key.gen {
		h, ok = x.hidden[at]
	}
	x.mu.Unlock()
	if ok {
		return h
	}
	h = v.hidden(g, p)
	x.mu.Lock()
	if x.gen == key.gen { // else the answer may be of a tree that is gone
		if x.hidden == nil || x.hiddenFor.pol != key.pol || x.hiddenFor.gen != key.gen {
			x.hidden = map[string]bool{}
			x.hiddenFor.pol, x.hiddenFor.gen = key.pol, key.gen
		}
		x.hidden[at] = h
	}
	x.mu.Unlock()
	return h
}

// hidden reports whether the view hides p: denied, refused by
// content or links, leading outside, as a listing would. A missing file
// is not hidden: git may say it was deleted, because it was. A file served
// masked (see the gate) counts as hidden too: git in the view would find
// its bytes differ from what it tracks, and report a change made of masks
// alone, which a patch made from it would write back.
func (v *view) hidden(g *roots.Guard, p roots.Path) bool {
	e, err := v.admit.ShownEntry(g, p)
	if err != nil {
		return refusal.CodeOf(err) != refusal.NotFound
	}
	return e.Stat.Mode&unix.S_IFMT == unix.S_IFREG && v.masked(g, p)
}

// masked reports whether the file p is served with masks.
func (v *view) masked(g *roots.Guard, p roots.Path) bool {
	f, err := g.OpenIn(p)
	if err != nil {
		return false
	}
	defer f.Close()
	res, err := v.admit.Decide(g, f)
	return err == nil && len(res.Masks) > 0
}
