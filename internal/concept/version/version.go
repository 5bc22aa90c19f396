// Package version is the one answer to "which fsguard is this", shared by
// --version, the fsguard_build_info metric, the MCP serverInfo and the man
// page, so that they can never disagree.
//
// A release build stamps the string with the linker:
//
//	go build -ldflags "-X github.com/fsguard/fsguard/internal/concept/version.stamped=1.2.3" ./cmd/fsguard
//
// (scripts/version.sh computes it: the tag, else 0.0.0~git<date>.<hash>).
// An unstamped build says what the Go toolchain recorded: the module
// version of a `go install module@version`, else the commit a `go build`
// in a checkout embedded, else plain "devel" (`go run`, no VCS).
package version

import (
	"runtime/debug"
	"strings"
)

// stamped is set by -ldflags -X at release time; empty otherwise.
var stamped string

// String is this build's version.
func String() string {
	if s := strings.TrimSpace(stamped); s != "" {
		return s
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return fromBuildInfo(bi.Main.Version, bi.Settings)
}

// fromBuildInfo is String's answer for an unstamped build. It never looks
// like a release: a source build is "devel-<date>.<commit>", "+dirty" when
// the work tree had changes.
func fromBuildInfo(mainVersion string, settings []debug.BuildSetting) string {
	if mainVersion != "" && mainVersion != "(devel)" {
		return strings.TrimPrefix(mainVersion, "v")
	}
	var rev, at string
	dirty := false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := "devel-"
	if len(at) >= 10 { // RFC 3339: the date is its first ten characters
		v += strings.ReplaceAll(at[:10], "-", "") + "."
	}
	v += rev
	if dirty {
		v += "+dirty"
	}
	return v
}
