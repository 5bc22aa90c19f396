package session

import (
	"crypto/sha256"
	"fmt"
	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/service/edit"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/service/read"
	"github.com/fsguard/fsguard/internal/store/blobs"
	"github.com/fsguard/fsguard/internal/store/journal"
)

type env struct {
	t    *testing.T
	root string
	svc  *Service
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	p, err := policy.Default(root)
	if err != nil {
		t.Fatal(err)
	}
	g, err := roots.New(p)
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := blobs.Open(filepath.Join(t.TempDir(), "j.held.db"), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(); j.Close(); g.Close() })
	return &env{t: t, root: root, svc: (&Service{Guard: g, Journal: j, Held: h}).Self()}
}

func (e *env) write(name, content string) string {
	e.t.Helper()
	p := filepath.Join(e.root, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) read(name string, offset, limit int64, session ...string) *ReadResult {
	e.t.Helper()
	sess := "s1"
	if len(session) > 0 {
		sess = session[0]
	}
	r, err := e.svc.Read(ReadRequest{Request: read.Request{Path: name, Offset: offset, Limit: limit, Cwd: e.root}, Session: sess})
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *env) check(name string) refusal.Code {
	e.t.Helper()
	_, err := e.svc.Check(name, e.root, "s1")
	return refusal.CodeOf(err)
}

func TestPreconditions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := e.write("f.txt", "one\ntwo\n")
	if c := e.check("f.txt"); c != refusal.NotObserved {
		t.Fatalf("never read: %s", c)
	}
	e.read("f.txt", 0, 0)
	if c := e.check("f.txt"); c != "" {
		t.Fatalf("after a read: %s", c)
	}
	// A touch moves mtime and ctime but not the content: still fresh.
	later := time.Now().Add(time.Hour)
	os.Chtimes(path, later, later)
	if c := e.check("f.txt"); c != "" {
		t.Fatalf("after touch: %s", c)
	}
	// An edit outside makes it stale; a re-read makes it fresh again.
	os.WriteFile(path, []byte("one\nTWO\n"), 0o644)
	if c := e.check("f.txt"); c != refusal.StaleVersion {
		t.Fatalf("after an edit: %s", c)
	}
	e.read("f.txt", 0, 0)
	if c := e.check("f.txt"); c != "" {
		t.Fatalf("after a re-read: %s", c)
	}
	// Another session has not read it.
	if _, err := e.svc.Check("f.txt", e.root, "s2"); refusal.CodeOf(err) != refusal.NotObserved {
		t.Fatalf("other session: %v", err)
	}
	// Messages say what to do next.
	_, err := e.svc.Check("f.txt", e.root, "s2")
	if !strings.Contains(err.Error(), "has not been read — read the file, then retry") {
		t.Fatalf("message: %v", err)
	}
}

func TestWriteThenWriteAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := e.write("f.txt", "v1\n")
	mode := os.FileMode(0o640)
	os.Chmod(path, mode)
	if _, err := e.svc.Write("f.txt", e.root, "s1", strings.NewReader("v2\n")); refusal.CodeOf(err) != refusal.NotObserved {
		t.Fatalf("write without a read: %v", err)
	}
	e.read("f.txt", 0, 0)
	if _, err := e.svc.Write("f.txt", e.root, "s1", strings.NewReader("v2\n")); err != nil {
		t.Fatal(err)
	}
	// The write recorded the new version: no re-read needed.
	if _, err := e.svc.Write("f.txt", e.root, "s1", strings.NewReader("v3\nmore\n")); err != nil {
		t.Fatalf("second write without a re-read: %v", err)
	}
	b, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if string(b) != "v3\nmore\n" || fi.Mode().Perm() != mode {
		t.Fatalf("content %q mode %v", b, fi.Mode().Perm())
	}
	// No temp files are left behind.
	ents, _ := os.ReadDir(e.root)
	if len(ents) != 1 {
		t.Fatalf("directory holds %d entries", len(ents))
	}
	// A new file needs no read.
	if _, err := e.svc.Write("new.txt", e.root, "s1", strings.NewReader("hi\n")); err != nil {
		t.Fatalf("create: %v", err)
	}
	// But not in a denied place, nor outside, nor through a link out.
	os.Symlink(t.TempDir(), filepath.Join(e.root, "out"))
	for _, name := range []string{".env", "sub/.ssh/x", "../escape.txt", "out/x.txt"} {
		if _, err := e.svc.Write(name, e.root, "s1", strings.NewReader("x")); err == nil {
			t.Errorf("write %s succeeded", name)
		}
	}
}

func TestWriteRefusedWhenTargetChangesBeforeRename(t *testing.T) {
	e := newEnv(t)
	path := e.write("f.txt", "v1\n")
	e.read("f.txt", 0, 0)
	beforeRename = func() { os.WriteFile(path, []byte("someone else\n"), 0o644) }
	defer func() { beforeRename = func() {} }()
	_, err := e.svc.Write("f.txt", e.root, "s1", strings.NewReader("mine\n"))
	if refusal.CodeOf(err) != refusal.StaleVersion {
		t.Fatalf("got %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "someone else\n" {
		t.Fatalf("the other writer's content was clobbered: %q", b)
	}
	// A new file that appears meanwhile is not clobbered either.
	beforeRename = func() { e.write("n.txt", "theirs\n") }
	if _, err := e.svc.Write("n.txt", e.root, "s1", strings.NewReader("mine\n")); refusal.CodeOf(err) != refusal.StaleVersion {
		t.Fatalf("create race: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.root, "n.txt")); string(b) != "theirs\n" {
		t.Fatalf("clobbered: %q", b)
	}
}

// long is n lines long enough that a notice is shorter than they are.
func long(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d of a file whose lines are longer than a notice\n", i)
	}
	return b.String()
}

func TestLedger(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := e.write("f.txt", long(5))
	if r := e.read("f.txt", 0, 0); r.Notice != "" {
		t.Fatal("first read answered with a notice")
	}
	r := e.read("f.txt", 0, 0)
	if r.Notice == "" || !strings.Contains(r.Text(), "you already hold all 5 lines") {
		t.Fatalf("full re-read of an unchanged file: %q", r.Text())
	}
	// --no-dedupe shows the lines.
	r, _ = e.svc.Read(ReadRequest{Request: read.Request{Path: "f.txt", Cwd: e.root}, Session: "s1", NoDedupe: true})
	if r.Notice != "" {
		t.Fatal("--no-dedupe answered with a notice")
	}
	// After an edit the next read delivers the new content.
	os.WriteFile(path, []byte(strings.Replace(long(5), "line 3 ", "three ", 1)), 0o644)
	if r := e.read("f.txt", 0, 0); r.Notice != "" || !strings.Contains(r.Text(), "3: three") {
		t.Fatalf("after an edit: %q", r.Text())
	}
	// Truncation to empty is never "unchanged".
	os.WriteFile(path, nil, 0o644)
	if r := e.read("f.txt", 0, 0); r.Notice != "" {
		t.Fatal("a file truncated to empty was reported unchanged")
	}
	// A notice longer than the lines it stands for is never sent.
	e.write("tiny.txt", "1\n2\n")
	e.read("tiny.txt", 0, 0)
	if r := e.read("tiny.txt", 0, 0); r.Notice != "" || !strings.Contains(r.Text(), "2: 2") {
		t.Fatalf("a tiny held file: %q", r.Text())
	}
}

func TestLedgerNeedsEveryLine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("g.txt", long(5))
	e.read("g.txt", 1, 2)
	if r := e.read("g.txt", 1, 3); r.Notice != "" {
		t.Fatal("a window with a line never handed over was answered with a notice")
	}
	e.read("g.txt", 4, 5) // now every line has been handed over
	if r := e.read("g.txt", 0, 0); !strings.Contains(r.Notice, "you already hold all 5 lines") {
		t.Fatalf("a file held whole in pages was not recognised: %q", r.Notice)
	}
	// Another session holds nothing.
	r, _ := e.svc.Read(ReadRequest{Request: read.Request{Path: "g.txt", Cwd: e.root}, Session: "s2"})
	if r.Notice != "" {
		t.Fatal("the ledger leaked across sessions")
	}
	// A clamped line was not handed over whole.
	e.write("long.txt", strings.Repeat("x", 3000)+"\n")
	e.read("long.txt", 0, 0)
	if r := e.read("long.txt", 0, 0); r.Notice != "" {
		t.Fatal("a file with a clamped line was reported held")
	}
}

// TestLedgerWindows: a window the session holds in this version is
// answered with a notice for that range and the usual footer; an edit
// anywhere in the file makes it a new version, held by nobody.
func TestLedgerWindows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var b strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	e.write("w.txt", b.String())
	e.read("w.txt", 41, 20)
	r := e.read("w.txt", 41, 20)
	if r.Notice != "(Unchanged since your last read - you already hold lines 41-60. Use --no-dedupe to see them again.)" {
		t.Fatalf("notice for a held window: %q", r.Notice)
	}
	txt := r.Text()
	if !strings.Contains(txt, "(Showing lines 41-60 of 100. Use offset=61 to continue.)") || strings.Contains(txt, "line 41") {
		t.Fatalf("a held window's answer: %q", txt)
	}
	if js := string(r.JSON()); !strings.Contains(js, `"continuation":{"path":"w.txt","offset":61,"limit":20}`) || strings.Contains(js, `"lines":[`) {
		t.Fatalf("a held window's JSON lost its continuation: %s", js)
	}
	if r := e.read("w.txt", 45, 10); r.Notice == "" {
		t.Fatal("a window inside a held one was sent again")
	}
	if r := e.read("w.txt", 55, 10); r.Notice != "" {
		t.Fatal("a window reaching past what is held was answered with a notice")
	}
	// An edit far from the window: the window must be sent again.
	e.write("w.txt", strings.Replace(b.String(), "line 99\n", "line 99 edited\n", 1))
	if r := e.read("w.txt", 41, 20); r.Notice != "" || !strings.Contains(r.Text(), "line 41") {
		t.Fatalf("a window held only in an older version was answered with a notice: %q", r.Notice)
	}
	if r := e.read("w.txt", 41, 20, "s-other"); r.Notice != "" {
		t.Fatal("another session was told it holds the window")
	}
}

func TestReadWithoutJournalSaysSo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("f.txt", "x\n")
	e.svc.Journal = nil
	r := e.read("f.txt", 0, 0)
	if len(r.Notes) == 0 || !strings.Contains(r.Notes[len(r.Notes)-1], "nothing was recorded") {
		t.Fatalf("notes: %v", r.Notes)
	}
}

// TestWriteDenyList: files the host runs on its own are refused to write
// and edit with FS_WRITE_DENIED, whether named directly, reached through a
// symlink or new; check says the same; reading them stays allowed.
func TestWriteDenyList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	os.MkdirAll(filepath.Join(e.root, "repo", ".git", "hooks"), 0o755)
	e.write("repo/.git/config", "[core]\n")
	e.write("repo/.envrc", "export A=1\n")
	if err := os.Symlink(".git/config", filepath.Join(e.root, "repo", "cfg")); err != nil {
		t.Fatal(err)
	}
	e.read("repo/.git/config", 1, 0)
	e.read("repo/.envrc", 1, 0)
	e.read("repo/cfg", 1, 0)
	for _, name := range []string{"repo/.git/config", "repo/cfg", "repo/.git/hooks/pre-commit", "repo/.envrc", "repo/.git"} {
		_, err := e.svc.Write(name, e.root, "s1", strings.NewReader("[core]\n\tfsmonitor = x\n"))
		if refusal.CodeOf(err) != refusal.WriteDenied || !strings.Contains(err.Error(), "deny_globs") {
			t.Errorf("write %s: %v, want FS_WRITE_DENIED naming the rule", name, err)
		}
		if _, err := e.svc.Check(name, e.root, "s1"); refusal.CodeOf(err) != refusal.WriteDenied {
			t.Errorf("check %s: %v, want FS_WRITE_DENIED", name, err)
		}
	}
	if _, err := e.svc.Edit("repo/.git/config", e.root, "s1", edit.Edit{Old: "[core]", New: "[x]"}); refusal.CodeOf(err) != refusal.WriteDenied {
		t.Errorf("edit .git/config: %v, want FS_WRITE_DENIED", err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.root, "repo", ".git", "config")); string(b) != "[core]\n" {
		t.Errorf(".git/config changed: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(e.root, "repo", ".git", "hooks", "pre-commit")); err == nil {
		t.Error("a hook was created")
	}
}

// TestImagesAreNeverWholeViews: reading an image describes it; with
// require_whole_view a write to it stays refused (the agent never held its
// bytes as lines), while a plain check passes on the version observed.
func TestImagesAreNeverWholeViews(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A 1x1 PNG's signature and header.
	e.write("pic.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde")
	r := e.read("pic.png", 1, 0)
	if r.Image == nil || r.Observation.WholeFileVisible {
		t.Fatalf("image read: image %v, wholeFileVisible %v", r.Image, r.Observation.WholeFileVisible)
	}
	if _, err := e.svc.Check("pic.png", e.root, "s1"); err != nil {
		t.Errorf("a plain check after the image was read: %v", err)
	}
	strict := *e.svc
	strict.RequireWholeView = true
	if _, err := strict.Check("pic.png", e.root, "s1"); refusal.CodeOf(err) != refusal.NotObserved {
		t.Errorf("require_whole_view check after an image read: %v, want FS_NOT_OBSERVED", err)
	}
}

// TestRecoverResolvesInterruptedWrites: an intent whose writer is gone is
// resolved by the file: written (the session then holds what it wrote) or
// not written; an intent whose writer lives is left alone.
func TestRecoverResolvesInterruptedWrites(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	gone := uint32(dead.Process.Pid)
	done := e.write("done.txt", "the new content\n")
	undone := e.write("undone.txt", "the old content\n")
	id := func(s string) string { return fileid.ContentID(sha256.Sum256([]byte(s))) }
	owner := e.svc.sess("s1").Owner
	for _, r := range []*journal.Record{
		{Kind: journal.KindIntent, Session: "s1", Owner: owner, RealPath: done, ContentID: id("the new content\n"), Writer: gone},
		{Kind: journal.KindIntent, Session: "s1", Owner: owner, RealPath: undone, ContentID: id("the new content\n"), Writer: gone},
		{Kind: journal.KindIntent, Session: "s1", Owner: owner, RealPath: undone, ContentID: id("x"), Writer: uint32(os.Getpid())},
	} {
		if err := e.svc.Journal.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	n, err := e.svc.Recover(false)
	if err != nil || n != 2 {
		t.Fatalf("Recover: %d resolved, %v; want 2", n, err)
	}
	if c := e.check("done.txt"); c != "" {
		t.Errorf("the write that happened is not the session's version: %s", c)
	}
	if c := e.check("undone.txt"); c != refusal.NotObserved {
		t.Errorf("the write that did not happen: %s", c)
	}
	left, _ := e.svc.Journal.Dangling()
	if len(left) != 1 || left[0].Writer != uint32(os.Getpid()) {
		t.Errorf("left dangling: %+v, want only the live writer's", left)
	}
}

// TestRecoverRemovesKilledWritesTemps: a writer killed after its new
// version was named and before the rename leaves that name; Recover removes
// it, found by the name its intent recorded and the intended content, and
// leaves a user's file that merely looks like one: under a name no intent
// recorded, or under a recorded name with other content.
func TestRecoverRemovesKilledWritesTemps(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	gone := uint32(dead.Process.Pid)
	target := e.write("t.txt", "the old content\n")
	dir := filepath.Dir(target)
	id := func(s string) string { return fileid.ContentID(sha256.Sum256([]byte(s))) }
	ours := ".t.txt" + roots.TempMark + "aaaaaaaaaaaa"
	theirs := ".t.txt" + roots.TempMark + "bbbbbbbbbbbb"
	unnamed := ".t.txt" + roots.TempMark + "cccccccccccc"
	for name, content := range map[string]string{ours: "the new content\n", theirs: "a user's own\n", unnamed: "the new content\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	owner := e.svc.sess("s1").Owner
	for _, r := range []*journal.Record{
		{Kind: journal.KindIntent, Session: "s1", Owner: owner, RealPath: target, ContentID: id("the new content\n"), Writer: gone, Temp: ours},
		{Kind: journal.KindIntent, Session: "s1", Owner: owner, RealPath: target, ContentID: id("the new content\n"), Writer: gone, Temp: theirs},
	} {
		if err := e.svc.Journal.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := e.svc.Recover(false); err != nil || n != 2 {
		t.Fatalf("Recover: %d resolved, %v; want 2", n, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, ours)); err == nil {
		t.Error("the killed write's temporary file is still there")
	}
	for _, name := range []string{theirs, unnamed} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
			t.Errorf("a file that only looks like a temporary one (%s) was removed: %v", name, err)
		}
	}
}

// TestRecoverKnowsTheWriterByItsStart: a pid alone does not name the
// writer. An intent naming a live pid with another start time (the pid
// reused) is resolved; one naming this process's pid with no start time
// (an older version's, a container's PID 1 restarted) is resolved at
// start; one naming this process as it is, start time and all, is left.
func TestRecoverKnowsTheWriterByItsStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	target := e.write("r.txt", "the new content\n")
	id := fileid.ContentID(sha256.Sum256([]byte("the new content\n")))
	owner := e.svc.sess("s1").Owner
	self := uint32(os.Getpid())
	reused := &journal.Record{Kind: journal.KindIntent, Session: "s1", Owner: owner, RealPath: target, ContentID: id, Writer: self, WriterStart: selfStart() + 1}
	ours := &journal.Record{Kind: journal.KindIntent, Session: "s1", Owner: owner, RealPath: target, ContentID: id, Writer: self, WriterStart: selfStart()}
	older := &journal.Record{Kind: journal.KindIntent, Session: "s1", Owner: owner, RealPath: target, ContentID: id, Writer: self}
	if err := e.svc.Journal.Append(reused, ours, older); err != nil {
		t.Fatal(err)
	}
	if n, err := e.svc.Recover(false); err != nil || n != 1 {
		t.Fatalf("Recover(false): %d resolved, %v; want 1 (the reused pid's)", n, err)
	}
	if n, err := e.svc.Recover(true); err != nil || n != 1 {
		t.Fatalf("Recover(true): %d resolved, %v; want 1 (the older version's)", n, err)
	}
	left, _ := e.svc.Journal.Dangling()
	if len(left) != 1 || left[0].Seq != ours.Seq {
		t.Errorf("left dangling: %+v, want only this process's own", left)
	}
}

// TestNamedTempsAreFoundAtStart: on a file system without O_TMPFILE a
// write's new version is named from the start; its name is recorded before
// the file is made. A write that completes leaves no intent dangling; one
// killed before its own intent (a temp-name intent dangling, the named
// file holding part of the content) has that file removed by the next
// start; a temp an older version's killed write left (its intent naming
// no temp) is removed when it holds the intended content, and a look-alike
// holding anything else is left.
func TestNamedTempsAreFoundAtStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.svc.noTmpfile = true
	if _, err := e.svc.Write("new.txt", e.root, "s1", strings.NewReader("made named\n")); err != nil {
		t.Fatalf("a write on a file system without O_TMPFILE: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.root, "new.txt")); string(b) != "made named\n" {
		t.Fatalf("new.txt: %q", b)
	}
	if left, _ := e.svc.Journal.Dangling(); len(left) != 0 {
		t.Fatalf("a completed write left %d intents dangling", len(left))
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	gone := uint32(dead.Process.Pid)
	target := e.write("t.txt", "the old content\n")
	dir := filepath.Dir(target)
	killed := ".t.txt" + roots.TempMark + "dddddddddddd"
	older := ".t.txt" + roots.TempMark + "eeeeeeeeeeee"
	lookalike := ".t.txt" + roots.TempMark + "ffffffffffff"
	for name, content := range map[string]string{killed: "the new con", older: "the new content\n", lookalike: "a user's own\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	owner := e.svc.sess("s1").Owner
	id := fileid.ContentID(sha256.Sum256([]byte("the new content\n")))
	if err := e.svc.Journal.Append(
		&journal.Record{Kind: journal.KindIntent, Detail: "temp", Session: "s1", Owner: owner, RealPath: target, Writer: gone, Temp: killed},
		&journal.Record{Kind: journal.KindIntent, Session: "s1", Owner: owner, RealPath: target, ContentID: id, Writer: gone},
	); err != nil {
		t.Fatal(err)
	}
	if n, err := e.svc.Recover(true); err != nil || n != 2 {
		t.Fatalf("Recover: %d resolved, %v; want 2", n, err)
	}
	for _, name := range []string{killed, older} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			t.Errorf("a killed write's temporary file is still there: %s", name)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, lookalike)); err != nil {
		t.Errorf("a file that only looks like a temporary one was removed: %v", err)
	}
}
