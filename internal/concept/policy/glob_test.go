package policy

import (
	"regexp"
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pat  string
		path string
		want bool
	}{
		{"**/.env", ".env", true},
		{"**/.env", "a/b/.env", true},
		{"**/.env", "a/.envrc", false},
		{"**/.env.*", "x/.env.local", true},
		{"**/.env.*", "x/.env", false},
		{"**/*.pem", "certs/server.pem", true},
		{"**/*.pem", "certs/server.pem.txt", false},
		{"**/id_rsa*", "home/.ssh2/id_rsa.pub", true},
		{"**/.ssh/**", ".ssh", true},
		{"**/.ssh/**", "u/.ssh/config", true},
		{"**/.ssh/**", "u/.sshx/config", false},
		{"**/.env", ".env/child", true}, // a denied directory denies its children
		{"build", "build/out.txt", true},
		{"build", "src/build", false},
		{"src/*.go", "src/a.go", true},
		{"src/*.go", "src/sub/a.go", false},
		{"/etc/**", "/etc/passwd", true},
		{"**", "anything", true},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/c", false},
		{"**/.env", ".", false},
	}
	for _, tt := range tests {
		g, err := CompileGlob(tt.pat)
		if err != nil {
			t.Fatalf("%q: %v", tt.pat, err)
		}
		if got := g.Match(tt.path); got != tt.want {
			t.Errorf("%q.Match(%q) = %v, want %v", tt.pat, tt.path, got, tt.want)
		}
	}
	for _, bad := range []string{"", "a**", "[", "a/../b", "a//b"} {
		if _, err := CompileGlob(bad); err == nil {
			t.Errorf("CompileGlob(%q) accepted a bad pattern", bad)
		}
	}
}

func TestDefaultDenyCompiles(t *testing.T) {
	t.Parallel()
	for _, s := range DefaultDeny {
		if _, err := CompileGlob(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
}

// toRegexp is an independent model of the glob language for the fuzzer:
// full match of one path or of any ancestor.
func toRegexp(pat string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	var segs []string
	for _, s := range strings.Split(strings.Trim(pat, "/"), "/") {
		if s == "**" && len(segs) > 0 && segs[len(segs)-1] == "**" {
			continue // a run of ** is one **
		}
		segs = append(segs, s)
	}
	sep := "" // what goes before the next segment
	for i, s := range segs {
		last := i == len(segs)-1
		if s == "**" {
			if last {
				if i == 0 {
					b.WriteString(".+")
				} else {
					b.WriteString("(?:/.*)?") // zero or more further segments
				}
			} else {
				b.WriteString(sep + "(?:[^/]+/)*")
				sep = ""
			}
			continue
		}
		b.WriteString(sep)
		for _, c := range s {
			switch c {
			case '*':
				b.WriteString("[^/]*")
			case '?':
				b.WriteString("[^/]")
			default:
				b.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		sep = "/"
	}
	b.WriteString("(?:/.*)?$")
	return regexp.MustCompile(b.String())
}

func FuzzGlob(f *testing.F) {
	f.Add("**/.env", "a/.env")
	f.Add("a/**/b/*", "a/x/b/c")
	f.Add("*.go", "x.go/y")
	f.Fuzz(func(t *testing.T, pat, path string) {
		for _, c := range pat + path {
			if !strings.ContainsRune("ab.*?/", c) {
				return
			}
		}
		g, err := CompileGlob(pat)
		if err != nil {
			return
		}
		path = strings.Trim(path, "/")
		if path == "" || strings.Contains(path, "//") {
			return
		}
		for _, seg := range strings.Split(path, "/") {
			if seg == "." || seg == ".." {
				return // callers pass clean paths; "." is the root itself
			}
		}
		want := toRegexp(strings.Trim(g.String(), "/")).MatchString(path)
		if g.Match(path) != want {
			t.Fatalf("%q.Match(%q) = %v, regexp model says %v", pat, path, !want, want)
		}
	})
}
