package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/fsguard/fsguard/internal/concept/termsafe"
	"github.com/fsguard/fsguard/internal/daemon"
	"github.com/fsguard/fsguard/internal/view/mount"
)

func runMount(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mount", flag.ContinueOnError)
	policyFile := fs.String("policy", "", "policy file (default: $FSGUARD_POLICY, else the current directory as the only root)")
	allowOther := fs.Bool("allow-other", false, "let other users (a container's) use the mount; the kernel checks each caller's own permissions")
	debug := fs.Bool("debug", false, "log every FUSE request")
	socket := fs.String("socket", "", "serve the control socket here (default: the policy's control.socket)")
	session := fs.String("session", os.Getenv("FSGUARD_SESSION"), "the agent session this mount serves: its denials and access records carry it (default: $FSGUARD_SESSION)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: fsguard mount [--policy FILE] [--allow-other] [--session S] MOUNTPOINT

Mounts a read-only view of the policy's roots at MOUNTPOINT and serves it
until SIGINT or SIGTERM (then unmounts) or an external unmount. One root
is the mount's top level; several appear as directories named by 'name'.
When the mount answers, one JSON line {"msg":"mounted",...} is printed on
stdout. SIGHUP reloads the policy file; a bad new policy is refused and
the old one kept. A stale mount left by a killed daemon is cleared first.

Every open of a file through the mount, by any process in any container,
is journaled as an access record ([audit] opens = "record", the default):
who (pid, process name, uid, cgroup), which file version, where the
process saw it. See them with: fsguard journal query --kind access

FSGUARD_WARM=0 in the environment turns the mount's warming engine off
([mount] warm = false) whatever the policy file says, at start and at
every reload: the page cache then fills only as the agent reads.

examples:
  fsguard mount --policy /etc/fsguard/policy.toml /workspace
  fsguard mount --allow-other --policy policy.toml /srv/agent/workspace

flags:
`)
		fs.PrintDefaults()
	}
	arg, code, ok := parseOne(fs, args, stderr)
	if !ok {
		return code
	}
	log := slog.New(slog.NewJSONHandler(termsafe.Writer(stderr), nil))
	moreProcs()
	pol, ok := policyFor(*policyFile, stderr)
	if !ok {
		return exitUsage
	}
	if *socket == "" {
		*socket = pol.Control.Socket
	}
	// Signals are caught before the readiness line is printed: a SIGHUP
	// sent the moment the mount is ready must reload, not kill the daemon.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	if err := mount.Preflight(); err != nil {
		return fail(stderr, err) // before the journal, the socket or the mount is touched
	}
	journalAt := journalPath(pol)
	d, err := daemon.Start(daemon.Config{
		Policy: pol, MountPoint: arg, AllowOther: *allowOther, Debug: *debug, Socket: *socket,
		JournalPath: journalAt, Log: log, Denials: mount.LogLines{Log: log}, Session: *session,
	})
	if err != nil {
		return fail(stderr, err)
	}
	srv := d.Server()
	ready, _ := json.Marshal(map[string]any{"msg": "mounted", "mountpoint": srv.MountPoint(), "pid": os.Getpid(), "policy": pol.Source, "journal": journalAt, "socket": *socket, "watch": srv.Watch(), "opens": d.Opens()})
	fmt.Fprintf(stdout, "%s\n", ready)
	log.Info("mounted", "mountpoint", srv.MountPoint(), "roots", len(pol.Roots), "policy", pol.Source)
	for _, r := range srv.Guard().Roots() {
		if r.ReadOnly() {
			log.Warn("root on a read-only mount: every write and edit beneath it fails (EROFS); mount it read-write for the daemon (the agent's view is read-only whatever the root's mount)", "root", r.Path)
		}
		if !r.OneOpen() && !r.CrossMounts() {
			log.Info("root neither on a nodev mount nor given a nodev view: each file a cold listing shows costs two more system calls (docs/mount.md: \"One open per file\")", "root", r.Path)
		}
	}
	if err := sdNotify(fmt.Sprintf("READY=1\nMAINPID=%d\nSTATUS=serving %s", os.Getpid(), srv.MountPoint())); err != nil {
		log.Warn("could not tell the service manager that the mount is ready", "err", err.Error())
	}

	done := make(chan struct{})
	go func() { d.Wait(); close(done) }()
	for {
		select {
		case <-done:
			log.Info("unmounted", "mountpoint", srv.MountPoint())
			return 0
		case s := <-sigs:
			if s == syscall.SIGHUP {
				sdNotify("RELOADING=1")
				reload(log, d, *policyFile)
				sdNotify("READY=1")
				continue
			}
			sdNotify("STOPPING=1")
			log.Info("signal; unmounting", "signal", s.String())
			if err := d.Stop(); err != nil {
				log.Error("unmount failed", "err", err.Error())
				return exitFail
			}
			<-done
			log.Info("unmounted", "mountpoint", srv.MountPoint())
			return 0
		}
	}
}

func reload(log *slog.Logger, d *daemon.Daemon, file string) {
	pol, err := loadPolicy(file)
	if err == nil {
		err = d.Reload(pol)
	}
	if err != nil {
		log.Error("policy reload refused; keeping the old policy", "err", err.Error())
		return
	}
	log.Info("policy reloaded", "policy", pol.Source)
}

func runUnmount(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("unmount", flag.ContinueOnError)
	lazy := fs.Bool("lazy", false, "detach a busy mount now (MNT_DETACH); it goes away when the last file is closed")
	format := fs.String("format", "text", "text or json")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: fsguard unmount [--lazy] [--format text|json] MOUNTPOINT

Unmounts an fsguard mount. A stale mount (its daemon was killed) is
always detached. A busy mount is tried again for 2 s before the command
says so (use --lazy to detach it then).

example:
  fsguard unmount /workspace
`)
		fs.PrintDefaults()
	}
	arg, code, ok := parseOne(fs, args, stderr)
	if !ok {
		return code
	}
	if !validFormat(*format, stderr) {
		return exitUsage
	}
	err := mount.Unmount(arg, *lazy)
	if *format != "json" && err == nil {
		return 0 // nothing to say, as umount(8)
	}
	return answer(stdout, stderr, *format, "", map[string]any{"mountpoint": arg, "lazy": *lazy}, err)
}

// moreProcs gives the daemon twice the Ps (GOMAXPROCS) the runtime would
// give it, for the machine or its cgroup's CPU limit. A goroutine blocked
// in a system call keeps its P until the runtime's monitor takes it back,
// some time later, and the daemon always has some blocked: go-fuse's
// readers in read(2) on /dev/fuse (as many as there are Ps) and the
// audit's poll(2). With one P per core, the goroutines a request makes
// runnable (a listing's admissions, the pushes after it) wait for one;
// twice as many leaves a P free for them while the readers block.
// The CPU used is still the machine's; GOMAXPROCS set in the environment
// is left alone.
func moreProcs() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(2 * runtime.GOMAXPROCS(0))
	}
}
