package gitindex

import (
	"crypto/sha1"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestHideSkipsWorktree: with hidden files removed from the working tree
// and the rewritten index in place, git reports nothing deleted, in every
// index version and both object formats, and lists the entries as
// skip-worktree ("S").
func TestHideSkipsWorktree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	t.Parallel()
	for _, tc := range []struct{ name, format, version string }{
		{"v2", "sha1", "2"}, {"v3", "sha1", "3"}, {"v4", "sha1", "4"}, {"sha256", "sha256", "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			git(t, dir, "init", "-q", "--object-format="+tc.format)
			for _, p := range []string{"a.txt", ".env", "keys/id.pem", "src/deep/very-long-name-to-exercise-v4-prefix-compression.go", "src/deep/very-long-name-other.go", "z.txt"} {
				os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
				os.WriteFile(filepath.Join(dir, p), []byte(p+"\n"), 0o644)
			}
			git(t, dir, "add", "-A")
			git(t, dir, "commit", "-qm", "x")
			git(t, dir, "update-index", "--index-version", tc.version)
			idx := filepath.Join(dir, ".git", "index")
			data, _ := os.ReadFile(idx)
			hide := map[string]bool{".env": true, "keys/id.pem": true, "src/deep/very-long-name-other.go": true}
			out, n, err := Hide(data, func(paths []string) []bool {
				h := make([]bool, len(paths))
				for i, p := range paths {
					h[i] = hide[p]
				}
				return h
			})
			if err != nil || n != 3 {
				t.Fatalf("Hide: %d entries, %v", n, err)
			}
			for p := range hide {
				os.Remove(filepath.Join(dir, p))
			}
			os.WriteFile(idx, out, 0o644)
			if st := git(t, dir, "status", "--porcelain"); st != "" {
				t.Fatalf("git status after hiding: %q", st)
			}
			ls := git(t, dir, "ls-files", "-v")
			for p := range hide {
				if !strings.Contains(ls, "S "+p+"\n") {
					t.Errorf("%s not skip-worktree:\n%s", p, ls)
				}
			}
			if !strings.Contains(ls, "H a.txt\n") {
				t.Errorf("a.txt changed:\n%s", ls)
			}
			// The length does not depend on what is hidden, and Size
			// knows it without a decision.
			none, n, err := Hide(data, func(paths []string) []bool { return make([]bool, len(paths)) })
			if err != nil || n != 0 || len(none) != len(out) || Size(data) != int64(len(out)) {
				t.Fatalf("lengths: nothing hidden %d (%d set, %v), three hidden %d, Size %d", len(none), n, err, len(out), Size(data))
			}
			// Nothing hidden: git reads every entry as it was.
			for p := range hide {
				os.WriteFile(filepath.Join(dir, p), []byte(p+"\n"), 0o644)
			}
			os.WriteFile(idx, none, 0o644)
			if st := git(t, dir, "status", "--porcelain"); st != "" {
				t.Fatalf("git status with nothing hidden: %q", st)
			}
			if ls := git(t, dir, "ls-files", "-v"); strings.Contains(ls, "S ") {
				t.Errorf("skip-worktree with nothing hidden:\n%s", ls)
			}
		})
	}
}

// FuzzHide: whatever bytes an index file holds (the backing tree is the
// agent's to write), Hide neither panics nor loops; what it accepts comes
// out as an index it accepts again, with the same paths, of the length
// Size states, with exactly the entries chosen skip-worktree.
func FuzzHide(f *testing.F) {
	if _, err := exec.LookPath("git"); err == nil {
		for _, version := range []string{"2", "3", "4"} {
			dir := f.TempDir()
			git(f, dir, "init", "-q")
			for _, p := range []string{"a.txt", "src/deep/b.go", "src/deep/c.go", "z"} {
				os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
				os.WriteFile(filepath.Join(dir, p), []byte(p), 0o644)
			}
			git(f, dir, "add", "-A")
			git(f, dir, "update-index", "--index-version", version)
			data, _ := os.ReadFile(filepath.Join(dir, ".git", "index"))
			f.Add(data)
		}
	}
	f.Add([]byte("DIRC\x00\x00\x00\x02\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		every := func(paths []string) []bool {
			h := make([]bool, len(paths))
			for i := range h {
				h[i] = i%2 == 0
			}
			return h
		}
		var first []string
		out, n, err := Hide(data, func(paths []string) []bool { first = paths; return every(paths) })
		if err != nil {
			return
		}
		if int64(len(out)) != Size(data) {
			t.Fatalf("Hide made %d bytes, Size says %d", len(out), Size(data))
		}
		again, err := parseAny(out)
		if err != nil {
			t.Fatalf("Hide's own output refused: %v", err)
		}
		if !slices.Equal(first, again.paths) {
			t.Fatalf("paths changed: %q then %q", first, again.paths)
		}
		chosen := every(first)
		for i, e := range again.ents {
			if e.ext&extSkipWorktree == 0 && chosen[i] {
				t.Fatalf("%q chosen, not skip-worktree", first[i])
			}
		}
		if n > len(first) {
			t.Fatalf("%d set of %d entries", n, len(first))
		}
	})
}

// TestHugeCountIsRefused: an index whose header claims four billion
// entries, with a valid checksum, is refused without making room for them
// (room for them is some 200 GB: the test would die making it).
func TestHugeCountIsRefused(t *testing.T) {
	t.Parallel()
	body := []byte("DIRC\x00\x00\x00\x02\xff\xff\xff\xff")
	sum := sha1.Sum(body)
	data := append(body, sum[:]...)
	if _, _, err := Hide(data, func(p []string) []bool { return make([]bool, len(p)) }); err == nil {
		t.Fatal("an index of four billion entries in 12 bytes was accepted")
	}
	if Size(data) != int64(len(data)) {
		t.Errorf("Size of a refused index: %d, want its own %d", Size(data), len(data))
	}
}
