package policy

import (
	"fmt"
	"path"
	"strings"
)

// Glob is a compiled deny pattern. Patterns use '/' separated segments; a
// segment is a path.Match pattern ('*', '?', '[...]') and the segment "**"
// matches zero or more whole segments. A pattern that starts with '/' is
// matched against absolute paths; any other pattern is matched against the
// path relative to its root. A glob that matches a directory denies
// everything below it.
type Glob struct {
	src  string
	abs  bool
	segs []segment
	// folded is segs compiled from folded segments (see Fold), matched
	// against folded names.
	folded []segment
	// key and foldedKey are the last segment that is not "**": any path
	// the glob matches has a segment that matches it. A path with none is
	// rejected in one pass, before the full match (deny rules are checked
	// several times for every file a listing shows).
	key, foldedKey *segment
}

// lastLiteral returns the last segment of segs that is not "**".
func lastLiteral(segs []segment) *segment {
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i].kind != anyDepth {
			return &segs[i]
		}
	}
	return nil
}

// mayMatch reports whether some segment of name matches key (nil: any
// path may match).
func mayMatch(key *segment, name []string) bool {
	if key == nil {
		return true
	}
	for _, s := range name {
		if key.match(s) {
			return true
		}
	}
	return false
}

// segment is one compiled pattern segment. Deny rules are checked on every
// lookup and listed entry, so the common shapes (a literal, "*.ext",
// "prefix*") skip path.Match.
type segment struct {
	pat  string
	kind segKind
	lit  string // the literal part for litKind, suffixKind, prefixKind
}

type segKind uint8

const (
	anyDepth   segKind = iota // "**"
	literal                   // no metacharacters
	suffixKind                // "*" + literal
	prefixKind                // literal + "*"
	general                   // anything else: path.Match
)

func compileSegment(s string) segment {
	const meta = "*?[\\"
	switch {
	case s == "**":
		return segment{pat: s, kind: anyDepth}
	case !strings.ContainsAny(s, meta):
		return segment{pat: s, kind: literal, lit: s}
	case s[0] == '*' && !strings.ContainsAny(s[1:], meta):
		return segment{pat: s, kind: suffixKind, lit: s[1:]}
	case s[len(s)-1] == '*' && !strings.ContainsAny(s[:len(s)-1], meta):
		return segment{pat: s, kind: prefixKind, lit: s[:len(s)-1]}
	}
	return segment{pat: s, kind: general}
}

func (g segment) match(name string) bool {
	switch g.kind {
	case literal:
		return name == g.lit
	case suffixKind:
		return strings.HasSuffix(name, g.lit)
	case prefixKind:
		return strings.HasPrefix(name, g.lit)
	}
	ok, _ := path.Match(g.pat, name)
	return ok
}

// CompileGlob checks and compiles a deny pattern.
func CompileGlob(src string) (Glob, error) {
	if strings.TrimSpace(src) == "" {
		return Glob{}, fmt.Errorf("empty deny pattern")
	}
	if strings.ContainsRune(src, 0) {
		return Glob{}, fmt.Errorf("deny pattern %q contains NUL", src)
	}
	g := Glob{src: src, abs: strings.HasPrefix(src, "/")}
	for _, s := range strings.Split(strings.Trim(src, "/"), "/") {
		if s == "" || s == "." || s == ".." {
			return Glob{}, fmt.Errorf("deny pattern %q: empty, '.' or '..' segment", src)
		}
		if s != "**" {
			if strings.Contains(s, "**") {
				return Glob{}, fmt.Errorf("deny pattern %q: '**' must be a whole segment", src)
			}
			if _, err := path.Match(s, ""); err != nil {
				return Glob{}, fmt.Errorf("deny pattern %q: bad segment %q: %v", src, s, err)
			}
		}
		// Collapse runs of "**": they match the same set and a run would
		// make matching exponential.
		if s == "**" && len(g.segs) > 0 && g.segs[len(g.segs)-1].kind == anyDepth {
			continue
		}
		g.segs = append(g.segs, compileSegment(s))
		if s == "**" {
			g.folded = append(g.folded, compileSegment(s))
		} else {
			g.folded = append(g.folded, compileSegment(Fold(s)))
		}
	}
	g.key, g.foldedKey = lastLiteral(g.segs), lastLiteral(g.folded)
	return g, nil
}

// UnmarshalText lets the TOML decoder compile patterns, so that a bad
// pattern is reported with its line.
func (g *Glob) UnmarshalText(b []byte) error {
	c, err := CompileGlob(string(b))
	if err != nil {
		return err
	}
	*g = c
	return nil
}

func (g Glob) String() string { return g.src }

// MarshalText writes the glob as it was written (policy check --format json).
func (g Glob) MarshalText() ([]byte, error) { return []byte(g.src), nil }

// Absolute reports whether the pattern is matched against absolute paths.
func (g Glob) Absolute() bool { return g.abs }

// Match reports whether the pattern matches p or one of its ancestors. p is
// a cleaned '/' separated path: absolute for absolute patterns, relative to
// the root (no leading '/', "." for the root itself) otherwise.
func (g Glob) Match(p string) bool {
	p = strings.Trim(p, "/")
	if p == "" || p == "." {
		return false
	}
	return g.MatchSplit(strings.Split(p, "/"))
}

// MatchSplit is Match on a path already split into segments, so that a
// caller checking many globs splits the path once.
func (g Glob) MatchSplit(segs []string) bool {
	if !mayMatch(g.key, segs) {
		return false
	}
	for k := 1; k <= len(segs); k++ {
		if matchSegs(g.segs, segs[:k]) {
			return true
		}
	}
	return false
}

// MatchFolded is MatchSplit with [deny] fold: segs are folded names (see
// Fold), matched against the folded pattern.
func (g Glob) MatchFolded(segs []string) bool {
	if !mayMatch(g.foldedKey, segs) {
		return false
	}
	for k := 1; k <= len(segs); k++ {
		if matchSegs(g.folded, segs[:k]) {
			return true
		}
	}
	return false
}

// MatchName matches a split path, folded or exactly as fold says: the
// one way every deny, write-deny and allow glob is applied.
func (g Glob) MatchName(segs []string, fold bool) bool {
	if fold {
		return g.MatchFolded(segs)
	}
	return g.MatchSplit(segs)
}

// matchWhole reports whether the pattern matches segs itself, not one of
// its ancestors (see MatchGlobsLast), folded or exactly as fold says.
func (g Glob) matchWhole(segs []string, fold bool) bool {
	pat := g.segs
	if fold {
		pat = g.folded
	}
	if last := pat[len(pat)-1]; last.kind != anyDepth && !last.match(segs[len(segs)-1]) {
		return false
	}
	return matchSegs(pat, segs)
}

// SplitName splits a clean '/'-separated path into segments for
// MatchName, folding each when fold is set.
func SplitName(p string, fold bool) []string {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	if fold {
		for i, s := range segs {
			segs[i] = Fold(s)
		}
	}
	return segs
}

// matchSegs matches pattern segments against path segments in full. "**"
// runs were collapsed at compile time, so the recursion is bounded by
// len(pat) * len(name).
func matchSegs(pat []segment, name []string) bool {
	for len(pat) > 0 {
		if pat[0].kind == anyDepth {
			rest := pat[1:]
			if len(rest) == 0 {
				return true
			}
			for i := 0; i <= len(name); i++ {
				if matchSegs(rest, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if !pat[0].match(name[0]) {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
