// Command benchmount measures, in one run on this machine, the same shell
// workloads on native access, the FUSE mirrors a user would pick instead
// of fsguard (go-fuse's loopback, bindfs, and with -floor
// scripts/fusefloor) and fsguard, and prints a markdown table of medians,
// each server's ratio to native, and fsguard's to the best peer (the
// fastest of the mirrors in that cell).
//
//	go run ./scripts/benchmount              # 5 runs per cell, warm
//	go run ./scripts/benchmount -runs 9 -dir /var/tmp/fsb
//	go run ./scripts/benchmount -cold        # each run on a fresh mount
//	go run ./scripts/benchmount -cold -tree /tmp/moby   # any tree
//	go run ./scripts/benchmount -cold -as 65534  # the commands as another uid
//	go run ./scripts/benchmount -cold -nodev  # the tree on a nodev bind of itself
//	go run ./scripts/benchmount -cold -floor  # and the floor: scripts/fusefloor
//
// bindfs (apt: bindfs; scripts/deps.sh installs it) is mounted read-only
// (bindfs -r); without it on the machine its column is left out (-bindfs
// false leaves it out anyway). With -as every server is mounted with
// allow_other, and each command runs as that uid (its gid the same number).
//
// Warm cells run once untimed first: the steady state of an agent that
// re-runs its tools. Cold cells mount both FUSE servers afresh for every
// run (the backing tree stays in the page cache: native is warm), so each
// measures the first command an agent's new container runs.
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
	"sync"
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
	cold   = flag.Bool("cold", false, "measure the first command on a fresh mount, each run")
	tree   = flag.String("tree", "", "a real tree to walk instead of the generated one (e.g. a moby checkout)")
	base   = flag.String("base", "", "another fsguard binary (an older build) measured in the same run, as column \"base\"")
	nodev  = flag.Bool("nodev", false, "give the tree a nodev bind mount of itself for the run, removed at the end (docs/mount.md: \"One open per file\": builds before the roots' views opened a file once only on a nodev mount)")
	kept   = flag.Bool("kept", false, "cold: fsguard starts with the verdicts an earlier run saved (a restart on a tree seen before), not as on a first mount ever")
	floor  = flag.Bool("floor", false, "also measure scripts/fusefloor, an in-memory copy of the tree served with no admission and no backing file: what FUSE's requests alone cost here")
	splice = flag.Bool("splice", false, "with -floor: the floor answers READs by splice from the backing files (fusefloor -splice), as fsguard does, instead of from memory")
	bind   = flag.Bool("bindfs", true, "also measure bindfs -r, when it is installed")
	as     = flag.Int("as", -1, "run each command as this uid (and gid), every server mounted with allow_other")
)

func main() {
	flag.Parse()
	if os.Geteuid() != 0 {
		fatal("benchmount mounts FUSE directly and must run as root")
	}
	data := filepath.Join(*dir, "data")
	if *tree == "" {
		makeData(data)
	}
	bin := filepath.Join(*dir, "bin")
	os.MkdirAll(bin, 0o755)
	build(filepath.Join(bin, "fsguard"), "./cmd/fsguard")
	build(filepath.Join(bin, "loopback"), "github.com/hanwen/go-fuse/v2/example/loopback")
	if *floor {
		build(filepath.Join(bin, "fusefloor"), "./scripts/fusefloor")
	}

	root := data
	if *tree != "" {
		root = *tree
	}
	if *nodev {
		defer bindNodev(root)()
	}
	m := &mounts{bin: bin, root: root, loop: filepath.Join(*dir, "mnt-loopback"), fsg: filepath.Join(*dir, "mnt-fsguard"), pol: filepath.Join(*dir, "policy.toml"),
		baseBin: *base, baseMnt: filepath.Join(*dir, "mnt-base"), floorMnt: filepath.Join(*dir, "mnt-floor"), bindMnt: filepath.Join(*dir, "mnt-bindfs")}
	if *bind {
		if _, err := exec.LookPath("bindfs"); err != nil {
			fmt.Fprintln(os.Stderr, "benchmount: no bindfs here (apt install bindfs); its column is left out")
			*bind = false
		}
	}
	if *as >= 0 {
		// The uid must reach the data: the work directory is root's.
		for d := *dir; d != "/" && d != "."; d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o005 != 0o005 {
				fmt.Fprintf(os.Stderr, "benchmount: -as %d: %s is not readable and searchable by others\n", *as, d)
			}
		}
	}
	os.WriteFile(m.pol, []byte(fmt.Sprintf("[[root]]\npath = %q\n[mount]\nopen = %q\n", root, *open)), 0o644)
	if *cold {
		runCold(m, data)
		return
	}
	m.up()
	defer m.down()
	targets := m.targets()
	benches := []bench{
		{"sequential read 1 GiB (dd bs=1M)", "dd if=$R/big.bin of=/dev/null bs=1M status=none"},
		{"grep -r over 20,000 files", "grep -r -c needle $R/tree > /dev/null || true"},
		{"find over 20,000 files", "find $R/tree > /dev/null"},
		{"find -type f -size (stat each)", "find $R/tree -type f -size +1k > /dev/null"},
		{"cat 20,000 files", "find $R/tree -type f -print0 | xargs -0 cat > /dev/null"},
		{"8 parallel readers of 1 GiB", "for i in 1 2 3 4 5 6 7 8; do dd if=$R/big.bin of=/dev/null bs=1M status=none & done; wait"},
		{"1 reader of 1 GiB (for the 8-reader scale)", "dd if=$R/big.bin of=/dev/null bs=1M status=none"},
	}
	if *tree != "" {
		benches = treeBenches(*tree)
	}
	fmt.Printf("fsguard mount.open = %q, %d runs per cell after one warm-up, medians%s\n\n", *open, *runs, asText())
	header(targets)
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
		row(b.name, targets, times)
	}
	fmt.Printf("\nfsguard daemon peak RSS: %s; loopback: %s\n", peakRSS(m.fsgCmd.Process.Pid), peakRSS(m.loopCmd.Process.Pid))
	if m.bindCmd != nil {
		fmt.Printf("bindfs peak RSS: %s\n", peakRSS(m.bindCmd.Process.Pid))
	}
}

type bench struct{ name, script string }

// treeBenches are the tree walkers, on a real tree given by -tree ($R is
// the tree's root then).
func treeBenches(tree string) []bench {
	bs := []bench{
		{"grep -rn over the tree", "grep -rn -I needle-not-there $R > /dev/null || true"},
		{"find over the tree", "find $R > /dev/null"},
		{"find -type f -size (stat each)", "find $R -type f -size +1k > /dev/null"},
		{"tree-like walk (ls -lR)", "ls -lR $R > /dev/null"},
	}
	if _, err := os.Stat(filepath.Join(tree, ".git")); err == nil {
		bs = append(bs, bench{"git status", "git -c safe.directory='*' -C $R status --porcelain > /dev/null"})
	}
	return bs
}

// asText says, for a table's heading, who ran the commands.
func asText() string {
	if *as < 0 {
		return ""
	}
	return fmt.Sprintf(", commands run as uid %d", *as)
}

// peer reports whether a target is one of the mirrors fsguard is held
// against (not native, not fsguard, not an older fsguard).
func peer(name string) bool { return name != "native" && name != "fsguard" && name != "base" }

// header starts the table: a column of medians for each target, one of
// ratios to native for each server, and fsguard's (and base's) ratio to
// the best peer; extra names columns added at the end of each row.
func header(targets []target, extra ...string) {
	cols := []string{"workload"}
	for _, t := range targets {
		cols = append(cols, t.name)
	}
	for _, t := range targets[1:] {
		cols = append(cols, t.name+"/native")
	}
	for _, t := range targets {
		if !peer(t.name) && t.name != "native" {
			cols = append(cols, t.name+"/best peer")
		}
	}
	cols = append(cols, extra...)
	fmt.Printf("| %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)))
}

func row(name string, targets []target, times map[string][]time.Duration, extra ...string) {
	cells := []string{name}
	for _, t := range targets {
		cells = append(cells, ms(median(times[t.name])))
	}
	n := median(times["native"])
	var best time.Duration
	for _, t := range targets[1:] {
		cells = append(cells, fmt.Sprintf("%.2fx", float64(median(times[t.name]))/float64(n)))
		if d := median(times[t.name]); peer(t.name) && (best == 0 || d < best) {
			best = d
		}
	}
	for _, t := range targets {
		if !peer(t.name) && t.name != "native" {
			cells = append(cells, fmt.Sprintf("%.2fx", float64(median(times[t.name]))/float64(best)))
		}
	}
	cells = append(cells, extra...)
	fmt.Printf("| %s |\n", strings.Join(cells, " | "))
}

// mounts are the FUSE servers over one root.
type mounts struct {
	bin, root, loop, fsg, pol                   string
	baseBin, baseMnt, floorMnt, bindMnt         string
	loopCmd, fsgCmd, baseCmd, floorCmd, bindCmd *exec.Cmd
	warmed, baseWarmed                          <-chan struct{} // fsguard's (base's) warm walk is done
}

// target is where a workload runs: natively (root is the tree) or
// through one server's mount.
type target struct{ name, root string }

// up mounts every server.
func (m *mounts) up() { m.upOnly("loopback", "bindfs", "fsguard", "base", "floor") }

func (m *mounts) fsguard(bin, mp, journal string) (*exec.Cmd, <-chan struct{}) {
	cmd := exec.Command(bin, append(append([]string{"mount"}, otherArgs("--allow-other")...), "--policy", m.pol, mp)...)
	cmd.Env = append(os.Environ(), "FSGUARD_JOURNAL="+filepath.Join(*dir, journal))
	// A first mount ever: a new journal (one grown over earlier runs slows a
	// start: its id, its held-content store and its WAL are all left
	// beside it), and no saved verdicts unless -kept.
	base := strings.TrimSuffix(journal, ".db")
	old, _ := filepath.Glob(filepath.Join(*dir, base+".*"))
	for _, f := range old {
		if !*kept || !strings.HasSuffix(f, ".verdicts") {
			os.Remove(f)
		}
	}
	return startWarm(cmd, `"msg":"mounted"`)
}

// upOnly mounts the named targets' servers ("native": none).
func (m *mounts) upOnly(names ...string) {
	for _, mp := range []string{m.loop, m.fsg, m.baseMnt, m.floorMnt, m.bindMnt} {
		syscall.Unmount(mp, syscall.MNT_DETACH)
		os.MkdirAll(mp, 0o755)
	}
	for _, name := range names {
		switch {
		case name == "loopback":
			m.loopCmd = start(exec.Command(filepath.Join(m.bin, "loopback"), append(otherArgs("-allow-other"), "-directmount", m.loop, m.root)...), "Mounted!")
		case name == "bindfs" && *bind:
			m.bindCmd = startMounted(exec.Command("bindfs", append(otherArgs("-o", "allow_other"), "-f", "-r", m.root, m.bindMnt)...), m.bindMnt)
		case name == "fsguard":
			m.fsgCmd, m.warmed = m.fsguard(filepath.Join(m.bin, "fsguard"), m.fsg, "journal.db")
		case name == "base" && m.baseBin != "":
			m.baseCmd, m.baseWarmed = m.fsguard(m.baseBin, m.baseMnt, "journal-base.db")
		case name == "floor" && *floor:
			m.floorCmd = start(exec.Command(filepath.Join(m.bin, "fusefloor"), append(otherArgs("-allow-other"), fmt.Sprintf("-splice=%v", *splice), m.root, m.floorMnt)...), "Mounted!")
		}
	}
}

func (m *mounts) down() {
	for _, c := range []struct {
		cmd **exec.Cmd
		mp  string
	}{{&m.loopCmd, m.loop}, {&m.fsgCmd, m.fsg}, {&m.baseCmd, m.baseMnt}, {&m.floorCmd, m.floorMnt}, {&m.bindCmd, m.bindMnt}} {
		if *c.cmd != nil {
			stop(*c.cmd, c.mp)
			*c.cmd = nil
		}
	}
}

// targets are native first, then each server measured: fsguard last.
func (m *mounts) targets() []target {
	t := []target{{"native", m.root}, {"loopback", m.loop}}
	if *bind {
		t = append(t, target{"bindfs", m.bindMnt})
	}
	if *floor {
		t = append(t, target{"floor", m.floorMnt})
	}
	if m.baseBin != "" {
		t = append(t, target{"base", m.baseMnt})
	}
	return append(t, target{"fsguard", m.fsg})
}

// rotated is the targets of run i: native first (its untimed run warms the
// page cache for all), then the servers in turn, each run starting with the
// next, so no server always follows the same one (a server's unmount frees
// the page cache it filled, and on a VM whose host takes freed memory back
// the next server's first large read paid for it: see docs/BENCHMARKS.md).
func rotated(t []target, i int) []target {
	servers := t[1:]
	k := i % len(servers)
	return append(append(t[:1:1], servers[k:]...), servers[:k]...)
}

// runCold times each cell's command as the first one on a fresh mount:
// for every run each server is mounted anew, alone, and unmounted after;
// the command runs natively twice, timed the second time (the backing tree
// is in the page cache: native is warm).
func runCold(m *mounts, data string) {
	var benches []bench
	if *tree != "" {
		benches = append(treeBenches(*tree), bench{"grep -rn over the tree, after fsguard's warm walk", "grep -rn -I needle-not-there $R > /dev/null || true"})
	} else {
		benches = []bench{
			{"first grep -r over 20,000 files", "grep -r -c needle $R/tree > /dev/null || true"},
			{"first grep -r over 20,000 files, after fsguard's warm walk", "grep -r -c needle $R/tree > /dev/null || true"},
			{"first find over 20,000 files", "find $R/tree > /dev/null"},
			{"first dd of 1 GiB", "dd if=$R/big.bin of=/dev/null bs=1M status=none"},
			{"500 missing-name stats (3,000-entry directory)", "python3 -c \"import os\nfor i in range(500): os.path.exists('$R/many/nope-%d.py' % i)\""},
			{"git status (20,000 files)", "git -c safe.directory='*' --git-dir=$R/gitdir --work-tree=$R/tree status --porcelain > /dev/null"},
			{"python3 imports 12 stdlib modules from the tree", "python3 -I -S -c \"import sys; sys.path[:0] = ['$R/pylib']; import json, email.message, http.client, argparse, decimal, asyncio, xml.etree.ElementTree, csv, logging, unittest, sqlite3, urllib.request\""},
		}
		makeColdData(data)
	}
	if *kept {
		// One run to save from: a mount whose warm walk decided the tree.
		m.upOnly("fsguard")
		<-m.warmed
		m.down()
	}
	fmt.Printf("fsguard mount.open = %q, cold: a fresh mount for each of %d runs, backing tree page-cached, verdicts kept from an earlier run: %v, medians%s\n\n", *open, *runs, *kept, asText())
	header(m.targets(), "fsguard peak RSS")
	for _, b := range benches {
		if *only != "" && !strings.Contains(b.name, *only) {
			continue
		}
		times := map[string][]time.Duration{}
		rss := 0 // kB: the largest VmHWM of fsguard's daemon in this cell
		for i := 0; i < *runs; i++ {
			for _, t := range rotated(m.targets(), i) {
				// One server at a time: another's start-up work (fsguard's
				// warm walk) must not slow the one measured.
				m.upOnly(t.name)
				if t.name == "native" {
					timeIt(strings.ReplaceAll(b.script, "$R", t.root)) // the page cache, warm
				}
				if strings.Contains(b.name, "after fsguard's warm walk") && (t.name == "fsguard" || t.name == "base") {
					warmed := m.warmed
					if t.name == "base" {
						warmed = m.baseWarmed
					}
					select {
					case <-warmed:
					case <-time.After(5 * time.Minute):
						fatal("no warm walk done in 5 minutes (" + t.name + ")")
					}
				}
				times[t.name] = append(times[t.name], timeIt(strings.ReplaceAll(b.script, "$R", t.root)))
				if t.name == "fsguard" {
					rss = max(rss, peakKB(m.fsgCmd.Process.Pid))
				}
				m.down()
			}
		}
		row(b.name, m.targets(), times, fmt.Sprintf("%d MB", rss>>10))
	}
}

// makeColdData adds what the cold cells need to the generated data: a
// directory of 3,000 files, a copy of Python's standard library, and a git
// repository of the tree (its git directory beside it).
func makeColdData(data string) {
	many := filepath.Join(data, "many")
	if _, err := os.Stat(filepath.Join(many, "f2999.txt")); err != nil {
		os.MkdirAll(many, 0o755)
		for i := range 3000 {
			must(os.WriteFile(filepath.Join(many, fmt.Sprintf("f%d.txt", i)), []byte("x\n"), 0o644))
		}
	}
	pylib := filepath.Join(data, "pylib")
	if _, err := os.Stat(pylib); err != nil {
		out, err := exec.Command("python3", "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])").Output()
		must(err)
		must(exec.Command("cp", "-a", strings.TrimSpace(string(out)), pylib).Run())
	}
	// The repository's git directory sits beside the tree, not in it, so
	// the tree walkers walk the same 20,000 files as the warm cells.
	gitdir := filepath.Join(data, "gitdir")
	if _, err := os.Stat(filepath.Join(gitdir, "index")); err != nil {
		for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "tree"}} {
			cmd := exec.Command("git", append([]string{"--git-dir=" + gitdir, "--work-tree=" + filepath.Join(data, "tree")}, args...)...)
			must(cmd.Run())
		}
	}
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
	c, _ := startWarm(cmd, ready)
	return c
}

// startWarm is start, and a channel closed when fsguard logs that its warm
// walk is done.
func startWarm(cmd *exec.Cmd, ready string) (*exec.Cmd, <-chan struct{}) {
	out, err := cmd.StdoutPipe()
	must(err)
	logs, err := cmd.StderrPipe()
	must(err)
	must(cmd.Start())
	warmed := make(chan struct{})
	// A walk again (the kernel forgot part of the view) says done again.
	var once sync.Once
	go func() { // the log, on stderr: passed on, and watched for the walk's end
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			fmt.Fprintln(os.Stderr, sc.Text())
			if strings.Contains(sc.Text(), `"msg":"warm walk done"`) {
				once.Do(func() { close(warmed) })
			}
		}
	}()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.Contains(sc.Text(), ready) {
			go func() {
				for sc.Scan() {
				}
			}()
			return cmd, warmed
		}
	}
	fatal(cmd.Path + " exited before it was ready")
	return nil, nil
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

// otherArgs is args when the commands run as another uid (-as): a
// server's way to let them use its mount.
func otherArgs(args ...string) []string {
	if *as < 0 {
		return nil
	}
	return args
}

// startMounted runs a FUSE server in the foreground and waits until its
// mount is at mp (a server that prints nothing when ready: bindfs -f).
func startMounted(cmd *exec.Cmd, mp string) *exec.Cmd {
	cmd.Stderr = os.Stderr
	must(cmd.Start())
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile("/proc/self/mountinfo")
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 4 && f[4] == mp {
				return cmd
			}
		}
	}
	fatal(cmd.Path + " did not mount " + mp + " within a minute")
	return nil
}

func timeIt(script string) time.Duration {
	start := time.Now()
	cmd := exec.Command("sh", "-c", script)
	if *as >= 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(*as), Gid: uint32(*as)}}
		cmd.Dir = "/"
		cmd.Env = append(os.Environ(), "HOME=/") // not root's: git reads its config there
	}
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

// peakKB is the peak resident memory (VmHWM) of pid, in kB (0: unknown).
func peakKB(pid int) int {
	var kb int
	fmt.Sscanf(strings.TrimSuffix(peakRSS(pid), " kB"), "%d", &kb)
	return kb
}

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

// bindNodev mounts dir on itself with nodev and returns the unmount:
// every reader then goes through the bind, fsguard's roots among them.
func bindNodev(dir string) func() {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) == nil && st.Flags&0x4 != 0 { // ST_NODEV: already (a run that failed left its bind)
		return func() {}
	}
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		fatal(fmt.Sprintf("bind %s: %v", dir, err))
	}
	if err := syscall.Mount("", dir, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_NODEV, ""); err != nil {
		syscall.Unmount(dir, syscall.MNT_DETACH)
		fatal(fmt.Sprintf("remount %s nodev: %v", dir, err))
	}
	return func() { syscall.Unmount(dir, syscall.MNT_DETACH) }
}

func fatal(msg string) {
	fmt.Fprintln(os.Stderr, "benchmount:", msg)
	os.Exit(1)
}
