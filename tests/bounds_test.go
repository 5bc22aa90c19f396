package tests

import (
	"bufio"
	"bytes"
	be "encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// peakBudget is the most a daemon may hold resident while it answers one
// worst-case request: every request has a memory budget whatever it reads.
const peakBudget = 256 << 20

// TestRequestsBounded reads each format's worst case through a real
// daemon's socket and checks the daemon's peak resident memory (VmHWM)
// stays within peakBudget, and that the answer is a window or a stable
// refusal. Each case has a daemon of its own, so a peak is that case's.
func TestRequestsBounded(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// make builds the attacker's file under root (through the socket
		// when it needs the daemon) and returns the path to read.
		make func(t *testing.T, root, sock string, client clientFunc) string
		// want checks the JSON answer of the read.
		want func(t *testing.T, env map[string]any)
		// daemon: make needs the daemon (it writes through the socket).
		daemon bool
	}{
		{"notebook of empty outputs", func(t *testing.T, root, sock string, client clientFunc) string {
			// Written through the socket, as an agent would.
			nb := emptyOutputsNotebook(60 << 20)
			if _, e, c := client(nb, "write", "x.ipynb"); c != 0 {
				t.Fatalf("write of the notebook: %d %s", c, e)
			}
			return "x.ipynb"
		}, wantWindowOrRefusal("notebook", "TOO_LARGE"), true},
		{"notebook with one 50 MiB output", func(t *testing.T, root, sock string, _ clientFunc) string {
			writeNotebookOneOutput(t, filepath.Join(root, "big.ipynb"), 50<<20)
			return "big.ipynb"
		}, func(t *testing.T, env map[string]any) {
			wantWindowOrRefusal("notebook", "TOO_LARGE")(t, env)
			if env["status"] == "ok" && !strings.Contains(env["text"].(string), "not shown") {
				t.Errorf("the 50 MiB output is not described as cut: %.400s", env["text"])
			}
		}, false},
		{"PNG claiming 60000x60000", func(t *testing.T, root, sock string, _ clientFunc) string {
			writeBombPNG(t, filepath.Join(root, "bomb.png"), 60000, 60000)
			return "bomb.png"
		}, wantWindowOrRefusal("image", "TOO_LARGE"), false},
		{"directory past max_dir_entries", func(t *testing.T, root, sock string, _ clientFunc) string {
			// A listing stops at max_dir_entries (20000) whatever the
			// directory holds: 200k entries cost what 20001 do, and each
			// name takes a slow create here, so the test makes 20001.
			dir := filepath.Join(root, "many")
			os.Mkdir(dir, 0o755)
			for i := range 20001 {
				f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("entry-with-a-longish-name-%07d.txt", i)), os.O_CREATE|os.O_WRONLY, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			return "many"
		}, wantWindowOrRefusal("directory", "TOO_LARGE"), false},
		{"1 GiB single-line text", func(t *testing.T, root, sock string, _ clientFunc) string {
			// Text at the start (what the sniffer samples), then a hole:
			// one line of 1 GiB, cheap to make and to read.
			p := filepath.Join(root, "line.txt")
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(bytes.Repeat([]byte("abcdefgh"), 1<<20))
			f.Truncate(1 << 30)
			f.Close()
			return "line.txt"
		}, wantWindowOrRefusal("file", "TOO_LARGE"), false},
		{"edit of a file of 16 Mi empty lines", editManyLines(16 << 20), wantWindowOrRefusal("file", ""), true},
		{"edit of a file of 1 Mi empty lines", editManyLines(1 << 20), wantWindowOrRefusal("file", ""), true},
		{"masked write of 16 Mi empty lines", func(t *testing.T, root, sock string, client clientFunc) string {
			// A file with a credential is shown masked; a write back
			// restores the secret by matching the lines written to the
			// lines shown.
			writeFile(t, filepath.Join(root, "cfg.txt"), "url = postgres://app:Xk9vTq2mLp7w@db.internal/app\n"+strings.Repeat("\n", 16<<20), 0o644)
			if o, e, c := client("", "read", "cfg.txt", "--limit", "1"); c != 0 || strings.Contains(o, "Xk9vTq2mLp7w") {
				t.Fatalf("read: %d %s %.300s", c, e, o)
			}
			o, e, c := client(strings.Repeat("\n", 16<<20), "write", "cfg.txt", "--format", "json")
			t.Logf("write: exit %d %.300s %.300s", c, o, e)
			return "README.md"
		}, wantWindowOrRefusal("file", ""), true},
		{"write of 64 MiB to a UTF-16 file", func(t *testing.T, root, sock string, client clientFunc) string {
			// A file in UTF-16 is written back in UTF-16: the content
			// sent as UTF-8 is re-encoded.
			utf16 := append([]byte{0xff, 0xfe}, []byte("h\x00i\x00\n\x00")...)
			if err := os.WriteFile(filepath.Join(root, "wide.txt"), utf16, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, e, c := client("", "read", "wide.txt"); c != 0 {
				t.Fatalf("read: %d %s", c, e)
			}
			big := strings.Repeat(strings.Repeat("a", 63)+"\n", (64<<20)/64-1)
			o, e, c := client(big, "write", "wide.txt")
			t.Logf("write: exit %d %.300s %.300s", c, o, e)
			return "README.md"
		}, wantWindowOrRefusal("file", ""), true},
		{"request body of 1 GiB", func(t *testing.T, root, sock string, _ clientFunc) string {
			// A request line that never ends, then a write body that
			// never ends: both must be cut at their caps, not held.
			postHuge(t, sock, "", 1<<30)
			postHuge(t, sock, `{"op":"write","path":"huge.txt","session":"s"}`+"\n", 1<<30)
			return "README.md"
		}, wantWindowOrRefusal("file", ""), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			sock := filepath.Join(f.base, "ctl.sock")
			client := func(stdin string, args ...string) (string, string, int) {
				o, e, code, _ := runBinary(t, f.mp, []string{"FSGUARD_SOCKET=" + sock, "FSGUARD_SESSION=bounds"}, stdin, args...)
				return o, e, code
			}
			path := ""
			if !c.daemon {
				// Made before the daemon starts: a watched directory
				// taking 200k new names is a test of the watch, not of
				// the read.
				path = c.make(t, f.root, sock, client)
			}
			// The warm walk would walk the big directory beside the read:
			// off, so the peak is the read's.
			writePolicy(t, f.policy, []string{f.root}, "[mount]\nwarm_walk = false\n")
			d := startMount(t, f.mp, "--policy", f.policy, "--socket", sock)
			d.log.waitFor(t, `"memory limit"`, 1, 10*time.Second)
			pid := d.cmd.Process.Pid
			resetPeak(t, pid) // the attacker's writes through the socket count too
			before := vmHWM(t, pid)
			if path == "" {
				path = c.make(t, f.root, sock, client)
			}
			out, errs, code := client("", "read", path, "--format", "json")
			peak := vmHWM(t, pid)
			t.Logf("daemon peak RSS %d MiB (%d MiB before the attack); exit %d", peak>>20, before>>20, code)
			if peak > peakBudget {
				t.Errorf("the daemon's peak RSS reached %d MiB reading %s: more than %d MiB", peak>>20, c.name, peakBudget>>20)
			}
			var env map[string]any
			if err := json.Unmarshal([]byte(out), &env); err != nil {
				t.Fatalf("answer is not JSON (exit %d): %.300s %.300s", code, out, errs)
			}
			c.want(t, env)
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
				t.Fatalf("the daemon died: %s", d.log.String())
			}
		})
	}
}

// editManyLines writes, through the socket, a file of n empty lines and
// a last one, then edits the last: an edit plans on the file's lines, and
// each costs a line record whatever its length.
func editManyLines(n int) func(t *testing.T, root, sock string, client clientFunc) string {
	return func(t *testing.T, root, sock string, client clientFunc) string {
		if _, e, c := client(strings.Repeat("\n", n)+"x\n", "write", "lines.txt"); c != 0 {
			t.Fatalf("write of the file: %d %s", c, e)
		}
		o, e, c := client("", "edit", "lines.txt", "--session", "bounds", "--old", "x", "--new", "y", "--format", "json")
		if c != 0 && !strings.Contains(o, "TOO_LARGE") {
			t.Errorf("edit: exit %d, neither done nor TOO_LARGE: %.300s %.300s", c, o, e)
		}
		return "README.md"
	}
}

type clientFunc func(stdin string, args ...string) (string, string, int)

// wantWindowOrRefusal accepts a window of the given type, or a refusal
// with the stable code (none: only a window).
func wantWindowOrRefusal(kind, code string) func(t *testing.T, env map[string]any) {
	return func(t *testing.T, env map[string]any) {
		t.Helper()
		switch env["status"] {
		case "ok":
			if env["type"] != kind {
				t.Errorf("answer type %v, want %s", env["type"], kind)
			}
		case "error":
			if code == "" || env["code"] != code {
				t.Errorf("refusal %v (%v), want a window or %s", env["code"], env["message"], code)
			}
			if msg, _ := env["message"].(string); !strings.Contains(msg, ";") {
				t.Errorf("refusal without advice: %q", msg)
			}
		default:
			t.Errorf("answer %v", env)
		}
	}
}

// resetPeak resets the process's peak RSS to its current RSS (clear_refs 5).
func resetPeak(t *testing.T, pid int) {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Logf("cannot reset the peak RSS (%v): it counts from the daemon's start", err)
	}
}

// vmHWM is the process's peak resident set size in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// emptyOutputsNotebook is a valid nbformat 4 notebook of about size bytes
// made of cells whose outputs are many empty streams: tiny JSON objects
// that cost far more as a decoded tree than as text.
func emptyOutputsNotebook(size int) string {
	var b strings.Builder
	b.Grow(size + 4096)
	b.WriteString(`{"nbformat":4,"nbformat_minor":5,"metadata":{"language_info":{"name":"python"}},"cells":[`)
	out := `{"output_type":"stream","name":"stdout","text":[]},`
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"cell_type":"code","execution_count":1,"metadata":{},"source":["print(1)\n"],"outputs":[`)
		b.WriteString(strings.Repeat(out, 40))
		b.WriteString(`{}]}`)
	}
	b.WriteString("]}\n")
	return b.String()
}

// writeNotebookOneOutput writes a notebook with one cell whose one stream
// output is n bytes of text.
func writeNotebookOneOutput(t *testing.T, path string, n int) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(`{"nbformat":4,"nbformat_minor":5,"metadata":{},"cells":[{"cell_type":"code","execution_count":1,"metadata":{},"source":"print('x' * big)","outputs":[{"output_type":"stream","name":"stdout","text":"`)
	line := strings.Repeat("x", 79) + `\n`
	for written := 0; written < n; written += len(line) {
		w.WriteString(line)
	}
	w.WriteString(`"}]}]}` + "\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

// writeBombPNG writes a PNG whose header claims w x h pixels, followed by
// a little compressed data: decoding it would allocate w*h*4 bytes.
func writeBombPNG(t *testing.T, path string, w, h uint32) {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		be.Write(&b, be.BigEndian, uint32(len(data)))
		c := crc32.NewIEEE()
		c.Write([]byte(typ))
		c.Write(data)
		b.WriteString(typ)
		b.Write(data)
		be.Write(&b, be.BigEndian, c.Sum32())
	}
	ihdr := make([]byte, 13)
	be.BigEndian.PutUint32(ihdr[0:], w)
	be.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	chunk("IHDR", ihdr)
	chunk("IDAT", bytes.Repeat([]byte{0x78, 0x9c}, 512))
	chunk("IEND", nil)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// postHuge sends POST /v1/op declaring a body of n bytes, head first, then
// filler for as long as the daemon takes it, and reads what it answers.
func postHuge(t *testing.T, sock, head string, n int64) {
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Minute)) // a hang guard, not a timing
	fmt.Fprintf(c, "POST /v1/op HTTP/1.1\r\nHost: fsguard\r\nContent-Length: %d\r\n\r\n%s", n, head)
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(io.Discard, c) // the answer, whenever it comes
	}()
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for sent := int64(len(head)); sent < n; sent += int64(len(chunk)) {
		if _, err := c.Write(chunk); err != nil {
			break // the daemon stopped reading: cut at its cap
		}
	}
	c.(*net.UnixConn).CloseWrite()
	<-done
}
