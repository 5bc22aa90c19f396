// Package history finds what a git repository's history holds that the
// view hides: paths the deny list matches in any commit of any ref, and
// private keys and credentials among its blobs (the view masks a
// credential in a file; a git object holding it is served as it is). The mount filters files, not git objects:
// `git show HEAD~1:.env` or `git log -p` through the mount prints whatever
// the object database holds. This package reports it, so an operator can
// rewrite history, or hide the repository's .git ([git] history = "hide").
//
// It asks git itself (log, rev-list, cat-file), as the daemon's user, over
// the repositories found under the roots.
package history

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// Finding is one thing a repository's history exposes.
type Finding struct {
	Path   string `json:"path"`   // in the repository
	Commit string `json:"commit"` // a commit that holds it
	Why    string `json:"why"`    // "denied path" or "private key"
}

// Report is what one repository's history exposes.
type Report struct {
	Root     *roots.Root `json:"-"`
	Repo     string      `json:"repo"` // the working tree, relative to its root
	Findings []Finding   `json:"findings"`
	// Incomplete says the blob scan stopped at the byte budget.
	Incomplete bool `json:"incomplete,omitempty"`
}

// Options bound a scan.
type Options struct {
	// MaxBlobBytes is how many blob bytes the key scan reads per
	// repository (0: 1 GiB); blobs over 4 MiB are not scanned.
	MaxBlobBytes int64
	// Quiet, when set, is called between the scan's steps (a directory of
	// the walk for repositories, a line of git's output, a blob) and
	// returns when the scan may go on: the mount passes a wait for the
	// agent's pause, so the scan does not take the CPU its commands want.
	// Its error ends the scan.
	Quiet func(context.Context) error
	// Repos, when set, gives the working trees a walk of the view
	// already found (the mount's warm walk lists every directory anyway),
	// so the scan does not walk the tree a second time, and the
	// directories that walk did not list (it stopped at its byte budget),
	// which the scan walks itself. ok false: there was no such walk, and
	// the scan walks the whole tree.
	Repos func(context.Context) (found, unlisted []Repo, ok bool)
	// Credentials, when set, finds the credentials a blob holds (the
	// policy's detector, see sniff.Detector): the view shows them masked,
	// but git objects are served as they are, so a blob holding one is
	// reported as a blob holding a key is.
	Credentials func(data []byte) []sniff.Mask
}

// pace is o.Quiet, or nothing to wait for.
func (o Options) pace(ctx context.Context) error {
	if o.Quiet == nil {
		return ctx.Err()
	}
	return o.Quiet(ctx)
}

// Repo is a git working tree: a directory holding a .git directory.
type Repo struct {
	Root *roots.Root
	Rel  string
}

// Path is the working tree's directory, shown at its root's configured
// path.
func (r Repo) Path() roots.Path { return r.Root.At(r.Rel) }

// NotLookedIn reports whether a directory of this name is one the check
// never looks inside for working trees: a .git directory (a repository's
// own files) and node_modules (packages, some with a .git of their own).
// Whoever finds the trees for it (Options.Repos) skips the same.
func NotLookedIn(name string) bool { return name == ".git" || name == "node_modules" }

// repos finds the git working trees under the directories from (a root
// and a directory in it each). It does not look inside the directories
// NotLookedIn names. The walk goes through os.Root: a directory swapped
// for a symbolic link while it walks cannot take it out of the root.
func repos(ctx context.Context, from []Repo, o Options) ([]Repo, error) {
	var out []Repo
	for _, f := range from {
		r := f.Root
		root, err := os.OpenRoot(r.Real)
		if err != nil {
			continue // gone: nothing under it to warn about (as a walk's errors)
		}
		err = fs.WalkDir(root.FS(), f.Rel, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if err := o.pace(ctx); err != nil {
				return err
			}
			if d.Name() == ".git" {
				out = append(out, Repo{r, path.Dir(p)})
			}
			if NotLookedIn(d.Name()) {
				return fs.SkipDir
			}
			return nil
		})
		root.Close()
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// Scan reports what the history of every repository under the roots
// exposes; repositories that expose nothing are left out.
func Scan(ctx context.Context, g *roots.Guard, o Options) ([]Report, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("git is not installed: history cannot be checked")
	}
	var all, unlisted []Repo
	ok := false
	if o.Repos != nil {
		all, unlisted, ok = o.Repos(ctx)
	}
	if !ok {
		all, unlisted = nil, nil
		for _, r := range g.Roots() {
			unlisted = append(unlisted, Repo{r, "."})
		}
	}
	more, err := repos(ctx, unlisted, o)
	if err != nil {
		return nil, err
	}
	all = append(all, more...)
	var out []Report
	for _, repo := range all {
		rep, err := scanRepo(ctx, g, repo.Path(), o)
		if err != nil {
			return out, fmt.Errorf("%s: %w", repo.Path(), err)
		}
		if len(rep.Findings) > 0 || rep.Incomplete {
			out = append(out, rep)
		}
	}
	return out, nil
}

// scanRepo checks the working tree at.
func scanRepo(ctx context.Context, g *roots.Guard, at roots.Path, o Options) (Report, error) {
	rep := Report{Root: at.Root, Repo: at.Rel}
	// Found by a walk, the directory is opened beneath the root now: one
	// swapped for a link since (to another user's repository, or root's)
	// is refused, and git works in the directory opened, not at a path.
	// One the view hides needs no warning: the agent cannot run git on it.
	d, err := g.OpenDir(at)
	if err != nil {
		return rep, nil
	}
	defer d.Close()
	dir := d.File
	seen := map[string]bool{}
	// Paths: every path any commit of any ref touched.
	commit := ""
	err = gitLines(ctx, o, dir, []string{"log", "--all", "--no-renames", "--format=%x00%H", "--name-only"}, func(line string) {
		if strings.HasPrefix(line, "\x00") {
			commit = line[1:]
			return
		}
		if line == "" || seen[line] {
			return
		}
		if g.Denied(at.Root, filepath.Join(at.Rel, line)) {
			seen[line] = true
			rep.Findings = append(rep.Findings, Finding{Path: line, Commit: commit, Why: "denied path"})
		}
	})
	if err != nil {
		return rep, err
	}
	// Blobs: every object of every ref, with the path it was reached by.
	var blobs []string
	paths := map[string]string{}
	err = gitLines(ctx, o, dir, []string{"rev-list", "--all", "--objects"}, func(line string) {
		oid, p, ok := strings.Cut(line, " ")
		if ok && p != "" {
			blobs = append(blobs, oid)
			paths[oid] = p
		}
	})
	if err != nil {
		return rep, err
	}
	budget := o.MaxBlobBytes
	if budget <= 0 {
		budget = 1 << 30
	}
	found, incomplete, err := secretBlobs(ctx, o, dir, blobs, budget)
	if err != nil {
		return rep, err
	}
	rep.Incomplete = incomplete
	for _, b := range found {
		p := paths[b.oid]
		if seen[p] {
			continue
		}
		seen[p] = true
		c, _ := gitOutput(ctx, dir, "log", "--all", "--format=%H", "-1", "--find-object="+b.oid)
		rep.Findings = append(rep.Findings, Finding{Path: p, Commit: strings.TrimSpace(c), Why: b.why})
	}
	sort.Slice(rep.Findings, func(i, j int) bool { return rep.Findings[i].Path < rep.Findings[j].Path })
	return rep, nil
}

// secret is a blob that holds what the view hides, and what it is.
type secret struct{ oid, why string }

// secretBlobs streams blobs through `git cat-file --batch` and returns those
// holding a private key, or a credential when o.Credentials is set.
func secretBlobs(ctx context.Context, o Options, dir *os.File, oids []string, budget int64) ([]secret, bool, error) {
	if len(oids) == 0 {
		return nil, false, nil
	}
	ctx, stop := context.WithCancel(ctx) // a pause's error ends git too
	defer stop()
	cmd := gitCmd(ctx, dir, "cat-file", "--batch")
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return nil, false, err
	}
	go func() {
		w := bufio.NewWriter(in)
		for _, oid := range oids {
			fmt.Fprintln(w, oid)
		}
		w.Flush()
		in.Close()
	}()
	br := bufio.NewReaderSize(outPipe, 1<<20)
	var found []secret
	var buf []byte
	var read int64
	incomplete := false
	var paced error
	for range oids {
		if paced = o.pace(ctx); paced != nil {
			stop()
			break
		}
		header, err := br.ReadString('\n')
		if err != nil {
			break
		}
		f := strings.Fields(header) // oid type size | oid missing
		if len(f) != 3 {
			continue
		}
		size, _ := strconv.ParseInt(f[2], 10, 64)
		body := io.LimitReader(br, size+1) // and the newline after it
		if f[1] != "blob" || size > 4<<20 || read+size > budget {
			if f[1] == "blob" && read+size > budget {
				incomplete = true
			}
			io.Copy(io.Discard, body)
			continue
		}
		// One buffer for every blob: the scan runs beside the mount, and
		// a fresh one per blob (a repository's history is gigabytes) kept
		// the daemon's garbage collector busy under the agent's requests.
		if int64(cap(buf)) < size+1 {
			buf = make([]byte, size+1)
		}
		data := buf[:size+1]
		if _, err := io.ReadFull(body, data); err != nil {
			break
		}
		read += size
		if sniff.HasKey(data[:size]) {
			found = append(found, secret{f[0], "private key"})
		} else if o.Credentials != nil {
			if ms := o.Credentials(data[:size]); len(ms) > 0 {
				found = append(found, secret{f[0], "credential (" + ms[0].Family + ")"})
			}
		}
	}
	io.Copy(io.Discard, br)
	err := cmd.Wait()
	if paced != nil {
		return found, incomplete, paced // git was stopped: its error says only that
	}
	return found, incomplete, err
}

// gitCmd is git in the repository dir, run as the repository's owner: a
// root daemon never runs git (and whatever a repository's configuration
// may make git run) with root's rights on a tree someone else controls,
// and git's safe.directory check sees the owner it expects.
func gitCmd(ctx context.Context, dir *os.File, args ...string) *exec.Cmd {
	// The directory is the child's descriptor 3: /proc/self/fd/3 is where
	// it is, whatever has been renamed or swapped since it was opened.
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", "/proc/self/fd/3"}, args...)...)
	cmd.ExtraFiles = []*os.File{dir}
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "HOME=/nonexistent")
	var st syscall.Stat_t
	if syscall.Fstat(int(dir.Fd()), &st) == nil && os.Geteuid() == 0 && st.Uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: st.Uid, Gid: st.Gid}}
	}
	return cmd
}

func gitOutput(ctx context.Context, dir *os.File, args ...string) (string, error) {
	out, err := gitCmd(ctx, dir, args...).Output()
	return string(out), err
}

// gitLines runs git and calls each for every line of its output, pacing
// itself by o.
func gitLines(ctx context.Context, o Options, dir *os.File, args []string, each func(string)) error {
	ctx, stop := context.WithCancel(ctx) // a pause's error ends git too
	defer stop()
	cmd := gitCmd(ctx, dir, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if err := o.pace(ctx); err != nil {
			stop()
			cmd.Wait()
			return err
		}
		each(sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		if strings.Contains(errb.String(), "does not have any commits") {
			return nil
		}
		return fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return nil
}

// Summary is the one-line warning for a report.
func (r Report) Summary() string {
	var parts []string
	for _, f := range r.Findings {
		parts = append(parts, fmt.Sprintf("%s (%s, commit %.12s)", f.Path, f.Why, f.Commit))
	}
	s := fmt.Sprintf("the git history of %s holds what the view hides: %s; the mount cannot filter git objects (git show, git log -p print them): rewrite the history, or set [git] history = \"hide\"",
		filepath.Join(r.Root.Path, r.Repo), strings.Join(parts, ", "))
	if r.Incomplete {
		s += " (the blob scan stopped at its byte budget)"
	}
	return s
}

// CredentialsUnder is the credential finder pol's [secrets] section asks
// for (Options.Credentials), or nil when it masks none.
func CredentialsUnder(pol *policy.Policy) func(data []byte) []sniff.Mask {
	if !pol.Secrets.Masks() {
		return nil
	}
	d, err := sniff.NewDetector(pol.Secrets)
	if err != nil {
		return nil // refused when the policy loaded: not reached
	}
	return d.Find
}
