package roots

import "testing"

func TestPathNames(t *testing.T) {
	t.Parallel()
	r := &Root{Path: "/work/src", Real: "/srv/src"}
	p := r.At("a/b.go")
	if p.Shown != "/work/src/a/b.go" || p.String() != p.Shown {
		t.Errorf("At: shown %q, String %q", p.Shown, p.String())
	}
	if got := p.Real(); got != "/srv/src/a/b.go" {
		t.Errorf("Real = %q", got)
	}
	if got := p.Base(); got != "b.go" {
		t.Errorf("Base = %q", got)
	}
	up := p.Parent()
	if up.Root != r || up.Rel != "a" || up.Shown != "/work/src/a" {
		t.Errorf("Parent = %+v", up)
	}
	if top := up.Parent(); top.Rel != "." || top.Shown != "/work/src" {
		t.Errorf("Parent of a = %+v", top)
	}
	if j := r.At(".").Join("c"); j.Rel != "c" || j.Shown != "/work/src/c" {
		t.Errorf("Join at the root = %+v", j)
	}
	shown := Path{Root: r, Rel: "x", Shown: "x"}.In(r, "y/z")
	if shown.Rel != "y/z" || shown.Shown != "x" {
		t.Errorf("In = %+v; want rel y/z shown x", shown)
	}
}
