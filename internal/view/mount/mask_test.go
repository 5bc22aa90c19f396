package mount

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/decide/sniff"
	"github.com/fsguard/fsguard/internal/testenv"
	"github.com/fsguard/fsguard/internal/view/warm"

	"golang.org/x/sys/unix"
)

// tokenRule finds a GitHub token unmasked: masked, it keeps only its
// "ghp_" prefix.
var tokenRule = regexp.MustCompile(`ghp_[A-Za-z0-9]{36}`)

// tokenOf returns a valid GitHub token (sniff.SampleCredentials: the
// structure and checksum of the real thing), different for each seed.
func tokenOf(seed int) string {
	for _, c := range sniff.SampleCredentials(int64(seed)) {
		if c.Family == "github-pat" {
			return c.Value
		}
	}
	panic("no github-pat among the sample credentials")
}

// masked is data as the view must serve it: masked by the default
// policy's detector, the admission's own.
func masked(t *testing.T, data []byte) []byte {
	t.Helper()
	out := bytes.Clone(data)
	sniff.ApplyMasks(masksOf(t, data), out, 0)
	return out
}

// mountMasking mounts root; extra is more of the [mount] section.
func mountMasking(t *testing.T, root, extra string) (*Server, string) {
	t.Helper()
	mp := filepath.Join(t.TempDir(), "mnt")
	testenv.Must(t, os.Mkdir(mp, 0o755))
	pol, err := parsePolicy([]byte("[[root]]\npath = \"" + root + "\"\n[mount]\n" + extra))
	testenv.Must(t, err)
	s, err := Mount(Config{Policy: pol, MountPoint: mp})
	testenv.Must(t, err)
	t.Cleanup(func() { s.Unmount() })
	return s, mp
}

// withToken is size bytes of text lines with tok at at, a word of its
// own (none: "").
func withToken(size, at int, tok string) []byte {
	b := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog\n"), size/43+1)[:size]
	if tok != "" {
		copy(b[at-1:], " "+tok+" ")
	}
	return b
}

// TestMaskedThroughEveryWay: a file holding a credential reaches a reader
// only masked — by cat, by dd iflag=direct, through a mapping, after the
// warm walk pushed it, and by a READ at every offset and size around the
// mask — with its size unchanged and every other byte as it is; in both
// open modes (daemon mode hands a large file to passthrough unless it has
// masks).
func TestMaskedThroughEveryWay(t *testing.T) {
	testenv.RequireFUSE(t)
	t.Parallel()
	for _, mode := range []string{"kernel", "daemon"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dir := filepath.Join(root, "d")
			files := map[string][]byte{
				"small.txt": withToken(6000, 4096-17, tokenOf(1)),      // pushed whole; the token straddles a page
				"big.txt":   withToken(300<<10, 128<<10-9, tokenOf(2)), // read in large READs; straddles one
				"two.txt":   append(withToken(2000, 10, tokenOf(3)), withToken(2000, 1900, tokenOf(4))...),
			}
			quietDir(t, dir, func() {
				for name, data := range files {
					testenv.Must(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
				}
			})
			s, mp := mountMasking(t, root, "open = \""+mode+"\"\nwarm = true\n")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
			defer cancel()
			s.v.warm.Walk()
			s.v.warm.Walked(ctx) // the warm walk, and its pushes, are done
			if ctx.Err() != nil {
				t.Fatal("the warm walk never ended")
			}
			for name, data := range files {
				want := masked(t, data)
				if bytes.Equal(want, data) {
					t.Fatalf("%s: the test's masks change nothing", name)
				}
				p := filepath.Join(mp, "d", name)
				check := func(how string, got []byte) {
					t.Helper()
					if !bytes.Equal(got, want) {
						t.Errorf("%s by %s: %d bytes, raw token %v, differs from the masked file at byte %d",
							name, how, len(got), tokenRule.Match(got), firstDiff(got, want))
					}
				}
				var st unix.Stat_t
				testenv.Must(t, unix.Stat(p, &st))
				if st.Size != int64(len(data)) {
					t.Errorf("%s: stat says %d bytes, the file has %d", name, st.Size, len(data))
				}
				got, err := os.ReadFile(p)
				testenv.Must(t, err)
				check("cat", got)
				out, err := exec.Command("dd", "if="+p, "iflag=direct", "bs=64k", "status=none").Output()
				testenv.Must(t, err)
				check("dd iflag=direct", out)
				check("mmap", mapWhole(t, p))
				// Every offset and size around each mask, each a READ of
				// its own (O_DIRECT: not from the page cache).
				fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECT, 0)
				testenv.Must(t, err)
				for _, m := range masksOf(t, data) {
					for off := m.Off - 5; off <= m.Off+int64(m.Len)+5; off++ {
						for _, n := range []int{1, 3, m.Len - 4, m.Len + 10, 70 << 10} {
							buf := make([]byte, n)
							k, err := unix.Pread(fd, buf, off)
							if err != nil {
								t.Fatalf("%s: pread %d at %d: %v", name, n, off, err)
							}
							end := min(off+int64(n), int64(len(want)))
							if !bytes.Equal(buf[:k], want[off:end]) {
								t.Errorf("%s: %d bytes at %d: %q, want %q", name, n, off, buf[:min(k, 64)], want[off:min(end, off+64)])
							}
						}
					}
				}
				unix.Close(fd)
			}
			if t.Failed() && s.v.warm.On() {
				t.Logf("pushes were on")
			}
		})
	}
}

// masksOf are the masks of data (see masked).
func masksOf(t *testing.T, data []byte) []sniff.Mask {
	t.Helper()
	pol, err := policy.Default(t.TempDir())
	testenv.Must(t, err)
	det, err := sniff.NewDetector(pol.Secrets)
	testenv.Must(t, err)
	return det.Find(data)
}

// firstDiff is the first offset at which a and b differ.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestMaskedAfterTheChange: a file served clean (its pages cached, and
// pushed again by the watch) that a writer on the host gives a token, in
// place and then by a rename over it, is served masked from then on; the
// raw token is never read.
func TestMaskedAfterTheChange(t *testing.T) {
	testenv.RequireFUSE(t)
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "d")
	clean := withToken(5000, 0, "")
	quietDir(t, dir, func() { testenv.Must(t, os.WriteFile(filepath.Join(dir, "f.txt"), clean, 0o644)) })
	s, mp := mountMasking(t, root, "")
	if !s.v.watched() {
		t.Skip("no watch here: a change shows only as the caches expire")
	}
	p := filepath.Join(mp, "d", "f.txt")
	if _, err := os.ReadDir(filepath.Join(mp, "d")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	testenv.Must(t, err)
	if !bytes.Equal(got, clean) {
		t.Fatal("the clean file reads otherwise")
	}
	change := func(how string, write func(data []byte)) {
		now := withToken(5000, 3000, tokenOf(len(how)))
		write(now)
		want := masked(t, now)
		// Until the change has arrived a read may give the old version, or
		// fail (ESTALE: a name replaced under an open); never the token.
		testenv.Within(t, time.Minute, how+": the masked file shown", func() error {
			got, err := os.ReadFile(p)
			m, merr := mapFile(p)
			if err == nil && tokenRule.Match(got) || merr == nil && tokenRule.Match(m) {
				t.Fatalf("%s: the raw token was read through the mount", how)
			}
			if err == nil && merr == nil && bytes.Equal(got, want) && bytes.Equal(m, want) {
				return nil
			}
			return fmt.Errorf("read: %d bytes, %v; mapped: %d bytes, %v", len(got), err, len(m), merr)
		})
	}
	change("in place", func(data []byte) {
		f, err := os.OpenFile(filepath.Join(dir, "f.txt"), os.O_WRONLY, 0)
		testenv.Must(t, err)
		_, err = f.WriteAt(data, 0)
		testenv.Must(t, err)
		testenv.Must(t, f.Close())
	})
	change("by rename", func(data []byte) {
		tmp := filepath.Join(root, "f.tmp")
		testenv.Must(t, os.WriteFile(tmp, data, 0o644))
		testenv.Must(t, os.Rename(tmp, filepath.Join(dir, "f.txt")))
	})
}

// TestGitSeesNoMasks: git in the view finds no change in a tracked file
// it is served masked — git status and git diff show nothing — as for a
// file the view hides; the index view marks it unchanged.
func TestGitSeesNoMasks(t *testing.T) {
	testenv.RequireFUSE(t)
	t.Parallel()
	root := t.TempDir()
	gitIn := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "safe.directory=*"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+root)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	testenv.Must(t, os.WriteFile(filepath.Join(root, "config.go"), []byte("package x\n\nconst tok = \""+tokenOf(5)+"\"\n"), 0o644))
	testenv.Must(t, os.WriteFile(filepath.Join(root, "main.go"), []byte("package x\n"), 0o644))
	gitIn(root, "init", "-q")
	gitIn(root, "add", ".")
	gitIn(root, "commit", "-q", "-m", "one")
	_, mp := mountMasking(t, root, "")
	got, err := os.ReadFile(filepath.Join(mp, "config.go"))
	testenv.Must(t, err)
	if tokenRule.Match(got) {
		t.Fatal("config.go is served unmasked")
	}
	if out := gitIn(mp, "status", "--porcelain"); out != "" {
		t.Errorf("git status through the mount:\n%s", out)
	}
	if out := gitIn(mp, "diff"); out != "" {
		t.Errorf("git diff through the mount:\n%s", out)
	}
}

// mapWhole maps the file p whole in a child of this test binary and
// returns what the mapping holds (see mapAllEnv).
func mapWhole(t *testing.T, p string) []byte {
	t.Helper()
	out, err := mapFile(p)
	testenv.Must(t, err)
	return out
}

// mapFile is mapWhole, failing with an error.
func mapFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), mapAllEnv+"=1")
	child.ExtraFiles = []*os.File{f}
	var stderr bytes.Buffer
	child.Stderr = &stderr
	out, err := child.Output()
	if err != nil {
		return nil, fmt.Errorf("the mapping child: %v (%s)", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// mapAllEnv, set to "1", makes this test binary map its descriptor 3
// whole, write what the mapping holds, and exit (a child of its own, as
// for mapReadEnv).
const mapAllEnv = "FSGUARD_TEST_MAPALL"

func mapAll() int {
	var st unix.Stat_t
	if err := unix.Fstat(3, &st); err != nil || st.Size == 0 {
		return 2
	}
	mem, err := unix.Mmap(3, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	debug.SetPanicOnFault(true)
	defer func() {
		if recover() != nil {
			os.Exit(3)
		}
	}()
	if _, err := os.Stdout.Write(mem); err != nil {
		b := make([]byte, 10)
		_, perr := unix.Pread(3, b, 0)
		fmt.Fprintln(os.Stderr, err, perr) // EFAULT: a page the kernel could not fill
		return 4
	}
	return 0
}

// TestPushesMasked: a push into the page cache stores the masked bytes,
// whether it reads the file itself (a prefetch, a refill, the push of a
// changed file) or is handed content (a listing's, here the raw bytes):
// the pages a mapping then reads without any READ hold no credential.
func TestPushesMasked(t *testing.T) {
	testenv.RequireFUSE(t)
	needWarm(t)
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "d")
	data := withToken(9000, 4096-20, tokenOf(6))
	quietDir(t, dir, func() { testenv.Must(t, os.WriteFile(filepath.Join(dir, "f.txt"), data, 0o644)) })
	s, mp := mountRoot(t, root, Config{})
	if !s.v.warm.On() {
		t.Skip("no pushes here")
	}
	if _, err := os.ReadDir(filepath.Join(mp, "d")); err != nil {
		t.Fatal(err)
	}
	in := s.root.EmbeddedInode().GetChild("d").GetChild("f.txt")
	if _, ok := nodeOf(in); !ok {
		t.Fatal("the kernel does not hold f.txt after the listing")
	}
	var st unix.Stat_t
	testenv.Must(t, unix.Stat(filepath.Join(dir, "f.txt"), &st))
	want := masked(t, data)
	for _, how := range []string{"read by the push", "handed to the push"} {
		in.NotifyContent(0, 0) // no page left: what is read next is what the push stored
		if how == "read by the push" {
			s.v.push(ref{in}, fileid.Of(&st), nil, make([]byte, warm.MaxPush+1), true)
		} else {
			s.v.push(ref{in}, fileid.Of(&st), bytes.Clone(data), nil, false)
		}
		if got := mapWhole(t, filepath.Join(mp, "d", "f.txt")); !bytes.Equal(got, want) {
			t.Errorf("%s: a mapping reads %d bytes, raw token %v, differing from the masked file at %d", how, len(got), tokenRule.Match(got), firstDiff(got, want))
		}
	}
}
