package edit

import (
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/held"
	"github.com/fsguard/fsguard/internal/concept/lines"
	"github.com/fsguard/fsguard/internal/concept/refusal"
)

// TestMakeMapsThroughChangesElsewhere: an anchored edit names a line of the
// version the session last held; a line inserted above it since is kept,
// and the edit lands on the line it named, now one lower. A line the
// session never held is refused.
func TestMakeMapsThroughChangesElsewhere(t *testing.T) {
	t.Parallel()
	old := []string{"alpha", "beta", "gamma", "delta"}
	data := []byte("inserted\nalpha\nbeta\ngamma\ndelta\n")
	bom, split := lines.Split(data)
	cur := lines.Texts(split)
	h := held.Lines{Seen: true, Spans: [][2]int64{{1, 4}}}
	b := Older(old, cur, h)
	if b == nil || b.Same {
		t.Fatal("no mapping")
	}
	anchor := "2#" + lines.Anchor("beta")
	p, err := Make("f", data, bom, split, b, held.Lines{}, Edit{Op: "replace", From: anchor, Text: "BETA"}, 200)
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Content) != "inserted\nalpha\nBETA\ngamma\ndelta\n" || p.Start != 3 || !p.Elsewhere {
		t.Fatalf("plan: %q start %d elsewhere %v", p.Content, p.Start, p.Elsewhere)
	}
	notHeld := held.Lines{Seen: true, Spans: [][2]int64{{1, 1}}}
	_, err = Make("f", data, bom, split, Older(old, cur, notHeld), held.Lines{}, Edit{Op: "replace", From: anchor, Text: "x"}, 200)
	if refusal.CodeOf(err) != refusal.NotObserved || !strings.Contains(err.Error(), "not all shown") {
		t.Fatalf("a line never held: %v", err)
	}
}
