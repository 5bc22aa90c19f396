// Package history finds what a git repository's object database and
// index hold that the view hides: paths the deny list matches in any
// commit of any ref, among the staged entries of the index, and in
// commits and trees no ref reaches; and private keys and credentials among
// the blobs of all three (the view masks a credential in a file; a git
// object holding it is served as it is). A staged-but-never-committed
// .env, or a blob left dangling by `git add` then `git reset`, is as
// readable through the mount (`git show :.env`, `git cat-file -p OID`)
// as a committed one. The mount filters files, not git objects:
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
	"errors"
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
	"github.com/fsguard/fsguard/internal/concept/termsafe"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// Finding is one thing a repository's history exposes.
type Finding struct {
	Path   string `json:"path"`             // in the repository; "" for an unreachable blob no tree names
	Commit string `json:"commit,omitempty"` // a commit that holds it (Where "commit")
	Object string `json:"object,omitempty"` // the blob (Where "unreachable")
	// Where is what holds it: "commit" (a commit some ref reaches),
	// "staged" (the index) or "unreachable" (an object no ref reaches:
	// dangling, or only in a reflog).
	Where string `json:"where"`
	Why   string `json:"why"` // "denied path", "private key", "credential (FAMILY)"
}

// Where a finding is.
const (
	InCommit      = "commit"
	InIndex       = "staged"
	InUnreachable = "unreachable"
)

// Report is what one repository's history exposes.
type Report struct {
	Root     *roots.Root `json:"-"`
	Repo     string      `json:"repo"` // the working tree, relative to its root
	Findings []Finding   `json:"findings"`
	// Incomplete says the blob scan stopped at the byte budget, or git
	// could not list every unreachable object (a broken repository), or
	// could not scan the repository at all (Failed says why).
	Incomplete bool `json:"incomplete,omitempty"`
	// Failed is why git could not scan the repository (its owner cannot
	// reach it, it is not a repository git can read): the repository is
	// reported, not skipped, and the scan goes on to the next.
	Failed string `json:"failed,omitempty"`
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
	// Checked, when set, is told of every repository once its scan ends,
	// those that expose nothing included (Scan's answer leaves them out):
	// `fsguard status` lists what was checked, not only what was found.
	Checked func(Report)
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
			if ctx.Err() != nil {
				return out, fmt.Errorf("%s: %w", repo.Path(), err)
			}
			// One repository git cannot scan (the agent can make its own
			// unreadable to git) must not silence the warning for the
			// others: it is reported as not scanned, and the scan goes on.
			rep.Incomplete, rep.Failed = true, err.Error()
		}
		if o.Checked != nil {
			o.Checked(rep)
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
	seen := map[string]bool{} // where+path already reported
	report := func(f Finding) {
		k := f.Where + "\x00" + f.Path
		if f.Path == "" {
			k += "\x00" + f.Object
		}
		if !seen[k] {
			seen[k] = true
			rep.Findings = append(rep.Findings, f)
		}
	}
	denied := func(p string) bool { return p != "" && g.Denied(at.Root, filepath.Join(at.Rel, p)) }
	// Paths: every path any commit of any ref touched.
	commit := ""
	err = gitLines(ctx, o, dir, []string{"log", "--all", "--no-renames", "--no-ext-diff", "--no-textconv", "--format=%x00%H", "--name-only"}, func(line string) {
		if strings.HasPrefix(line, "\x00") {
			commit = line[1:]
			return
		}
		if denied(line) {
			report(Finding{Path: line, Commit: commit, Where: InCommit, Why: "denied path"})
		}
	})
	if err != nil {
		return rep, err
	}
	// Blobs: every object of every ref, with the path it was reached by.
	var blobs []string
	type blobAt struct{ path, where string }
	at2 := map[string]blobAt{}
	add := func(oid, p, where string) {
		if _, ok := at2[oid]; !ok {
			blobs = append(blobs, oid)
			at2[oid] = blobAt{p, where}
		}
	}
	err = gitLines(ctx, o, dir, []string{"rev-list", "--all", "--objects"}, func(line string) {
		oid, p, ok := strings.Cut(line, " ")
		if ok && p != "" {
			add(oid, p, InCommit)
		}
	})
	if err != nil {
		return rep, err
	}
	// The index: every staged entry, committed or not, by name and by
	// content (a blob a commit holds too is scanned once, as the commit's).
	err = gitLinesZ(ctx, o, dir, []string{"ls-files", "--stage", "-z"}, func(entry string) {
		meta, p, ok := strings.Cut(entry, "\t")
		f := strings.Fields(meta) // mode oid stage
		if !ok || len(f) != 3 || f[0] == "160000" {
			return // a submodule's commit: its objects are another repository's
		}
		if denied(p) && !seen[InCommit+"\x00"+p] { // a committed one is named once, by its commit
			report(Finding{Path: p, Where: InIndex, Why: "denied path"})
		}
		add(f[1], p, InIndex)
	})
	if err != nil {
		return rep, err
	}
	// Objects no ref reaches (dangling, or only in a reflog): git works
	// out the difference, so the daemon holds no list of every object.
	var loose, tips []string
	// fsck exits non-zero on a repository with a broken link, which the
	// agent can make: what it listed is used, the report says it is not
	// whole, and the other repositories are still checked.
	ferr := gitLines(ctx, o, dir, []string{"fsck", "--connectivity-only", "--unreachable", "--no-reflogs", "--no-progress"}, func(line string) {
		f := strings.Fields(line) // unreachable TYPE OID
		if len(f) != 3 || f[0] != "unreachable" {
			return
		}
		switch f[1] {
		case "blob":
			loose = append(loose, f[2])
		case "commit", "tree", "tag":
			tips = append(tips, f[1]+" "+f[2])
		}
	})
	if ferr != nil {
		var exit *exec.ExitError
		if !errors.As(ferr, &exit) {
			return rep, ferr // stopped, or git did not start
		}
		rep.Incomplete = true
	}
	// What the unreachable commits and trees name: their paths, by the
	// deny rules, and their blobs' paths. Commits first, for paths from
	// the top of the tree; then the trees no unreachable commit holds (a
	// tree's paths start at itself).
	met := map[string]bool{}
	name := func(line string) {
		oid, p, ok := strings.Cut(line, " ")
		met[oid] = true
		if !ok || p == "" {
			return
		}
		if denied(p) {
			report(Finding{Path: p, Object: oid, Where: InUnreachable, Why: "denied path"})
		}
		add(oid, p, InUnreachable)
	}
	for pass := range 2 {
		var from []string
		for _, t := range tips {
			kind, oid, _ := strings.Cut(t, " ")
			if !met[oid] && (pass == 1) == (kind == "tree") {
				from = append(from, oid)
			}
		}
		if len(from) == 0 {
			continue
		}
		if err := gitLinesIn(ctx, o, dir, []string{"rev-list", "--objects", "--stdin", "--not", "--all"}, from, name); err != nil {
			return rep, err
		}
	}
	for _, oid := range loose {
		add(oid, "", InUnreachable)
	}
	budget := o.MaxBlobBytes
	if budget <= 0 {
		budget = 1 << 30
	}
	found, incomplete, err := secretBlobs(ctx, o, dir, blobs, budget)
	if err != nil {
		return rep, err
	}
	rep.Incomplete = rep.Incomplete || incomplete
	for _, b := range found {
		w := at2[b.oid]
		f := Finding{Path: w.path, Where: w.where, Why: b.why}
		switch w.where {
		case InCommit:
			c, _ := gitOutput(ctx, dir, "log", "--all", "--format=%H", "-1", "--find-object="+b.oid)
			f.Commit = strings.TrimSpace(c)
		case InUnreachable:
			f.Object = b.oid
		}
		report(f)
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool {
		a, b := rep.Findings[i], rep.Findings[j]
		if a.Where != b.Where {
			return a.Where < b.Where
		}
		return a.Path < b.Path
	})
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

// overrides are the settings gitCmd forces.
var overrides = [][2]string{
	{"core.fsmonitor", "false"}, {"core.hooksPath", "/dev/null"}, {"core.untrackedCache", "false"},
	{"core.splitIndex", "false"}, {"log.showSignature", "false"}, {"gpg.program", "false"},
	{"diff.external", ""}, {"core.pager", "cat"}, {"protocol.allow", "never"}, {"core.alternateRefsCommand", ""},
}

// gitCmd is git in the repository dir, run as the repository's owner: a
// root daemon never runs git (and whatever a repository's configuration
// may make git run) with root's rights on a tree someone else controls,
// and git's safe.directory check sees the owner it expects.
//
// The repository's own configuration is the agent's to write, so every
// setting through which git would run a command or show other bytes than
// the object's is overridden in git's command-line scope, which wins
// over any file: core.fsmonitor (run by every command that reads the index: fsck,
// ls-files), core.hooksPath, log.showSignature (runs gpg.program on a
// signed commit), external diff and textconv drivers, the pager. No
// system or global file is read, and replace refs are ignored, so the
// scan reads the bytes an object id names, as `git cat-file` through the
// mount with --no-replace-objects would.
func gitCmd(ctx context.Context, dir *os.File, args ...string) *exec.Cmd {
	// The directory is the child's descriptor 3: /proc/self/fd/3 is where
	// it is, whatever has been renamed or swapped since it was opened.
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", "/proc/self/fd/3"}, args...)...)
	cmd.ExtraFiles = []*os.File{dir}
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1",
		"GIT_NO_REPLACE_OBJECTS=1", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "GIT_PAGER=cat", "GIT_EXTERNAL_DIFF=",
		"HOME=/nonexistent", "GIT_CONFIG_PARAMETERS=")
	// GIT_CONFIG_COUNT settings are git's command-line scope (-c): they
	// win over every file, the repository's own included.
	cmd.Env = append(cmd.Env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(overrides)))
	for i, kv := range overrides {
		cmd.Env = append(cmd.Env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
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
	return gitRun(ctx, o, dir, args, nil, '\n', each)
}

// gitLinesZ is gitLines for output whose records end in NUL (-z): a path
// may hold a newline.
func gitLinesZ(ctx context.Context, o Options, dir *os.File, args []string, each func(string)) error {
	return gitRun(ctx, o, dir, args, nil, 0, each)
}

// gitLinesIn is gitLines with stdin, one line per string (--stdin).
func gitLinesIn(ctx context.Context, o Options, dir *os.File, args, stdin []string, each func(string)) error {
	return gitRun(ctx, o, dir, args, stdin, '\n', each)
}

func gitRun(ctx context.Context, o Options, dir *os.File, args, stdin []string, sep byte, each func(string)) error {
	ctx, stop := context.WithCancel(ctx) // a pause's error ends git too
	defer stop()
	cmd := gitCmd(ctx, dir, args...)
	if stdin != nil {
		cmd.Stdin = strings.NewReader(strings.Join(stdin, "\n") + "\n")
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var errb bytes.Buffer
	cmd.Stderr = &limited{&errb, 64 << 10}
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	if sep != '\n' {
		sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
			if i := bytes.IndexByte(data, sep); i >= 0 {
				return i + 1, data[:i], nil
			}
			if atEOF && len(data) > 0 {
				return len(data), data, nil
			}
			return 0, nil, nil
		})
	}
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
		return fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return nil
}

// limited keeps the first n bytes written to it: git's error output, of a
// repository the agent wrote, is bounded like any other answer.
type limited struct {
	b *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Summary is the one-line warning for a report.
func (r Report) Summary() string {
	where := filepath.Join(r.Root.Path, r.Repo)
	if len(r.Findings) == 0 && r.Failed != "" {
		return fmt.Sprintf("git could not scan the history of %s (%s): what its commits, index and unreachable objects hold is not known; check that the repository's owner can reach it, or set [git] history = \"hide\"",
			where, termsafe.Quote(r.Failed))
	}
	var parts []string
	for _, f := range r.Findings {
		parts = append(parts, f.String())
	}
	s := fmt.Sprintf("the git history of %s holds what the view hides: %s; the mount cannot filter git objects (git show, git log -p, git cat-file print them): rewrite the history, drop what is staged, prune what no ref reaches (git reflog expire --expire-unreachable=now --all; git gc --prune=now), or set [git] history = \"hide\"",
		where, strings.Join(parts, ", "))
	if r.Failed != "" {
		s += fmt.Sprintf(" (git could not scan all of it: %s)", termsafe.Quote(r.Failed))
	} else if r.Incomplete {
		s += " (the scan is not whole: it stopped at its byte budget, or git fsck could not list every unreachable object)"
	}
	return s
}

// String says what the finding is and where: "staged .env (denied path)",
// "unreachable blob 1a2b3c4d5e6f holding a private key".
func (f Finding) String() string {
	// A path is the agent's to choose: quoted where it could rewrite the
	// operator's terminal.
	p := termsafe.Quote(f.Path)
	switch f.Where {
	case InIndex:
		return fmt.Sprintf("staged %s (%s)", p, f.Why)
	case InUnreachable:
		if f.Path == "" {
			return fmt.Sprintf("unreachable blob %.12s holding a %s", f.Object, f.Why)
		}
		return fmt.Sprintf("unreachable %s (%s, object %.12s)", p, f.Why, f.Object)
	}
	return fmt.Sprintf("%s (%s, commit %.12s)", p, f.Why, f.Commit)
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
