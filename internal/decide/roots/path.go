package roots

import "path/filepath"

// Path is a name beneath one of the guard's roots, shown as the caller
// sees it: the one value the guard, its doors and the mount pass around
// for "this entry", in the spirit of os.Root and fs.PathError. Rel is what
// the guard resolves (clean and relative, "." for the root itself) and
// judges; Shown is what messages name, and is never resolved. The zero
// Path names nothing.
type Path struct {
	Root  *Root
	Rel   string // clean, relative to Root; "." for the root itself
	Shown string // the path in the caller's view, for messages and output
}

// At is rel beneath r, shown at r's configured path.
func (r *Root) At(rel string) Path {
	return Path{Root: r, Rel: rel, Shown: filepath.Join(r.Path, rel)}
}

// Join is the entry name within the directory p, shown beneath p's shown
// path. name is one clean component.
func (p Path) Join(name string) Path {
	return Path{Root: p.Root, Rel: filepath.Join(p.Rel, name), Shown: filepath.Join(p.Shown, name)}
}

// Parent is the directory that holds p, by name: the lexical parent of
// both its relative and its shown path.
func (p Path) Parent() Path {
	return Path{Root: p.Root, Rel: filepath.Dir(p.Rel), Shown: filepath.Dir(p.Shown)}
}

// Base is the entry's own name ("." for the root itself).
func (p Path) Base() string { return filepath.Base(p.Rel) }

// Real is the entry's absolute path beneath the root's real path, by name
// (no link on the way is resolved).
func (p Path) Real() string { return filepath.Join(p.Root.Real, p.Rel) }

// String is the shown path.
func (p Path) String() string { return p.Shown }

// In is the same entry at rel beneath root, shown as p is: where a
// resolution really landed, still named as the caller named it.
func (p Path) In(root *Root, rel string) Path {
	return Path{Root: root, Rel: rel, Shown: p.Shown}
}
