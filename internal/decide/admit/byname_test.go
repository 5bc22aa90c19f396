package admit_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/roots"
)

// TestByNameListsUnreadUntilDecided: a listing by name and place shows a
// key whose content nobody decided yet, reading nothing (no scan); once a
// read decided it, the same listing hides it. A denied name and a file
// with other names are decided as before.
func TestByNameListsUnreadUntilDecided(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	e.write("src/plain.txt", "text\n")
	e.write("src/deploy.md", key)
	e.write("src/.env", "A=1\n")
	e.write("src/other.md", key)
	if err := os.Link(filepath.Join(e.root, "src", "other.md"), filepath.Join(e.root, "src", "linked.md")); err != nil {
		t.Fatal(err)
	}
	d := admit.New(64)
	dir := roots.Path{Root: e.g.Roots()[0], Rel: "src", Shown: "/src"}
	list := func() map[string]bool {
		ents, err := e.g.List(dir.Root, dir.Rel)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, x := range d.Shown(e.g, dir, ents, nil, &admit.Keep{ByName: true}) {
			out[x.Name] = true
			if x.Stat == nil {
				t.Errorf("%s listed without the stat it was decided on", x.Name)
			}
		}
		return out
	}
	got := list()
	if !got["plain.txt"] || !got["deploy.md"] || got[".env"] {
		t.Errorf("by name: %v, want plain.txt and deploy.md (unread), no .env", got)
	}
	if got["linked.md"] || got["other.md"] {
		t.Errorf("a key with two names listed by name: its content is decided with its links")
	}
	scans := d.Scans()
	if _, err := d.EntryByName(e.g, dir.Join("deploy.md")); err != nil {
		t.Errorf("LOOKUP by name of an undecided key: %v", err)
	}
	if d.Scans() != scans {
		t.Errorf("deciding by name scanned content (%d scans)", d.Scans()-scans)
	}
	if err := e.decide(d, "src/deploy.md"); err == nil {
		t.Fatal("the key was admitted when read")
	}
	if got := list(); got["deploy.md"] || !got["plain.txt"] {
		t.Errorf("after its read, by name: %v, want deploy.md hidden", got)
	}
	if _, err := d.EntryByName(e.g, dir.Join("deploy.md")); err == nil {
		t.Errorf("LOOKUP by name of a key decided: admitted")
	}
}
