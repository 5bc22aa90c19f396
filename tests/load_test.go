package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsguard/fsguard/internal/testenv"
)

// TestLoadWithSymlinkSwaps runs 16 concurrent `grep -r` over the mount
// while the backing tree swaps a directory with a symlink to outside
// (RENAME_EXCHANGE) as fast as it can, and readers check stable files
// byte for byte. It runs FSGUARD_LOAD_SECONDS (default 5; the soak script
// uses 60). Zero canary bytes, zero errors on stable files, zero stale
// reads of what a writer changes meanwhile, bounded RSS.
func TestLoadWithSymlinkSwaps(t *testing.T) {
	t.Parallel()
	seconds := 5
	if s := os.Getenv("FSGUARD_LOAD_SECONDS"); s != "" {
		seconds, _ = strconv.Atoi(s)
	}
	base := openDir(t)
	root, outside, mp := filepath.Join(base, "root"), filepath.Join(base, "outside"), filepath.Join(base, "mnt")
	os.Mkdir(mp, 0o755)
	stable := map[string]string{}
	for i := 0; i < 300; i++ {
		name := filepath.Join("stable", fmt.Sprintf("d%d", i%10), fmt.Sprintf("f%03d.txt", i))
		content := strings.Repeat(fmt.Sprintf("stable line of file %d\n", i), 1+i%40)
		stable[name] = content
		writeFile(t, filepath.Join(root, name), content, 0o644)
	}
	for i := 0; i < 50; i++ {
		writeFile(t, filepath.Join(root, "flip", fmt.Sprintf("g%02d.txt", i)), "inside flip\n", 0o644)
		writeFile(t, filepath.Join(outside, fmt.Sprintf("g%02d.txt", i)), canary+"\n", 0o644)
	}
	testenv.Must(t, os.Mkdir(filepath.Join(root, "live"), 0o755))
	if err := os.Symlink(outside, filepath.Join(root, "spare")); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(base, "p.toml")
	writePolicy(t, pol, []string{root}, "")
	// Under a memory limit, as a daemon in a container runs: the runtime
	// then collects before its heap's slack alone reaches the bound below,
	// and what the bound sees is what the daemon keeps. Without it the
	// growth in 5 s followed how much work the load got through, on any
	// build (45-63 MB of the 64 allowed on this stop's base, 45-70 MB on
	// its end, the most in the full run beside other tests; 38-51 MB with
	// it). A leak still shows: 2 KB kept per watch event put the daemon
	// at 285 MB, past the peak bound.
	d := startMountEnv(t, mp, []string{"GOMEMLIMIT=80MiB"}, "--policy", pol)

	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	var swaps, greps, checks, stableErrs, leaks, edits, stale, early atomic.Int64
	// The load runs for its seconds, and on until each part of it has run
	// its least (a loaded machine may give it little in those seconds),
	// within a hang guard.
	hang := deadline.Add(2 * time.Minute)
	running := func() bool {
		now := time.Now()
		if now.Before(deadline) {
			return true
		}
		return now.Before(hang) && (swaps.Load() < 100 || greps.Load() < 16 || edits.Load() < 10)
	}
	var mu sync.Mutex
	var firstErr string
	note := func(s string) {
		mu.Lock()
		if firstErr == "" {
			firstErr = s
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a, b := filepath.Join(root, "flip"), filepath.Join(root, "spare")
		// At most 6,000 a second: the memory bound below means something
		// only for a given churn. Unbounded, the swapper's rate was
		// whatever CPU the daemon left it (37,000-54,000 in 5 s), and the
		// daemon's growth followed it (about 1.35 kB a swap, its heap's
		// slack: 140 MB at the end of a 20 s run, peak 150-170 MB, on the
		// builds before and after the inotify watch got cheaper per event;
		// 53-57 MB of the 64 allowed at 37,000 swaps before, 64.8 MB at
		// 54,000 after).
		for running() && swaps.Load() < int64(6000*seconds) {
			if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
				note("swap: " + err.Error())
				return
			}
			swaps.Add(1)
		}
	}()
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for running() {
				cmd := exec.Command("grep", "-r", "-e", "line", "-e", canary, mp)
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				cmd.Run() // exit 2 is expected: flip/ files vanish mid-walk
				greps.Add(1)
				if bytes.Contains(out.Bytes(), []byte(canary)) || bytes.Contains(errb.Bytes(), []byte(canary)) {
					leaks.Add(1)
				}
				for _, line := range strings.Split(errb.String(), "\n") {
					if strings.Contains(line, "/stable/") {
						stableErrs.Add(1)
						note("grep: " + line)
					}
				}
				if n := strings.Count(out.String(), "/stable/"); n < 300 {
					stableErrs.Add(1)
					note(fmt.Sprintf("grep saw %d stable files", n))
				}
			}
		}()
	}
	// A writer edits the backing tree the whole time, as a host editor or
	// a build does, and waits for each version to show through the mount:
	// once it has, no read may serve the older bytes again. New names come
	// and go, so the kernel's nodes (and the daemon's) must be forgotten.
	wg.Add(1)
	go func() {
		defer wg.Done()
		live := filepath.Join(root, "live")
		for v := 0; running(); v++ {
			name := fmt.Sprintf("l%02d.txt", v%20)
			want := strings.Repeat(fmt.Sprintf("version %d of %s\n", v, name), 1+v%300)
			real := filepath.Join(live, name)
			var err error
			if v%2 == 0 { // in place
				err = os.WriteFile(real, []byte(want), 0o644)
			} else if err = os.WriteFile(real+".tmp", []byte(want), 0o644); err == nil {
				err = os.Rename(real+".tmp", real) // as editors do
			}
			if err == nil {
				err = os.WriteFile(filepath.Join(live, fmt.Sprintf("churn-%d.txt", v)), []byte(want), 0o644)
			}
			if err != nil {
				note("writer: " + err.Error())
				return
			}
			os.Remove(filepath.Join(live, fmt.Sprintf("churn-%d.txt", v-5)))
			seen := filepath.Join(mp, "live", name)
			changed := time.Now()
			for {
				got, err := os.ReadFile(seen)
				if err == nil && string(got) == want {
					break
				}
				if time.Since(changed) > 5*time.Second { // a hang guard
					stableErrs.Add(1)
					note(fmt.Sprintf("%s version %d not visible after 5s: %v", name, v, err))
					break
				}
			}
			for range 2 {
				if got, err := os.ReadFile(seen); err != nil || string(got) != want {
					stale.Add(1)
					note(fmt.Sprintf("%s served older bytes after version %d showed: %v %.30q", name, v, err, got))
				}
			}
			edits.Add(1)
			if v == 50 {
				early.Store(rssNow(d.cmd.Process.Pid))
			}
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for running() {
			for name, want := range stable {
				got, err := os.ReadFile(filepath.Join(mp, name))
				if err != nil || string(got) != want {
					stableErrs.Add(1)
					note(fmt.Sprintf("read %s: %v (%d bytes)", name, err, len(got)))
				}
				checks.Add(1)
			}
		}
	}()
	wg.Wait()
	rss, end := peakRSS(d.cmd.Process.Pid), rssNow(d.cmd.Process.Pid)
	t.Logf("%ds: %d swaps, %d grep -r runs, %d stable file checks, %d edits of the backing tree; daemon RSS %d kB after 50 edits, %d kB at the end, peak %d kB",
		seconds, swaps.Load(), greps.Load(), checks.Load(), edits.Load(), early.Load(), end, rss)
	if stale.Load() > 0 {
		t.Errorf("%d reads served older bytes after the change was visible; first: %s", stale.Load(), firstErr)
	}
	if e := early.Load(); e > 0 && end > e+64<<10 {
		t.Errorf("daemon RSS grew from %d kB to %d kB while the writer churned names", e, end)
	}
	if leaks.Load() > 0 {
		t.Errorf("%d grep runs returned canary bytes", leaks.Load())
	}
	if stableErrs.Load() > 0 {
		t.Errorf("%d errors on stable, allowed files; first: %s", stableErrs.Load(), firstErr)
	}
	if swaps.Load() < 100 || greps.Load() < 16 || edits.Load() < 10 {
		t.Errorf("the load did not run: %d swaps, %d greps, %d edits", swaps.Load(), greps.Load(), edits.Load())
	}
	if rss > 256<<10 {
		t.Errorf("daemon peak RSS %d kB exceeds 256 MiB", rss)
	}
}

// peakRSS returns a process's VmHWM in kB.
func peakRSS(pid int) int64 { return procStatus(pid, "VmHWM:") }

// rssNow returns a process's VmRSS in kB.
func rssNow(pid int) int64 { return procStatus(pid, "VmRSS:") }

// procStatus returns a kB figure from /proc/pid/status.
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field) {
			v, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return v
		}
	}
	return -1
}
