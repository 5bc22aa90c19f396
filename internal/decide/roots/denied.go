package roots

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/fsguard/fsguard/internal/concept/policy"
)

// denials remembers Denied's answers. Denied is a pure function of the
// guard's policy and roots, which never change (a reload makes a new
// guard), and of the path; a tree walk asks it up to four times per name
// (the listing, the entry's stat, its open, READDIRPLUS's lookup), and
// matching every deny glob was a sixth of a cold listing's time in the
// daemon. Bounded: dropped whole when full, which costs one match per
// name again.
type denials struct {
	mu sync.RWMutex
	m  map[deniedKey]bool
}

type deniedKey struct {
	root *Root
	rel  string
}

// maxDenials bounds the answers remembered (about 100 bytes each).
const maxDenials = 1 << 17

func (d *denials) get(k deniedKey) (denied, ok bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	denied, ok = d.m[k]
	return denied, ok
}

func (d *denials) put(k deniedKey, denied bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil || len(d.m) >= maxDenials {
		d.m = make(map[deniedKey]bool)
	}
	d.m[k] = denied
}

// entryRules is what judging a listed directory's entries against the
// deny rules needs of the directory's own path, worked out once for all
// its entries (deniedIn).
type entryRules struct {
	fold    bool
	relSegs []string   // the directory's path beneath the root, split as SplitName does
	abs     []absRules // by its real path and, when it differs, its configured one
}

type absRules struct {
	path string   // absolute, folded when the rules fold
	segs []string // path split; nil when no deny glob is absolute
}

// entryRules returns the rules for the entries of the directory rel
// beneath root; ok is false when the directory itself is denied (then so
// is every entry).
func (g *Guard) entryRules(root *Root, rel string) (r *entryRules, ok bool) {
	if g.Denied(root, rel) {
		return nil, false
	}
	fold := g.folds(root)
	r = &entryRules{fold: fold, relSegs: splitDir(rel, fold)}
	for i, base := range []string{root.Real, root.Path} {
		if i == 1 && root.Path == root.Real {
			break
		}
		abs := filepath.Join(base, rel)
		a := absRules{path: abs}
		if r.fold || g.absGlobs {
			segs := splitDir(abs, r.fold)
			if r.fold {
				a.path = "/" + strings.Join(segs, "/")
			}
			if g.absGlobs {
				a.segs = segs
			}
		}
		r.abs = append(r.abs, a)
	}
	return r, true
}

// splitDir is policy.SplitName for a directory, with no segment for the
// root of either kind ("." or "/").
func splitDir(p string, fold bool) []string {
	if p == "." || p == "/" {
		return nil
	}
	return policy.SplitName(p, fold)
}

// deniedIn is Denied for the entry name, at child beneath root, of the
// directory r describes. Denied passed the directory, so no rule matches
// it or an ancestor: only the entry's whole path is left to try, each
// rule once (see policy.MatchGlobsLast), where Denied tries each on every
// ancestor again. A listing asks it of every name it reads, so it must not
// repeat the ancestors' work that Denied already did for the directory.
func (g *Guard) deniedIn(root *Root, r *entryRules, name, child string) bool {
	k := deniedKey{root, child}
	if denied, ok := g.denials.get(k); ok {
		return denied
	}
	denied := g.entryDenied(r, name)
	g.denials.put(k, denied)
	return denied
}

func (g *Guard) entryDenied(r *entryRules, name string) bool {
	if IsTemp(name) || g.credentialInName(name) {
		return true
	}
	if r.fold {
		name = policy.Fold(name)
	}
	// The segments are built on the stack for paths of usual depth: this
	// runs for every name of every listing.
	var relBuf, absBuf [24]string
	relSegs := append(append(relBuf[:0], r.relSegs...), name)
	for _, a := range r.abs {
		// A deny path the directory is not under can hold the entry only
		// by being it.
		paths := g.denyPaths
		if r.fold {
			paths = g.foldedDenyPaths
		}
		if slices.ContainsFunc(paths, func(d string) bool { return isEntryOf(d, a.path, name) }) {
			return true
		}
		var absSegs []string
		if g.absGlobs {
			absSegs = append(append(absBuf[:0], a.segs...), name)
		}
		if policy.MatchGlobsLast(g.pol.Deny.Globs, relSegs, absSegs, r.fold) >= 0 {
			return true
		}
	}
	return false
}

// isEntryOf reports whether p is the path dir + "/" + name ("/" + name
// when dir is "/"), without building it.
func isEntryOf(p, dir, name string) bool {
	if dir == "/" {
		dir = ""
	}
	return len(p) == len(dir)+1+len(name) && p[len(dir)] == '/' && strings.HasPrefix(p, dir) && strings.HasSuffix(p, name)
}
