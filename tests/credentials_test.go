package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsguard/fsguard/internal/concept/charset"
	"github.com/fsguard/fsguard/internal/decide/sniff"
)

// keptLine is a line every corpus file holds beside its credential: a file
// shown masked must still show it.
const keptLine = "the line beside the credential stays as it is"

// credPlacements put a credential where projects keep them. Each returns
// the file's name suffix and content.
var credPlacements = map[string]func(v string) (string, string){
	"code": func(v string) (string, string) {
		return ".go", "package config\n\n// " + keptLine + "\nvar value = " + strconv.Quote(v) + "\n"
	},
	"yaml": func(v string) (string, string) {
		return ".yaml", "# " + keptLine + "\nservice:\n  env:\n    value: " + v + "\n"
	},
	"json": func(v string) (string, string) {
		b, _ := json.Marshal(map[string]string{"note": keptLine, "value": v})
		return ".json", string(b) + "\n"
	},
	"env": func(v string) (string, string) {
		return ".sh", "# " + keptLine + "\nexport VALUE='" + v + "'\n"
	},
	"log": func(v string) (string, string) {
		return ".log", "2026-12-07T05:00:00Z INFO " + keptLine + "\n2026-12-07T05:00:01Z DEBUG using " + v + " for the call\n"
	},
	"notebook": func(v string) (string, string) {
		src, _ := json.Marshal("# " + keptLine + "\nvalue = " + strconv.Quote(v) + "\n")
		return ".ipynb", `{"cells":[{"cell_type":"code","execution_count":1,"metadata":{},"outputs":[],"source":` + string(src) + `}],"metadata":{"language_info":{"name":"python"}},"nbformat":4,"nbformat_minor":5}` + "\n"
	},
	"crlf": func(v string) (string, string) {
		return ".py", "# " + keptLine + "\r\nVALUE = " + strconv.Quote(v) + "\r\n"
	},
	"utf16": func(v string) (string, string) {
		return ".txt", wide("# "+keptLine+"\nvalue: "+v+"\n", charset.UTF16LE)
	},
}

// TestCredentialsNeverReachTheAgent places a fresh credential of every
// family the detector knows in every placement, and reads each file through
// every door an agent has: fsguard read (direct and over the socket),
// MCP, cat, grep -r, dd with O_DIRECT and mmap on the mount, a changed
// re-read's diff, and git through the mount. No secret byte comes back;
// the files are still shown, masked, their other lines intact.
func TestCredentialsNeverReachTheAgent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	samples := sniff.SampleCredentials(20261207)
	if len(samples) < 40 {
		t.Fatalf("%d families: the detector should know at least 40", len(samples))
	}
	secrets := map[string]string{} // file → its secret
	var files []string
	for _, s := range samples {
		for where, place := range credPlacements {
			suffix, content := place(s.Value)
			name := fmt.Sprintf("creds/%s-%s%s", s.Family, where, suffix)
			writeFile(t, filepath.Join(f.root, name), content, 0o644)
			secrets[name] = s.Secret
			files = append(files, name)
		}
	}
	sort.Strings(files)
	leaked := func(out string) []string {
		var hit []string
		for name, s := range secrets {
			if strings.Contains(out, s) {
				hit = append(hit, name)
			}
		}
		sort.Strings(hit)
		return hit
	}
	repo := filepath.Join(f.root, "creds")
	gitRun := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "safe.directory=*"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+f.base)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	gitRun(repo, "init", "-q")
	gitRun(repo, "add", ".")
	gitRun(repo, "commit", "-q", "-m", "config")
	// A repository between two git commands: its .git no longer changing.
	old := time.Now().Add(-time.Hour)
	filepath.Walk(filepath.Join(repo, ".git"), func(p string, _ os.FileInfo, _ error) error { return os.Chtimes(p, old, old) })

	sock := filepath.Join(f.base, "ctl.sock")
	startMount(t, f.mp, "--policy", f.policy, "--socket", sock)
	direct := []string{"FSGUARD_POLICY=" + f.policy, "FSGUARD_JOURNAL=" + filepath.Join(f.base, "direct.db")}

	// fsguard read, direct: every file, as JSON.
	shown := 0
	hidden := map[string]bool{}
	for _, name := range files {
		out, errs, code, _ := runBinary(t, f.root, direct, "", "read", name, "--format", "json")
		if l := leaked(out + errs); len(l) > 0 {
			t.Errorf("fsguard read %s leaks the secret of %v", name, l)
		}
		switch {
		case code == 0 && strings.Contains(out, keptLine) && strings.Contains(out, `"masked":[`):
			shown++
		case code != 0 && strings.Contains(out, `"code":"DENIED"`):
			hidden[name] = true // refused whole (an AWS secret is key material): never shown
		default:
			t.Errorf("fsguard read %s: exit %d, neither shown masked nor refused:\n%.600s%s", name, code, out, errs)
		}
	}
	t.Logf("%d files: %d shown masked, %d refused whole", len(files), shown, len(hidden))
	if shown*10 < len(files)*9 {
		t.Errorf("%d of %d files shown masked with their other lines: want at least 90%%", shown, len(files))
	}
	// Over the socket, and through MCP: a sample of each placement.
	for i, name := range files {
		if i%7 != 0 {
			continue
		}
		out, errs, _, _ := runBinary(t, f.mp, []string{"FSGUARD_SOCKET=" + sock}, "", "read", name)
		if l := leaked(out + errs); len(l) > 0 {
			t.Errorf("fsguard read %s over the socket leaks %v", name, l)
		}
		if i%21 == 0 {
			if l := leaked(mcpRead(t, f.root, f.policy, name)); len(l) > 0 {
				t.Errorf("MCP read of %s leaks %v", name, l)
			}
		}
	}
	// Shell tools on the mount.
	if out, err := run(t, 120*time.Second, "grep", "-r", "", filepath.Join(f.mp, "creds")); err != nil || len(leaked(out)) > 0 {
		t.Errorf("grep -r through the mount: %v, leaks %v", err, leaked(out))
	}
	args := []string{}
	for _, name := range files {
		if !hidden[name] {
			args = append(args, filepath.Join(f.mp, name))
		}
	}
	if out, err := run(t, 120*time.Second, "cat", args...); err != nil || len(leaked(out)) > 0 {
		t.Errorf("cat through the mount: %v, leaks %v", err, leaked(out))
	}
	for _, name := range files {
		p := filepath.Join(f.mp, name)
		if hidden[name] {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("%s is refused by fsguard read but visible through the mount", name)
			}
			continue
		}
		if out, err := run(t, 10*time.Second, "dd", "if="+p, "bs=4096", "iflag=direct", "status=none"); err != nil || len(leaked(out)) > 0 {
			t.Errorf("dd iflag=direct %s leaks", name)
		}
		if m := mmapWhole(t, p); len(leaked(string(m))) > 0 {
			t.Errorf("mmap of %s leaks", name)
		}
		if st, err := os.Stat(p); err != nil || st.Size() != int64(len(mustRead(t, filepath.Join(f.root, name)))) {
			t.Errorf("%s: size through the mount %v, %v: masks keep the size", name, st, err)
		}
	}
	// git through the mount: masks are no change, and no diff shows one.
	mrepo := filepath.Join(f.mp, "creds")
	if out := gitRun(mrepo, "status", "--porcelain"); strings.TrimSpace(out) != "" {
		t.Errorf("git status through the mount: %.500s", out)
	}
	if out := gitRun(mrepo, "diff"); out != "" || len(leaked(out)) > 0 {
		t.Errorf("git diff through the mount: %.500s", out)
	}
	// A changed re-read answers with a diff: the secret on neither side.
	for i, name := range files {
		if i%9 != 0 || strings.HasSuffix(name, ".ipynb") || strings.Contains(name, "utf16") {
			continue
		}
		env := append(direct, "FSGUARD_SESSION=s")
		runBinary(t, f.root, env, "", "read", name)
		p := filepath.Join(f.root, name)
		writeFile(t, p, strings.Replace(string(mustRead(t, p)), keptLine, keptLine+" (changed)", 1), 0o644)
		out, errs, _, _ := runBinary(t, f.root, env, "", "read", name, "--format", "json")
		if l := leaked(out + errs); len(l) > 0 {
			t.Errorf("re-read of %s leaks %v:\n%.400s", name, l, out)
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mmapWhole maps p (through the mount) and returns a copy of what the
// mapping holds.
func mmapWhole(t *testing.T, p string) []byte {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open %s: %v", p, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Size == 0 {
		return nil
	}
	m, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap %s: %v", p, err)
	}
	defer unix.Munmap(m)
	return append([]byte(nil), m...)
}
