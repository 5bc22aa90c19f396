package admit_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"

	"golang.org/x/sys/unix"
)

const key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n"

type env struct {
	t    *testing.T
	root string
	g    *roots.Guard
}

func newEnv(t *testing.T, extra string) *env {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	os.Mkdir(root, 0o755)
	os.WriteFile(filepath.Join(base, "policy.toml"), []byte("[[root]]\npath = \""+root+"\"\n"+extra), 0o644)
	p, err := policy.Load(filepath.Join(base, "policy.toml"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := roots.New(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return &env{t, root, g}
}

func (e *env) write(rel, content string) string {
	p := filepath.Join(e.root, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) decide(d *admit.Decider, rel string) error {
	e.t.Helper()
	f, err := e.g.Open(rel, e.root)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	_, err = d.Decide(e.g, f)
	return err
}

// TestVerdictPerVersion: a version is scanned once however often it is
// asked about, and a new version (a key appended) is scanned again and
// refused — the cache is fresh, not only fast.
func TestVerdictPerVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	d := admit.New(16)
	p := e.write("a.txt", strings.Repeat("text\n", 3000))
	for range 3 {
		if err := e.decide(d, "a.txt"); err != nil {
			t.Fatal(err)
		}
	}
	if d.Scans() != 1 {
		t.Fatalf("3 decisions on one version made %d scans, want 1", d.Scans())
	}
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(key) // a key after 15 kB of text: far past any sample
	f.Close()
	if err := e.decide(d, "a.txt"); refusal.CodeOf(err) != refusal.Denied {
		t.Fatalf("a key appended to a decided file: %v, want DENIED", err)
	}
	if d.Scans() != 2 {
		t.Fatalf("a new version made %d scans in all, want 2", d.Scans())
	}
	// Visible answers from the cache for the same version, without a scan.
	var st = statOf(t, p)
	if err := d.Visible(e.g, roots.Path{Root: e.g.Roots()[0], Rel: "a.txt", Shown: "a.txt"}, st); refusal.CodeOf(err) != refusal.Denied || d.Scans() != 2 {
		t.Fatalf("Visible: %v after %d scans", err, d.Scans())
	}
}

// TestAllowGlobs: [sniff] allow_globs admits test keys where the operator
// says; elsewhere the same bytes stay refused.
func TestAllowGlobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "[sniff]\nallow_globs = [\"**/testdata/**\"]\n")
	e.write("pkg/testdata/id_test_key.txt", key)
	e.write("pkg/key.txt", key)
	d := admit.New(16)
	if err := e.decide(d, "pkg/testdata/id_test_key.txt"); err != nil {
		t.Errorf("a key under testdata/: %v, want admitted", err)
	}
	if err := e.decide(d, "pkg/key.txt"); refusal.CodeOf(err) != refusal.Denied {
		t.Errorf("a key elsewhere: %v, want DENIED", err)
	}
}

// TestHardLinks: a second name of a denied file shows nothing; a file
// whose other names are outside the roots is judged like any file (by
// content: a key there is refused), and hidden under "inside"; links
// between allowed names inside the roots are fine with the index; the
// index follows links made and removed.
func TestHardLinks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	outside := filepath.Join(filepath.Dir(e.root), "outside.txt")
	os.WriteFile(outside, []byte("outside\n"), 0o600)
	outKey := filepath.Join(filepath.Dir(e.root), "outside-key")
	os.WriteFile(outKey, []byte(key), 0o600)
	env := e.write(".env", "TOKEN=1\n")
	os.Link(env, filepath.Join(e.root, "notes.txt"))
	os.Link(outside, filepath.Join(e.root, "out-link.txt"))
	os.Link(outKey, filepath.Join(e.root, "out-key.txt"))
	a := e.write("a.txt", "fine\n")
	os.Link(a, filepath.Join(e.root, "b.txt"))

	plain := admit.New(16) // no index: direct mode
	if err := e.decide(plain, "b.txt"); refusal.CodeOf(err) != refusal.Denied || !strings.Contains(err.Error(), `hard_links = "allow"`) {
		t.Errorf("a multi-link file without an index: %v, want DENIED saying how to allow it", err)
	}
	d := admit.New(16)
	idx := admit.NewLinkIndex()
	d.Links = idx
	if err := e.decide(d, "notes.txt"); refusal.CodeOf(err) != refusal.Denied || strings.Contains(err.Error(), ".env") {
		t.Errorf("a link to .env: %v, want DENIED without naming it", err)
	}
	if err := e.decide(d, "out-link.txt"); err != nil {
		t.Errorf("a link to a plain file outside the roots: %v, want it judged like any file (shown)", err)
	}
	if err := e.decide(d, "out-key.txt"); refusal.CodeOf(err) != refusal.Denied {
		t.Errorf("a link to a key outside the roots: %v, want DENIED by content", err)
	}
	if err := e.decide(d, "b.txt"); err != nil {
		t.Errorf("a link between allowed names inside: %v", err)
	}
	// A new name to .env appears under the roots: refused (the index
	// notices the inode's new link count).
	os.Link(a, filepath.Join(filepath.Dir(e.root), "a-outside.txt"))
	os.Link(env, filepath.Join(e.root, "a-copy.txt"))
	if err := e.decide(d, "a-copy.txt"); refusal.CodeOf(err) != refusal.Denied {
		t.Errorf("a link to .env made after the walk: %v, want DENIED", err)
	}
	if err := e.decide(d, "a.txt"); err != nil {
		t.Errorf("after a link outside was made: %v, want shown", err)
	}
	// "inside": a name outside the roots hides the file.
	in := newEnv(t, "[deny]\nhard_links = \"inside\"\n")
	o := filepath.Join(filepath.Dir(in.root), "o.txt")
	os.WriteFile(o, []byte("o\n"), 0o644)
	os.Link(o, filepath.Join(in.root, "o-link.txt"))
	di := admit.New(4)
	di.Links = admit.NewLinkIndex()
	if err := in.decide(di, "o-link.txt"); refusal.CodeOf(err) != refusal.Denied {
		t.Errorf("hard_links = inside, a link outside: %v, want DENIED", err)
	}
	os.Remove(o)
	if err := in.decide(di, "o-link.txt"); err != nil {
		t.Errorf("hard_links = inside, after the outside name was removed: %v", err)
	}
	for mode, want := range map[string]refusal.Code{"strict": refusal.Denied, "allow": ""} {
		m := newEnv(t, "[deny]\nhard_links = \""+mode+"\"\n")
		x := m.write("x.txt", "x\n")
		os.Link(x, filepath.Join(m.root, "y.txt"))
		if err := m.decide(admit.New(4), "y.txt"); refusal.CodeOf(err) != want {
			t.Errorf("hard_links = %q: %v, want %q", mode, err, want)
		}
	}
}

func statOf(t *testing.T, p string) *unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}

// TestKeyAnywhereAroundTheWholeRead: a file up to 128 KiB is decided from
// one read of all of it, a larger one from its sample and a scan of the
// rest. A key at the very end, or cut across the sample's end, of a file
// on either side of those bounds is refused; the same file without the
// key is shown.
func TestKeyAnywhereAroundTheWholeRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	for _, size := range []int{8 << 10, 9 << 10, 100 << 10, 128 << 10, 128<<10 + 1, 300 << 10} {
		for _, at := range []string{"at the end", "across the sample's end"} {
			pad := size - len(key)
			if at != "at the end" {
				if size < 9<<10 {
					continue
				}
				pad = 8<<10 - 20 // the marker ends 20 bytes before the sample does
			}
			body := strings.Repeat("x", pad) + key
			body += strings.Repeat("y", size-len(body))
			name := fmt.Sprintf("k%d-%d.txt", size, len(at))
			e.write(name, body)
			if err := e.decide(admit.New(16), name); refusal.CodeOf(err) != refusal.Denied {
				t.Errorf("%d bytes, key %s: %v, want DENIED", size, at, err)
			}
			e.write("clean-"+name, strings.Repeat("x", size))
			if err := e.decide(admit.New(16), "clean-"+name); err != nil {
				t.Errorf("%d bytes, no key: %v", size, err)
			}
		}
	}
}

// TestListingKeepsWhatItRead: a listing's admission hands Keep the whole
// content of each small file it read to decide, and only those it may
// show: never a key's, never a hard-linked file's, never one past the
// whole-read size. A second listing of decided files reads none of them
// again, unless Keep.Known asks for it (a directory listed again).
func TestListingKeepsWhatItRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "[deny]\nhard_links = \"allow\"\n") // l.txt is shown, and still never kept
	e.write("d/a.txt", "alpha\n")
	e.write("d/b.txt", strings.Repeat("b", 1000))
	e.write("d/big.txt", strings.Repeat("x", 200<<10))
	e.write("d/k.txt", key)
	e.write("d/l.txt", "linked\n")
	if err := os.Link(filepath.Join(e.root, "d/l.txt"), filepath.Join(e.root, "l2.txt")); err != nil {
		t.Fatal(err)
	}
	ents, err := e.g.List(e.g.Roots()[0], "d")
	if err != nil {
		t.Fatal(err)
	}
	d := admit.New(16)
	list := func(known bool) map[string]string {
		got := map[string]string{}
		keep := &admit.Keep{Known: known, Fn: func(rel string, id fileid.Identity, data []byte) {
			if int64(len(data)) != id.Size {
				t.Errorf("%s: kept %d bytes of %d", rel, len(data), id.Size)
			}
			got[rel] = string(data)
		}}
		shown := d.Shown(e.g, roots.Path{Root: e.g.Roots()[0], Rel: "d", Shown: "d"}, ents, nil, keep)
		if len(shown) != 4 {
			t.Fatalf("shown %d entries, want a, b, big and l", len(shown))
		}
		return got
	}
	want := map[string]string{"d/a.txt": "alpha\n", "d/b.txt": strings.Repeat("b", 1000)}
	if got := list(false); !maps.Equal(got, want) {
		t.Errorf("first listing kept %q", slices.Sorted(maps.Keys(got)))
	}
	if got := list(false); len(got) != 0 {
		t.Errorf("a listing of decided files read %q again", slices.Sorted(maps.Keys(got)))
	}
	if got := list(true); !maps.Equal(got, want) {
		t.Errorf("a listing again with Known kept %q", slices.Sorted(maps.Keys(got)))
	}
}

// TestShownInOrderWhileDecidedAtOnce: a listing's files are decided by
// several goroutines; what it shows is still exactly the files that may
// be shown, in the listing's order, with directories and links in place,
// and every key hidden wherever it falls.
func TestShownInOrderWhileDecidedAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	var want []string
	for i := range 200 {
		name := fmt.Sprintf("f%03d.txt", i)
		switch {
		case i%7 == 3:
			e.write("d/"+name, key) // hidden
			continue
		case i%50 == 10:
			name = fmt.Sprintf("f%03d.dir", i)
			os.MkdirAll(filepath.Join(e.root, "d", name), 0o755)
		default:
			e.write("d/"+name, fmt.Sprintf("file %d\n", i))
		}
		want = append(want, name)
	}
	ents, err := e.g.List(e.g.Roots()[0], "d")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	kept := 0
	keep := &admit.Keep{Fn: func(string, fileid.Identity, []byte) { mu.Lock(); kept++; mu.Unlock() }}
	got := admit.New(1024).Shown(e.g, roots.Path{Root: e.g.Roots()[0], Rel: "d", Shown: "d"}, ents, nil, keep)
	var names []string
	for _, g := range got {
		names = append(names, g.Name)
	}
	shown := map[string]bool{}
	for _, w := range want {
		shown[w] = true
	}
	want = want[:0] // in the listing's order
	for _, e := range ents {
		if shown[e.Name] {
			want = append(want, e.Name)
		}
	}
	if !slices.Equal(names, want) {
		t.Fatalf("shown %d names, want %d:\n%q\nwant\n%q", len(names), len(want), names, want)
	}
	if files := len(want) - 3; kept != files { // f060.dir, f110.dir, f160.dir
		t.Errorf("kept %d files' content, want %d", kept, files)
	}
}

// TestOneKeyScanPerVersionAtOnce: decisions on one version that overlap
// (a listing's admission and an agent's open of the same big file) share
// one whole-content scan, and every one of them gets its verdict: the key
// past the sample refuses all of them, the clean file admits all.
func TestOneKeyScanPerVersionAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	body := strings.Repeat("some text\n", 400<<10) // 4 MB: scanned past the sample
	e.write("clean.txt", body)
	e.write("key.txt", body+key)
	for _, c := range []struct {
		name string
		want refusal.Code
	}{{"clean.txt", ""}, {"key.txt", refusal.Denied}} {
		d := admit.New(16)
		var files []*roots.File
		for range 4 {
			f, err := e.g.Open(c.name, e.root)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			files = append(files, f)
		}
		var pending []*admit.Pending
		for _, f := range files {
			pending = append(pending, d.Start(e.g, f))
		}
		for i, p := range pending {
			if _, err := p.Wait(); refusal.CodeOf(err) != c.want {
				t.Errorf("%s, decision %d: %v, want %q", c.name, i, err, c.want)
			}
		}
		if n := d.KeyScans(); n != 1 {
			t.Errorf("%s: 4 overlapping decisions made %d whole-content scans, want 1", c.name, n)
		}
	}
}

// TestShownDirectorySwappedAfterListing is the race a listing's
// directories lose: getdents said directory, and by the time the entry is
// decided the name holds a private key, ordinary text, a link out of the
// root, a FIFO, or nothing. Each is decided as what it is now: the key,
// the link and the FIFO are hidden, the text is shown with its own (a
// regular file's) stat, the gone name is left out; a directory still
// there is shown with its stat.
func TestShownDirectorySwappedAfterListing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	e.write("d/key", key)
	e.write("d/text", "ordinary text\n")
	for _, err := range []error{
		os.Symlink(t.TempDir(), filepath.Join(e.root, "d", "out")),
		unix.Mkfifo(filepath.Join(e.root, "d", "fifo"), 0o644),
		os.Mkdir(filepath.Join(e.root, "d", "dir"), 0o755),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// As getdents read them a moment before: every name a directory.
	var ents []roots.DirEntry
	for _, n := range []string{"key", "text", "out", "fifo", "gone", "dir"} {
		ents = append(ents, roots.DirEntry{Name: n, Mode: unix.S_IFDIR})
	}
	got := map[string]*unix.Stat_t{}
	for _, ent := range admit.New(16).Shown(e.g, roots.Path{Root: e.g.Roots()[0], Rel: "d", Shown: "d"}, ents, nil, nil) {
		got[ent.Name] = ent.Stat
	}
	if len(got) != 2 || got["text"] == nil || got["dir"] == nil {
		t.Fatalf("shown %q, want text and dir", slices.Sorted(maps.Keys(got)))
	}
	if got["text"].Mode&unix.S_IFMT != unix.S_IFREG || got["dir"].Mode&unix.S_IFMT != unix.S_IFDIR {
		t.Errorf("text shown as mode %o, dir as %o", got["text"].Mode, got["dir"].Mode)
	}
}

// TestRefusalsOfTheWholeScanKeepTheirCode: a file past the sample's size
// is scanned whole after the sample; what that scan refuses (more
// credentials than are masked in one file) keeps its own code and advice,
// never turns into a read error.
func TestRefusalsOfTheWholeScanKeepTheirCode(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	var b strings.Builder
	for i := range sniff.MaxMasks + 1 {
		b.WriteString("token = " + sniff.SampleCredentials(int64(i))[0].Value + "\n")
	}
	if b.Len() <= 128<<10 {
		t.Fatalf("the file is %d bytes: not past the sample", b.Len())
	}
	e.write("many.txt", b.String())
	err := e.decide(admit.New(16), "many.txt")
	if refusal.CodeOf(err) != refusal.Denied {
		t.Fatalf("a file of %d credentials: %v (code %s), want DENIED (too many to mask)", sniff.MaxMasks+1, err, refusal.CodeOf(err))
	}
}
