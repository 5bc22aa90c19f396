package daemon

import "testing"

// TestMemoryLimit: GOMEMLIMIT wins, then the policy, then the cgroup less
// headroom; nothing is set without any of them.
func TestMemoryLimit(t *testing.T) {
	cg := func(v int64) func() int64 { return func() int64 { return v } }
	t.Setenv("GOMEMLIMIT", "")
	for _, c := range []struct {
		policy, cgroup, want int64
		from                 string
	}{
		{0, 0, 0, ""},
		{512 << 20, 2 << 30, 512 << 20, "policy"},
		{0, 1 << 30, 1<<30 - 128<<20, "cgroup"},
		{0, 8 << 30, 8<<30 - 256<<20, "cgroup"},
	} {
		if got, from := memoryLimit(c.policy, cg(c.cgroup)); got != c.want || from != c.from {
			t.Errorf("policy %d, cgroup %d: %d from %q, want %d from %q", c.policy, c.cgroup, got, from, c.want, c.from)
		}
	}
	t.Setenv("GOMEMLIMIT", "300MiB")
	if got, from := memoryLimit(512<<20, cg(1<<30)); got != 0 || from != "GOMEMLIMIT" {
		t.Errorf("with GOMEMLIMIT: %d from %q", got, from)
	}
}
