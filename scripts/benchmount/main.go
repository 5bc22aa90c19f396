// Command benchmount measures, in one run on this machine, the same shell
// workloads on native access, plain go-fuse loopback and fsguard, and
// prints a markdown table of medians and ratios to native.
//
//	go run ./scripts/benchmount              # 5 runs per cell
//	go run ./scripts/benchmount -runs 9 -dir /var/tmp/fsb
//
// Must run as root (both FUSE servers mount directly). Data is generated
// once under -dir and reused; mounts are torn down at the end.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

var (
	dir    = flag.String("dir", "/tmp/fsguard-bench", "work directory (data and mount points)")
	runs   = flag.Int("runs", 5, "timed runs per cell (after one warm-up)")
	nfiles = flag.Int("files", 20000, "small files in the tree")
	bigMiB = flag.Int("big", 1024, "size of the sequential-read file in MiB")
	only   = flag.String("only", "", "run only benchmarks whose name contains this")
	open   = flag.String("open", "kernel", "fsguard's mount.open mode: kernel or daemon")
)

func main() {
	flag.Parse()
	if os.Geteuid() != 0 {
		fatal("benchmount mounts FUSE directly and must run as root")
	}
	data := filepath.Join(*dir, "data")
	makeData(data)
	bin := filepath.Join(*dir, "bin")
	os.MkdirAll(bin, 0o755)
	build(filepath.Join(bin, "fsguard"), "./cmd/fsguard")
	build(filepath.Join(bin, "loopback"), "github.com/hanwen/go-fuse/v2/example/loopback")

	loopMnt, fsgMnt := filepath.Join(*dir, "mnt-loopback"), filepath.Join(*dir, "mnt-fsguard")
	for _, m := range []string{loopMnt, fsgMnt} {
		syscall.Unmount(m, syscall.MNT_DETACH)
		os.MkdirAll(m, 0o755)
	}
	loop := start(exec.Command(filepath.Join(bin, "loopback"), "-directmount", loopMnt, data), "Mounted!")
	defer stop(loop, loopMnt)
	pol := filepath.Join(*dir, "policy.toml")
	os.WriteFile(pol, []byte(fmt.Sprintf("[[root]]\npath = %q\n[mount]\nopen = %q\n", data, *open)), 0o644)
	fsg := start(exec.Command(filepath.Join(bin, "fsguard"), "mount", "--policy", pol, fsgMnt), `"msg":"mounted"`)
	defer stop(fsg, fsgMnt)

	targets := []struct{ name, root string }{{"native", data}, {"loopback", loopMnt}, {"fsguard", fsgMnt}}
	benches := []struct{ name, script string }{
		{"sequential read 1 GiB (dd bs=1M)", "dd if=$R/big.bin of=/dev/null bs=1M status=none"},
		{"grep -r over 20,000 files", "grep -r -c needle $R/tree > /dev/null || true"},
		{"find over 20,000 files", "find $R/tree > /dev/null"},
		{"find -type f -size (stat each)", "find $R/tree -type f -size +1k > /dev/null"},
		{"cat 20,000 files", "find $R/tree -type f -print0 | xargs -0 cat > /dev/null"},
		{"8 parallel readers of 1 GiB", "for i in 1 2 3 4 5 6 7 8; do dd if=$R/big.bin of=/dev/null bs=1M status=none & done; wait"},
		{"1 reader of 1 GiB (for the 8-reader scale)", "dd if=$R/big.bin of=/dev/null bs=1M status=none"},
	}
	fmt.Printf("fsguard mount.open = %q, %d runs per cell after one warm-up, medians\n\n", *open, *runs)
	fmt.Printf("| workload | native | loopback | fsguard | loopback/native | fsguard/native |\n|---|---|---|---|---|---|\n")
	for _, b := range benches {
		if *only != "" && !strings.Contains(b.name, *only) {
			continue
		}
		times := map[string][]time.Duration{}
		for i := 0; i <= *runs; i++ {
			for _, t := range targets {
				d := timeIt(strings.ReplaceAll(b.script, "$R", t.root))
				if i > 0 { // run 0 warms the caches
					times[t.name] = append(times[t.name], d)
				}
			}
		}
		n, l, f := median(times["native"]), median(times["loopback"]), median(times["fsguard"])
		fmt.Printf("| %s | %s | %s | %s | %.2fx | %.2fx |\n", b.name, ms(n), ms(l), ms(f), float64(l)/float64(n), float64(f)/float64(n))
	}
	fmt.Printf("\nfsguard daemon peak RSS: %s; loopback: %s\n", peakRSS(fsg.Process.Pid), peakRSS(loop.Process.Pid))
}

func makeData(data string) {
	tree := filepath.Join(data, "tree")
	if _, err := os.Stat(filepath.Join(tree, ".complete")); err != nil {
		os.RemoveAll(tree)
		perDir := 100
		for i := 0; i < *nfiles; i++ {
			d := filepath.Join(tree, fmt.Sprintf("d%03d", i/perDir/10), fmt.Sprintf("s%02d", (i/perDir)%10))
			os.MkdirAll(d, 0o755)
			var b strings.Builder
			for j := 0; j < 10+i%60; j++ {
				fmt.Fprintf(&b, "line %d of file %d: some ordinary source text with words in it\n", j, i)
			}
			if i%997 == 0 {
				b.WriteString("needle\n")
			}
			must(os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.txt", i)), []byte(b.String()), 0o644))
		}
		must(os.WriteFile(filepath.Join(tree, ".complete"), nil, 0o644))
	}
	big := filepath.Join(data, "big.bin")
	if fi, err := os.Stat(big); err != nil || fi.Size() != int64(*bigMiB)<<20 {
		f, err := os.Create(big)
		must(err)
		buf := make([]byte, 1<<20)
		for i := range buf {
			buf[i] = byte('a' + i%26)
			if i%80 == 79 {
				buf[i] = '\n'
			}
		}
		for i := 0; i < *bigMiB; i++ {
			f.Write(buf)
		}
		f.Close()
	}
}

func build(out, pkg string) {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	must(cmd.Run())
}

// start runs a FUSE server and waits for its readiness text on stdout.
func start(cmd *exec.Cmd, ready string) *exec.Cmd {
	out, err := cmd.StdoutPipe()
	must(err)
	cmd.Stderr = os.Stderr
	must(cmd.Start())
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.Contains(sc.Text(), ready) {
			go func() {
				for sc.Scan() {
				}
			}()
			return cmd
		}
	}
	fatal(cmd.Path + " exited before it was ready")
	return nil
}

func stop(cmd *exec.Cmd, mp string) {
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
	}
	syscall.Unmount(mp, syscall.MNT_DETACH)
}

func timeIt(script string) time.Duration {
	start := time.Now()
	cmd := exec.Command("sh", "-c", script)
	cmd.Stderr = os.Stderr
	must(cmd.Run())
	return time.Since(start)
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func peakRSS(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:"))
		}
	}
	return "?"
}

func must(err error) {
	if err != nil {
		fatal(err.Error())
	}
}

func fatal(msg string) {
	fmt.Fprintln(os.Stderr, "benchmount:", msg)
	os.Exit(1)
}
