package refusal

import (
	"strings"
	"testing"
)

// TestInRendersPathsInAnotherView: a refusal shown in the caller's view maps
// exactly its paths — its own, the suggestions, the list of roots — and
// leaves every other word alone, even one that looks like a host path.
func TestInRendersPathsInAnotherView(t *testing.T) {
	t.Parallel()
	view := func(host string) string {
		if rest, ok := strings.CutPrefix(host, "/srv/p/"); ok {
			return "/workspace/" + rest
		}
		return host
	}
	e := Cannotf(NotFound, "/srv/p/a.go", "not found; did you mean %s? (roots %s; not /srv/p/x: %s)",
		Alternatives{"/srv/p/a.g", "/srv/p/b.go"}, Paths{"/srv/p/"}, "/srv/p/literal")
	got := e.In(view)
	want := `cannot read "/workspace/a.go": not found; did you mean "/workspace/a.g" or "/workspace/b.go"? (roots "/workspace/"; not /srv/p/x: /srv/p/literal)`
	if got.Error() != want || got.Path != "/workspace/a.go" {
		t.Errorf("In:\n got %s (%s)\nwant %s", got.Error(), got.Path, want)
	}
	if e.Error() == got.Error() {
		t.Error("In changed the original")
	}
	if n := New(StaleVersion, "/srv/p/a.go", "cannot modify %q: changed", "/srv/p/a.go"); n.In(view).Error() != `cannot modify "/workspace/a.go": changed` {
		t.Errorf("New's own path argument was not mapped: %s", n.In(view))
	}
}
