package mount

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestListerFollowsNoLink is the attacker's swap, made to have happened:
// a directory the daemon names (the kernel held it) is a link by the time
// the child, which is root, resolves it; here to a directory outside the
// mount, in place of /dev. The child must neither list what the link
// leads to nor open a file there, nor a file that is itself a link; what
// is beneath the mount point, and no link, it lists and counts.
func TestListerFollowsNoLink(t *testing.T) {
	t.Parallel()
	top, outside := t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("outside\n"), 0o644))
	must(t, os.Mkdir(filepath.Join(top, "real"), 0o755))
	must(t, os.WriteFile(filepath.Join(top, "real", "f"), []byte("inside\n"), 0o644))
	must(t, os.Symlink(outside, filepath.Join(top, "a")))
	must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(top, "real", "link")))
	for _, p := range []string{filepath.Join(outside, "secret"), filepath.Join(top, "real", "f")} {
		if _, err := os.ReadFile(p); err != nil { // both in the page cache
			t.Fatal(err)
		}
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() { runLister(top, inR, outW); outW.Close() }()
	defer inW.Close()
	out := bufio.NewReader(outR)
	if _, err := out.ReadString('\n'); err != nil { // the thread id
		t.Fatal(err)
	}
	ask := func(req string, answers int) []string {
		t.Helper()
		if _, err := io.WriteString(inW, req); err != nil {
			t.Fatal(err)
		}
		var got []string
		for len(got) < answers || answers < 0 && (len(got) == 0 || got[len(got)-1] != "z") {
			rec, err := out.ReadString(0)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, strings.TrimSuffix(rec, "\x00"))
		}
		return got
	}
	if got := ask("l"+filepath.Join(top, "a")+"\x00", -1); len(got) != 2 || got[0][0] != 'e' {
		t.Errorf("a listing through a link: %q, want an error", got)
	}
	if got := ask("l"+outside+"\x00", -1); len(got) != 2 || got[0][0] != 'e' {
		t.Errorf("a listing outside the mount point: %q, want an error", got)
	}
	if got := ask("c"+filepath.Join(top, "a")+"\x00secret\x00\x00", 1); got[0] != "0" {
		t.Errorf("pages of a file through a linked directory: %s, want 0 (not opened)", got[0])
	}
	if got := ask("c"+filepath.Join(top, "real")+"\x00link\x00f\x00../a/secret\x00\x00", 3); got[0] != "0" || got[1] != "1" || got[2] != "0" {
		t.Errorf("pages of a link, a file, a name with a slash: %q, want 0 1 0", got)
	}
	if got := ask("l"+filepath.Join(top, "real")+"\x00", -1); len(got) != 3 || !slices.Contains(got, "ff") || !slices.Contains(got, "flink") {
		t.Errorf("the listing of a directory of the mount: %q", got)
	}
}
