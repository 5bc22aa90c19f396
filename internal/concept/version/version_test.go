package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	t.Parallel()
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "235966e0123456789abcdef"}
	at := debug.BuildSetting{Key: "vcs.time", Value: "2026-03-04T05:06:07Z"}
	for _, c := range []struct {
		main     string
		settings []debug.BuildSetting
		want     string
	}{
		{"v1.4.0", []debug.BuildSetting{rev, at}, "1.4.0"},
		{"(devel)", nil, "devel"},
		{"", nil, "devel"},
		{"(devel)", []debug.BuildSetting{rev, at}, "devel-20260304.235966e01234"},
		{"(devel)", []debug.BuildSetting{rev}, "devel-235966e01234"},
		{"(devel)", []debug.BuildSetting{rev, at, {Key: "vcs.modified", Value: "true"}}, "devel-20260304.235966e01234+dirty"},
	} {
		if got := fromBuildInfo(c.main, c.settings); got != c.want {
			t.Errorf("fromBuildInfo(%q, %v) = %q, want %q", c.main, c.settings, got, c.want)
		}
	}
}

func TestStampedWins(t *testing.T) {
	old := stamped
	t.Cleanup(func() { stamped = old })
	stamped = "1.2.3"
	if got := String(); got != "1.2.3" {
		t.Fatalf("String() = %q with a stamped version", got)
	}
}
