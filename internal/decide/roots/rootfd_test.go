package roots

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/refusal"

	"golang.org/x/sys/unix"
)

// TestRootOutlivesCloseWhileInUse: closing a guard (a policy reload) while
// a call is using a root's descriptor leaves that descriptor open — its
// number cannot be handed to an unrelated open — until the call is done;
// calls after that are refused, never made on a stale number.
func TestRootOutlivesCloseWhileInUse(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644)
	g := openGuard(t, root)
	r := g.Roots()[0]
	inUse, release, done := make(chan int), make(chan struct{}), make(chan error)
	go func() {
		done <- r.Use(func(fd int) error {
			inUse <- fd
			<-release
			var st unix.Stat_t
			return unix.Fstat(fd, &st)
		})
	}()
	fd := <-inUse
	g.Close()
	n, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(n)
	if n == fd {
		t.Fatalf("the root's descriptor %d was reused while a call held it", fd)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the call in flight lost its descriptor: %v", err)
	}
	if err := r.Use(func(int) error { return nil }); err == nil {
		t.Fatal("a call after Close was made")
	}
	if _, err := g.Open("a.txt", root); refusal.CodeOf(err) != refusal.ChangedDuringRead {
		t.Fatalf("open after Close: %v, want CHANGED_DURING_READ", err)
	}
}

// TestTempFilesAreNeverShown: a temporary file of a write (in progress, or
// left by a kill) is denied like a deny rule's match; names that merely
// look alike are not.
func TestTempFilesAreNeverShown(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	g := guardFor(t, root)
	r := g.Roots()[0]
	for name, want := range map[string]bool{
		".big.txt.fsguard-0123456789ab": true, "src/.a.go.fsguard-ffffffffffff": true,
		"a.fsguard-0123456789ab": false, ".a.fsguard-0123": false, ".a.fsguard-0123456789aZ": false, "fsguard-notes.md": false,
	} {
		if got := g.Denied(r, name); got != want {
			t.Errorf("Denied(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestOnlySuggestSuggests: the resolver answers a missing name with a
// bare NOT_FOUND, for the mount's questions (Entry) and a named open
// (OpenIn) alike, without listing the directory; near names come only
// from Suggest, which a door that shows the message calls.
func TestOnlySuggestSuggests(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n"), 0o644)
	g := guardFor(t, root)
	r := g.Roots()[0]
	_, err := g.Entry(r, "main.g")
	if refusal.CodeOf(err) != refusal.NotFound || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("Entry: %v", err)
	}
	_, err = g.OpenIn(Path{Root: r, Rel: "main.g", Shown: "/w/main.g"})
	if refusal.CodeOf(err) != refusal.NotFound || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("OpenIn: %v", err)
	}
	if got, want := fmt.Sprint(g.Suggest(err)), `cannot read "/w/main.g": not found; did you mean "/w/main.go"?`; got != want {
		t.Errorf("Suggest:\n got %s\nwant %s", got, want)
	}
	if err := errors.New("x"); g.Suggest(err) != err {
		t.Error("Suggest changed an error that is no refusal")
	}
}

// guardFor is a guard with the embedded default policy over root, closed
// when the test ends.
func guardFor(t *testing.T, root string) *Guard {
	t.Helper()
	g := openGuard(t, root)
	t.Cleanup(func() { g.Close() })
	return g
}

// openGuard is guardFor for a test that closes the guard itself.
func openGuard(t *testing.T, root string) *Guard {
	t.Helper()
	p, err := policy.Default(root)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
