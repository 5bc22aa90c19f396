package tests

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/testenv"
)

// Freshness: what the backing tree holds now is what a reader through the
// mount sees, within the watch's latency, while the kernel keeps caching
// names, attributes, listings and pages for a minute.

// watchBackends are the watches the tests run over; each must be in use,
// not silently replaced by another. "/daemon" also has the daemon open
// files (FOPEN_KEEP_CACHE, passthrough for large ones) instead of the
// kernel.
var watchBackends = []string{"fanotify", "inotify", "fanotify/daemon"}

// freshMount mounts f's root with the given watch backend.
func freshMount(t testing.TB, f *fixture, backend string, args ...string) *daemon {
	t.Helper()
	backend, open, _ := strings.Cut(backend, "/")
	if open == "" {
		open = "kernel"
	}
	writePolicy(t, f.policy, []string{f.root}, fmt.Sprintf("[mount]\nwatch = %q\nopen = %q\n", backend, open))
	d := startMount(t, f.mp, append([]string{"--policy", f.policy}, args...)...)
	want := backend
	if backend == "off" {
		want = ""
	}
	if d.ready["watch"] != want {
		t.Fatalf("watch %q in use, want %q: %s", d.ready["watch"], want, d.log.String())
	}
	return d
}

// shows reports whether the file at p reads as want (nil want: absent,
// both by name and in its directory's listing).
func shows(p string, want []byte) error {
	ents, err := os.ReadDir(filepath.Dir(p))
	if want == nil && errors.Is(err, fs.ErrNotExist) {
		return nil // the directory went too
	}
	if err != nil {
		return err
	}
	listed := slices.ContainsFunc(ents, func(e fs.DirEntry) bool { return e.Name() == filepath.Base(p) })
	b, err := os.ReadFile(p)
	switch {
	case want == nil && (err == nil || listed):
		return fmt.Errorf("%s still there (listed %v, read %v)", p, listed, err)
	case want == nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %v, want ENOENT", p, err)
	case want == nil:
		return nil
	case err != nil:
		return err
	case !listed:
		return fmt.Errorf("%s readable but not listed", p)
	case !bytes.Equal(b, want):
		return fmt.Errorf("%s reads %.40q, want %.40q", p, b, want)
	}
	return nil
}

// TestOwnWritesShowAtOnce: a write through the daemon's socket answers
// only once the kernel forgot the old bytes, so a cat right after it shows
// the new ones, every time. With the watch off, nothing but the write's
// own invalidation can make that so.
func TestOwnWritesShowAtOnce(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"off", "fanotify"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			sock := filepath.Join(f.base, "ctl.sock")
			freshMount(t, f, backend, "--socket", sock)
			env := []string{"FSGUARD_SOCKET=" + sock, "FSGUARD_SESSION=w"}
			p := filepath.Join(f.mp, "src", "main.go")
			if _, e, c, _ := runBinary(t, f.mp, env, "", "read", p); c != 0 {
				t.Fatalf("read: %d %s", c, e)
			}
			for i := range 200 {
				if i%50 == 0 {
					// A new file too: its name must appear in the listing
					// the kernel cached.
					name := filepath.Join(f.mp, "src", fmt.Sprintf("new%d.go", i))
					os.ReadDir(filepath.Dir(name))
					os.Stat(name) // a cached "not there"
					if _, e, c, _ := runBinary(t, f.mp, env, "package new\n", "write", name); c != 0 {
						t.Fatalf("create: %d %s", c, e)
					}
					if err := shows(name, []byte("package new\n")); err != nil {
						t.Fatalf("after creating through the socket: %v", err)
					}
				}
				want := fmt.Sprintf("package main // %d\n", i)
				mustRun(t, "cat", p) // the old bytes are in the page cache
				if _, e, c, _ := runBinary(t, f.mp, env, want, "write", p); c != 0 {
					t.Fatalf("write %d: %d %s", i, c, e)
				}
				if got := mustRun(t, "cat", p); got != want {
					t.Fatalf("write %d: cat right after shows %q, want %q", i, got, want)
				}
			}
		})
	}
}

// TestExternalChangesShow: host editors, build tools and git change the
// backing tree behind the daemon's back; the watch makes the kernel forget
// what it cached, for every kind of change.
func TestExternalChangesShow(t *testing.T) {
	t.Parallel()
	const limit = 5 * time.Second // a hang guard: changes show in ~1-4 ms
	for _, backend := range watchBackends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			freshMount(t, f, backend)
			real := func(p string) string { return filepath.Join(f.root, p) }
			seen := func(p string) string { return filepath.Join(f.mp, p) }
			// Warm every cache the kernel has: names, "not there"s,
			// attributes, listings and pages.
			warm := func(paths ...string) {
				for _, p := range paths {
					os.ReadDir(filepath.Dir(seen(p)))
					os.ReadFile(seen(p))
					os.Stat(seen(p))
				}
			}
			steps := []struct {
				name   string
				change func()
				check  map[string][]byte // path → content; nil: absent
			}{
				{"edit in place, same size", func() { inPlace(t, real("README.md"), "# HELLO\nsee src/\n") },
					map[string][]byte{"README.md": []byte("# HELLO\nsee src/\n")}},
				{"truncate", func() { testenv.Must(t, os.Truncate(real("README.md"), 0)) },
					map[string][]byte{"README.md": {}}},
				{"grow", func() { inPlace(t, real("README.md"), strings.Repeat("grown\n", 30000)) },
					map[string][]byte{"README.md": []byte(strings.Repeat("grown\n", 30000))}},
				{"create", func() { writeFile(t, real("src/new.go"), "package src\n", 0o644) },
					map[string][]byte{"src/new.go": []byte("package src\n")}},
				{"delete", func() { testenv.Must(t, os.Remove(real("src/new.go"))) },
					map[string][]byte{"src/new.go": nil}},
				{"rename", func() { testenv.Must(t, os.Rename(real("src/main.go"), real("src/app.go"))) },
					map[string][]byte{"src/main.go": nil, "src/app.go": []byte("package main\n\nfunc main() {}\n")}},
				{"replace by rename", func() { replace(t, real("src/app.go"), "package app\n") },
					map[string][]byte{"src/app.go": []byte("package app\n")}},
				{"new directory", func() { writeFile(t, real("pkg/sub/x.go"), "package sub\n", 0o644) },
					map[string][]byte{"pkg/sub/x.go": []byte("package sub\n")}},
				{"directory rename", func() { testenv.Must(t, os.Rename(real("pkg"), real("lib"))) },
					map[string][]byte{"pkg/sub/x.go": nil, "pkg": nil, "lib/sub/x.go": []byte("package sub\n")}},
				{"edit in a renamed directory", func() { inPlace(t, real("lib/sub/x.go"), "package sux\n") },
					map[string][]byte{"lib/sub/x.go": []byte("package sux\n")}},
				{"directory delete", func() { testenv.Must(t, os.RemoveAll(real("lib"))) },
					map[string][]byte{"lib/sub/x.go": nil, "lib": nil}},
			}
			for _, s := range steps {
				for p := range s.check {
					warm(p)
				}
				s.change()
				for p, want := range s.check {
					d := testenv.Within(t, limit, s.name+": "+p, func() error {
						if want == nil {
							if _, err := os.Lstat(seen(p)); !errors.Is(err, fs.ErrNotExist) {
								return fmt.Errorf("%s: %v, want ENOENT", p, err)
							}
							return shows(seen(p), nil)
						}
						return shows(seen(p), want)
					})

					t.Logf("%s: %s in %v", s.name, p, d)
				}
			}
		})
	}
}

// TestPolicyFollowsContent: a verdict is of one version of a file; a file
// that turns into a private key, or a new .env, is refused at once.
func TestPolicyFollowsContent(t *testing.T) {
	t.Parallel()
	for _, backend := range watchBackends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			freshMount(t, f, backend)
			p := filepath.Join(f.mp, "src", "main.go")
			if got := mustRun(t, "cat", p); !strings.HasPrefix(got, "package main") {
				t.Fatalf("cat: %q", got)
			}
			inPlace(t, filepath.Join(f.root, "src", "main.go"), "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"+canary+"\n-----END OPENSSH PRIVATE KEY-----\n")
			testenv.Within(t, 5*time.Second, "a file turned into a key", func() error {
				b, err := os.ReadFile(p)
				if bytes.Contains(b, []byte(canary)) {
					t.Fatalf("the key's bytes were served: %q", b)
				}

				if !errors.Is(err, syscall.EACCES) && !errors.Is(err, syscall.ENOENT) {
					return fmt.Errorf("read: %v, want EACCES or ENOENT", err)
				}
				return nil
			})

			env := filepath.Join(f.mp, "src", ".env")
			os.ReadDir(filepath.Dir(env))
			writeFile(t, filepath.Join(f.root, "src", ".env"), canary+"=1\n", 0o644)
			writeFile(t, filepath.Join(f.root, "src", "visible.txt"), "ok\n", 0o644)
			// Once a later change in the same directory shows, the .env's
			// creation was seen too, and must be hidden.
			testenv.Within(t, 5*time.Second, "a file created after the .env", func() error { return shows(filepath.Join(f.mp, "src", "visible.txt"), []byte("ok\n")) })
			if err := shows(env, nil); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(env); err == nil || bytes.Contains(b, []byte(canary)) {
				t.Fatalf("new .env read through the mount: %q %v", b, err)
			}
		})
	}
}

// TestGitCheckoutShows: checking out another branch in the backing tree
// (1,000 files changed, some deleted, some added) shows through the mount
// after every file was read and cached; and so it does while every file is
// held open through the mount (an editor's, a language server's), which
// keeps the kernel's nodes of removed files and directories alive. git
// removes d00 and makes d10 then, and ext4 gives d10 the number d00 had:
// d10 listed nothing but ENOENT until a directory with the number of one
// the kernel holds got a node of its own.
func TestGitCheckoutShows(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	var cases []string
	for _, backend := range watchBackends {
		cases = append(cases, backend, backend+"/held")
	}
	for _, name := range cases {
		backend, hold := strings.CutSuffix(name, "/held")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			repo := filepath.Join(f.root, "repo")
			git := func(args ...string) {
				mustRun(t, "git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-C", repo}, args...)...)
			}
			content := func(branch string, i int) string { return fmt.Sprintf("%s file %d\n", branch, i) }
			path := func(i int) string { return filepath.Join(fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%04d.txt", i)) }
			for i := range 1000 {
				writeFile(t, filepath.Join(repo, path(i)), content("main", i), 0o644)
			}
			git("init", "-q", "-b", "main")
			git("add", ".")
			git("commit", "-qm", "main")
			git("checkout", "-qb", "other")
			for i := range 1000 {
				switch {
				case i%10 == 0:
					testenv.Must(t, os.Remove(filepath.Join(repo, path(i))))
				default:
					writeFile(t, filepath.Join(repo, path(i)), content("other", i), 0o644)
				}
			}
			for i := 1000; i < 1100; i++ {
				writeFile(t, filepath.Join(repo, path(i)), content("other", i), 0o644)
			}
			git("add", "-A")
			git("commit", "-qm", "other")
			git("checkout", "-q", "main")

			freshMount(t, f, backend)
			mrepo := filepath.Join(f.mp, "repo")
			for i := range 1100 {
				os.ReadFile(filepath.Join(mrepo, path(i)))
				if hold {
					if fh, err := os.Open(filepath.Join(mrepo, path(i))); err == nil {
						defer fh.Close()
					}
				}
			}
			for d := range 20 {
				os.ReadDir(filepath.Join(mrepo, fmt.Sprintf("d%02d", d)))
			}
			start := time.Now()
			git("checkout", "-q", "other")
			done := time.Since(start)
			var wrong []string
			took := testenv.Within(t, testenv.HangGuard, "git checkout", func() error {
				wrong = wrong[:0]
				for i := range 1100 {
					var want []byte
					if i >= 1000 || i%10 != 0 {
						want = []byte(content("other", i))
					}
					if err := shows(filepath.Join(mrepo, path(i)), want); err != nil {
						wrong = append(wrong, err.Error())
					}
				}
				if len(wrong) > 0 {
					return fmt.Errorf("%d files wrong, e.g. %s", len(wrong), wrong[0])
				}
				return nil
			})

			t.Logf("git checkout of 1,100 files took %v; the mount showed all of it %v after it finished", done, took)
		})
	}
}

// TestNoWatchFallsBackToShortTimeouts: with no watch the daemon says so
// once, and changes still show: the kernel caches them only for the
// fallback timeout (1 s), not the hour a watched mount gives it. The
// limit below is a hang guard; BenchmarkNoWatchFallback reports how long
// a change takes to show.
func TestNoWatchFallsBackToShortTimeouts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	d := freshMount(t, f, "off")
	// stderr is copied by its own goroutine: the notice may trail the
	// readiness line on stdout.
	d.log.waitFor(t, "no watch of the backing tree", 1, 10*time.Second)
	if n := strings.Count(d.log.String(), "no watch of the backing tree"); n != 1 {
		t.Fatalf("%d notices of the missing watch, want 1:\n%s", n, d.log.String())
	}
	p := filepath.Join(f.mp, "README.md")
	mustRun(t, "cat", p)
	inPlace(t, filepath.Join(f.root, "README.md"), "# changed\n")
	took := testenv.Within(t, testenv.HangGuard, "edit without a watch", func() error { return shows(p, []byte("# changed\n")) })
	writeFile(t, filepath.Join(f.root, "later.txt"), "later\n", 0o644)
	took2 := testenv.Within(t, testenv.HangGuard, "create without a watch", func() error { return shows(filepath.Join(f.mp, "later.txt"), []byte("later\n")) })
	t.Logf("without a watch: an edit showed in %v, a new file in %v", took, took2)
}

// BenchmarkNoWatchFallback is how long an edit of a file the kernel has
// cached takes to show through a mount with no watch (one edit per op):
// the fallback timeout's figure, beside TestNoWatchFallsBackToShortTimeouts.
func BenchmarkNoWatchFallback(b *testing.B) {
	f := newFixture(b)
	freshMount(b, f, "off")
	p := filepath.Join(f.mp, "README.md")
	for i := 0; b.Loop(); i++ {
		mustRun(b, "cat", p) // the kernel caches it
		body := fmt.Sprintf("# changed %d\n", i)
		inPlace(b, filepath.Join(f.root, "README.md"), body)
		testenv.Within(b, testenv.HangGuard, "an edit without a watch", func() error { return shows(p, []byte(body)) })
	}
}

// TestStaleness measures how long a change in the backing tree takes to
// show through the mount: 500 random edits, creates, deletes and renames
// while a reader polls. After a change first shows, no later read may see
// the old state again.
func TestStaleness(t *testing.T) {
	t.Parallel()
	for _, backend := range watchBackends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			dir := filepath.Join(f.root, "w")
			files := map[string][]byte{}
			for i := range 40 {
				name := fmt.Sprintf("f%02d.txt", i)
				files[name] = []byte(strings.Repeat(name+"\n", 1+i*50))
				writeFile(t, filepath.Join(dir, name), string(files[name]), 0o644)
			}
			freshMount(t, f, backend)
			seen := filepath.Join(f.mp, "w")
			for name := range files {
				os.ReadFile(filepath.Join(seen, name))
			}
			rng := rand.New(rand.NewPCG(8, 500))
			var lat []time.Duration
			next := 100
			for op := range 500 {
				names := make([]string, 0, len(files))
				for n := range files {
					names = append(names, n)
				}
				sort.Strings(names)
				pick := names[rng.IntN(len(names))]
				body := []byte(fmt.Sprintf("op %d\n%s", op, strings.Repeat("x", rng.IntN(20000))))
				expect := map[string][]byte{}
				kind := rng.IntN(5)
				if len(files) < 10 {
					kind = 1
				}
				switch kind {
				case 0: // edit in place
					inPlace(t, filepath.Join(dir, pick), string(body))
					files[pick], expect[pick] = body, body
				case 1: // create
					name := fmt.Sprintf("n%03d.txt", next)
					next++
					os.Stat(filepath.Join(seen, name)) // a cached "not there"
					writeFile(t, filepath.Join(dir, name), string(body), 0o644)
					files[name], expect[name] = body, body
				case 2: // delete
					testenv.Must(t, os.Remove(filepath.Join(dir, pick)))
					delete(files, pick)
					expect[pick] = nil
				case 3: // rename
					name := fmt.Sprintf("n%03d.txt", next)
					next++
					testenv.Must(t, os.Rename(filepath.Join(dir, pick), filepath.Join(dir, name)))
					files[name], expect[name], expect[pick] = files[pick], files[pick], nil
					delete(files, pick)
				case 4: // replace by rename, as editors and fsguard write do
					replace(t, filepath.Join(dir, pick), string(body))
					files[pick], expect[pick] = body, body
				}
				changed := time.Now()
				for name, want := range expect {
					p := filepath.Join(seen, name)
					for shows(p, want) != nil {
						if time.Since(changed) > 5*time.Second {
							t.Fatalf("op %d: %s not seen in 5s: %v", op, name, shows(p, want))
						}
					}
				}
				lat = append(lat, time.Since(changed))
				// Once shown, never the old state again.
				for range 3 {
					for name, want := range expect {
						if err := shows(filepath.Join(seen, name), want); err != nil {
							t.Fatalf("op %d: the old state came back after the change showed: %v", op, err)
						}
					}
				}
				// Let the kernel cache this version again, so the next
				// change has something stale to be.
				for name := range expect {
					os.ReadFile(filepath.Join(seen, name))
				}
			}
			slices.Sort(lat)
			p50, p99, worst := lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
			// A figure, not an assertion: the target (p99 ≤ 100 ms) is a
			// benchmark's (docs/BENCHMARKS.md); this test asserts behaviour —
			// every change shows (within a 5 s hang guard) and the old state
			// never comes back — on any machine, however loaded.
			t.Logf("staleness %s: 500 changes, p50 %v, p99 %v, max %v", backend, p50, p99, worst)
		})
	}
}

// inPlace rewrites a file's content without replacing its inode, as a
// build tool or `>` redirection does.
func inPlace(t testing.TB, p, content string) {
	t.Helper()
	fh, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(content); err != nil {
		t.Fatal(err)
	}
	testenv.Must(t, fh.Close())
}

// replace writes a new file and renames it over p, as editors do.
func replace(t testing.TB, p, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".tmp")
	writeFile(t, tmp, content, 0o644)
	testenv.Must(t, os.Rename(tmp, p))
}

// TestReplacedFileNeverMixes: a reader holding a file open while it is
// replaced by a rename (as editors save) reads, natively, the old file. The
// mount cannot open an inode that no name leads to any more; it must never
// serve the new file's bytes under the old file's size and pages instead.
func TestReplacedFileNeverMixes(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"fanotify", "inotify"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			oldText, newText := "old version\n", strings.Repeat("the new version, longer\n", 20)
			writeFile(t, filepath.Join(f.root, "doc.txt"), oldText, 0o644)
			freshMount(t, f, backend)
			p := filepath.Join(f.mp, "doc.txt")
			h, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			replace(t, filepath.Join(f.root, "doc.txt"), newText)
			testenv.Within(t, 10*time.Second, "the new version through a fresh open", func() error { return shows(p, []byte(newText)) })
			buf := make([]byte, 4096)
			n, err := h.ReadAt(buf, 0)
			got := string(buf[:n])
			if got != oldText && (err == nil || err == io.EOF) {
				t.Fatalf("the open file read %q (%v): neither the old file nor an error", got, err)
			}
			t.Logf("the open file read %q, %v", got, err)
		})
	}
}

// TestRenameNeverRevivesTheOldName: a file renamed in the backing tree
// and then read by its new name, before anything told the kernel (here no
// watch: its entries live for the 1 s fallback), must not be reachable by
// its old name again once that name failed. Merged into one node, the old
// name's cached entry would open the file by the new one.
func TestRenameNeverRevivesTheOldName(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dir := filepath.Join(f.root, "w")
	body := func(i int) string { return fmt.Sprintf("file %d\n", i) }
	for i := range 20 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("a%02d.txt", i)), body(i), 0o644)
	}
	freshMount(t, f, "off/daemon")
	seen := filepath.Join(f.mp, "w")
	for i := range 20 {
		a, b := fmt.Sprintf("a%02d.txt", i), fmt.Sprintf("b%02d.txt", i)
		var old syscall.Stat_t
		testenv.Must(t, syscall.Stat(filepath.Join(seen, a), &old)) // the kernel caches the name
		testenv.Must(t, os.Rename(filepath.Join(dir, a), filepath.Join(dir, b)))
		_, before := os.ReadFile(filepath.Join(seen, a))
		got, err := os.ReadFile(filepath.Join(seen, b))
		if err != nil || string(got) != body(i) {
			t.Fatalf("%s after the rename: %q %v", b, got, err)
		}
		var st syscall.Stat_t
		testenv.Must(t, syscall.Stat(filepath.Join(seen, b), &st))
		if st.Ino != old.Ino {
			t.Fatalf("%s shows inode %d, the file had %d under %s: a rename keeps the number", b, st.Ino, old.Ino, a)
		}
		if _, after := os.ReadFile(filepath.Join(seen, a)); before != nil && after == nil {
			t.Fatalf("%s failed (%v), then read the renamed file once %s was looked up", a, before, b)
		}
	}
}

// TestHardLinksShowChangesTogether: two names of one file are one node in
// the mount, as natively one inode: a change the watch reports under one
// name shows under the other, whose pages the kernel caches too.
func TestHardLinksShowChangesTogether(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"fanotify", "inotify"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			a, b := filepath.Join(f.root, "a.txt"), filepath.Join(f.root, "b.txt")
			writeFile(t, a, "one\n", 0o644)
			testenv.Must(t, os.Link(a, b))
			freshMount(t, f, backend)
			for _, p := range []string{"a.txt", "b.txt"} {
				if got := mustRun(t, "cat", filepath.Join(f.mp, p)); got != "one\n" {
					t.Fatalf("%s: %q", p, got)
				}
			}
			inPlace(t, a, "two, longer\n")
			for _, p := range []string{"a.txt", "b.txt"} {
				testenv.Within(t, 5*time.Second, p+" after an edit of a.txt", func() error { return shows(filepath.Join(f.mp, p), []byte("two, longer\n")) })
			}
		})
	}
}

// TestMovedDirectoryNothingCachedBelow: a shell sits in a directory of
// the mount (its working directory) and has read a file there, so the
// kernel caches the directory's listing and the file's name and pages.
// The attacker then renames the directory into a denied subtree (.ssh),
// or out of the root, in the backing tree: from then on nothing in it may
// be listed or read through the held directory, neither the file read
// before nor one written there after the move.
func TestMovedDirectoryNothingCachedBelow(t *testing.T) {
	t.Parallel()
	for _, backend := range watchBackends {
		for _, to := range []string{"denied", "outside"} {
			t.Run(backend+"/"+to, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t)
				writeFile(t, filepath.Join(f.root, "foo", "sub", "x.txt"), "in sub\n", 0o644)
				freshMount(t, f, backend)
				held := holdDir(t, filepath.Join(f.mp, "foo", "sub"))
				if err := held.shows("x.txt", "in sub\n", "x.txt")(); err != nil {
					t.Fatalf("before the move: %v", err)
				}
				dest := filepath.Join(f.root, "home", ".ssh", "foo")
				if to == "outside" {
					dest = filepath.Join(f.outside, "foo")
				}
				testenv.Must(t, os.Rename(filepath.Join(f.root, "foo"), dest))
				writeFile(t, filepath.Join(dest, "sub", "z.txt"), canary+"\n", 0o644)
				testenv.Within(t, 10*time.Second, "the directory moved "+to, held.refuses("x.txt"))
				held.refusesAll(t, "x.txt", "z.txt")
			})
		}
	}
}

// TestRenamedDirectoryKeepsItsReaders: a shell whose directory in the
// mount is renamed in the backing tree goes on working in it, as
// natively: it lists the directory and reads the files in it, new ones
// too, by the node the kernel holds, now named by the new path. Then the
// attacker renames the directory into a denied subtree whose parent the
// kernel holds (so the node moves there too): from then on nothing in it
// is listed or read through the held directory, neither the files read
// before nor one written there after. Only fanotify reports a rename as
// such (FAN_RENAME); on inotify a rename is a removal and an addition
// (TestMovedDirectoryNothingCachedBelow; watch/inotify.go says why).
func TestRenamedDirectoryKeepsItsReaders(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"fanotify", "fanotify/daemon"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			writeFile(t, filepath.Join(f.root, "foo", "sub", "x.txt"), "in sub\n", 0o644)
			writeFile(t, filepath.Join(f.root, "vault", "README"), "the vault\n", 0o644)
			watch, open, _ := strings.Cut(backend, "/")
			if open == "" {
				open = "kernel"
			}
			writePolicy(t, f.policy, []string{f.root}, fmt.Sprintf("[deny]\npaths = [%q]\n[mount]\nwatch = %q\nopen = %q\n", filepath.Join(f.root, "vault", "inner"), watch, open))
			if d := startMount(t, f.mp, "--policy", f.policy); d.ready["watch"] != watch {
				t.Fatalf("watch %q in use, want %q", d.ready["watch"], watch)
			}
			if _, err := os.ReadDir(filepath.Join(f.mp, "vault")); err != nil { // the kernel holds vault
				t.Fatal(err)
			}
			held := holdDir(t, filepath.Join(f.mp, "foo", "sub"))
			testenv.Within(t, 10*time.Second, "the directory before the rename", held.shows("x.txt", "in sub\n", "x.txt"))
			testenv.Must(t, os.Rename(filepath.Join(f.root, "foo"), filepath.Join(f.root, "bar")))
			testenv.Within(t, 10*time.Second, "the renamed directory, through the held one", held.shows("x.txt", "in sub\n", "x.txt"))
			writeFile(t, filepath.Join(f.root, "bar", "sub", "y.txt"), "new here\n", 0o644)
			testenv.Within(t, 10*time.Second, "a file made in the renamed directory", held.shows("y.txt", "new here\n", "x.txt", "y.txt"))

			dest := filepath.Join(f.root, "vault", "inner")
			testenv.Must(t, os.Rename(filepath.Join(f.root, "bar"), dest))
			// Nothing written in it since: only the move can make the
			// kernel drop what it cached there.
			testenv.Within(t, 10*time.Second, "the directory moved into a denied subtree", held.refuses("x.txt"))
			writeFile(t, filepath.Join(dest, "sub", "z.txt"), canary+"\n", 0o644)
			testenv.Within(t, 10*time.Second, "a file written there after the move", held.refuses("z.txt"))
			held.refusesAll(t, "x.txt", "y.txt", "z.txt")
		})
	}
}

// heldDir is a directory of the mount held open, as a shell holds its
// working directory: it is listed and read in through its descriptor.
type heldDir struct{ f *os.File }

func holdDir(t *testing.T, path string) *heldDir {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &heldDir{f}
}

// in lists the directory afresh and, apart from that, reads name in it
// (openat on its descriptor); err is the first of the two errors.
func (h *heldDir) in(name string) ([]string, string, error) {
	var names []string
	fd, err := syscall.Openat(int(h.f.Fd()), ".", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err == nil {
		d := os.NewFile(uintptr(fd), "held")
		names, err = d.Readdirnames(-1)
		d.Close()
		sort.Strings(names)
	}
	var body []byte
	fd, rerr := syscall.Openat(int(h.f.Fd()), name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if rerr == nil {
		r := os.NewFile(uintptr(fd), name)
		body, rerr = io.ReadAll(r)
		r.Close()
	}
	return names, string(body), errors.Join(err, rerr)
}

// shows checks that the directory lists names and that name in it reads
// as body.
func (h *heldDir) shows(name, body string, names ...string) func() error {
	return func() error {
		got, b, err := h.in(name)
		if err != nil || !slices.Equal(got, names) || b != body {
			return fmt.Errorf("lists %q, reads %s as %q (%v); want %q and %q", got, name, b, err, names, body)
		}
		return nil
	}
}

// refuses checks that nothing is listed in the directory and that name
// in it reads nothing.
func (h *heldDir) refuses(name string) func() error {
	return func() error {
		if names, b, err := h.in(name); err == nil || len(names) > 0 || b != "" {
			return fmt.Errorf("lists %q, reads %s as %q (%v); want both refused", names, name, b, err)
		}
		return nil
	}
}

// refusesAll fails the test unless each of names is refused now.
func (h *heldDir) refusesAll(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		if err := h.refuses(name)(); err != nil {
			t.Fatal(err)
		}
	}
}
