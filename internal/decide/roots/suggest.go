package roots

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/fsguard/fsguard/internal/concept/refusal"

	"golang.org/x/sys/unix"
	"golang.org/x/text/unicode/norm"
)

// maxSuggestions bounds the "did you mean" list; more is noise.
const maxSuggestions = 3

// missing is the cause of a NOT_FOUND refusal of a name beneath a root:
// where Suggest looks for near names.
type missing struct {
	root *Root
	rel  string
	err  error
}

func (m *missing) Error() string { return m.err.Error() }
func (m *missing) Unwrap() error { return m.err }

// notFound is the NOT_FOUND refusal of p. It lists no
// directory: near names cost a listing and a score of the parent — about
// a millisecond — and only a door that shows the message asks for them
// (Suggest), never the mount, whose shell tools, compilers and imports
// probe many missing names and see only ENOENT.
func notFound(p Path) error {
	return refusal.Of(refusal.NotFoundName, refusal.OpRead, p.Shown, refusal.Facts{}).
		Because(&missing{root: p.Root, rel: p.Rel, err: unix.ENOENT})
}

// Suggest gives a not-found refusal the near names from its parent
// directory, for a door that shows them, and returns err itself for any
// other error. Only names that the policy admits are offered, so a
// suggestion can never reveal a hidden entry.
func (g *Guard) Suggest(err error) error {
	var r *refusal.Error
	var m *missing
	if !errors.As(err, &r) || r.Reason != refusal.NotFoundName || !errors.As(r.Err, &m) || r.Suggestions != nil {
		return err
	}
	names := g.suggest(m.root, m.rel)
	if len(names) == 0 {
		return err
	}
	out := *r
	dir := filepath.Dir(r.Path)
	out.Suggestions = make([]string, len(names))
	for i, n := range names {
		out.Suggestions[i] = filepath.Join(dir, n)
	}
	return &out
}

type candidate struct {
	name string
	rank int // lower is better
	dist int
}

func (g *Guard) suggest(root *Root, rel string) []string {
	dirRel, want := filepath.Dir(rel), filepath.Base(rel)
	if want == "." || want == "/" {
		return nil
	}
	fd, _, err := g.open(root, dirRel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil
	}
	dir := os.NewFile(uintptr(fd), dirRel)
	defer dir.Close()
	names, _ := dir.Readdirnames(4096) // a bound: suggestions are a courtesy
	wantNFC, wantFold := norm.NFC.String(want), strings.ToLower(norm.NFC.String(want))
	wantStem := stem(wantFold)
	var cands []candidate
	for _, n := range names {
		if n == want || !utf8.ValidString(n) {
			continue
		}
		nNFC := norm.NFC.String(n)
		nFold := strings.ToLower(nNFC)
		c := candidate{name: n, rank: -1}
		switch {
		case nNFC == wantNFC:
			c.rank = 0 // the same name in another Unicode spelling
		case nFold == wantFold:
			c.rank = 1
		case stem(nFold) == wantStem && wantStem != "":
			c.rank = 2
		case commonPrefix(nFold, wantFold) >= 4 && commonPrefix(nFold, wantFold)*2 >= utf8.RuneCountInString(wantFold):
			c.rank = 3
		default:
			if d := editDistance(nFold, wantFold, 2); d <= 2 && utf8.RuneCountInString(wantFold) > 2 {
				c.rank, c.dist = 4, d
			}
		}
		if c.rank < 0 || !g.visible(root, filepath.Join(dirRel, n)) {
			continue
		}
		cands = append(cands, c)
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		if a.dist != b.dist {
			return a.dist < b.dist
		}
		return a.name < b.name
	})
	var out []string
	for i := 0; i < len(cands) && i < maxSuggestions; i++ {
		out = append(out, cands[i].name)
	}
	return out
}

// visible reports whether an entry would be admitted by a listing: not
// denied, and (through any symlinks) a regular file or directory beneath
// the allowed roots.
func (g *Guard) visible(root *Root, rel string) bool {
	e, err := g.Entry(root, rel)
	return err == nil && e.Visible()
}

func stem(s string) string {
	s = strings.TrimPrefix(s, ".")
	if i := strings.IndexByte(s, '.'); i > 0 {
		return s[:i]
	}
	return s
}

func commonPrefix(a, b string) int {
	n := 0
	for a != "" && b != "" {
		ra, sa := utf8.DecodeRuneInString(a)
		rb, sb := utf8.DecodeRuneInString(b)
		if ra != rb {
			break
		}
		n++
		a, b = a[sa:], b[sb:]
	}
	return n
}

// editDistance is the Levenshtein distance in runes, giving up (returning
// max+1) once it must exceed max.
func editDistance(a, b string, max int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > max || -d > max {
		return max + 1
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			best = min(best, cur[j])
		}
		if best > max {
			return max + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
