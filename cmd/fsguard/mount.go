package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"fsguard/admit"
	"fsguard/blobs"
	"fsguard/control"
	"fsguard/history"
	"fsguard/journal"
	"fsguard/links"
	"fsguard/metrics"
	"fsguard/mount"
	"fsguard/policy"
	"fsguard/roots"
	"fsguard/session"
)

func runMount(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mount", flag.ContinueOnError)
	policyFile := fs.String("policy", "", "policy file (default: $FSGUARD_POLICY, else the current directory as the only root)")
	allowOther := fs.Bool("allow-other", false, "let other users (a container's) use the mount; the kernel checks each caller's own permissions")
	debug := fs.Bool("debug", false, "log every FUSE request")
	socket := fs.String("socket", "", "serve the control socket here (default: the policy's control.socket)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: fsguard mount [--policy FILE] [--allow-other] MOUNTPOINT

Mounts a read-only view of the policy's roots at MOUNTPOINT and serves it
until SIGINT or SIGTERM (then unmounts) or an external unmount. One root
is the mount's top level; several appear as directories named by 'name'.
When the mount answers, one JSON line {"msg":"mounted",...} is printed on
stdout. SIGHUP reloads the policy file; a bad new policy is refused and
the old one kept. A stale mount left by a killed daemon is cleared first.

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
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	pol, ok := policyFor(*policyFile, stderr)
	if !ok {
		return exitUsage
	}
	m := metrics.New()
	var audit mount.Auditor = countingAudit{m: m, next: &mount.JSONLines{W: stderr}}
	j, jerr := journal.Open(journal.Locate(pol.Journal.Path))
	if jerr != nil {
		log.Warn("no journal: denials are logged on stderr only", "err", jerr.Error())
	} else {
		defer j.Close()
		audit = journalAudit{j: j, log: log, fallback: audit}
	}
	var held *blobs.Store
	if j != nil {
		var herr error
		if held, herr = openHeld(pol, j); herr != nil {
			log.Warn("no held-content store: changed files are re-sent as lines, and anchored edits need a fresh read", "err", herr.Error())
		} else if held != nil {
			defer held.Close()
		}
	}
	if pol.Git.History == "hide" {
		// Before the mount exists: a .git whose history exposes what the
		// view hides is never visible, not even for a moment.
		hideHistory(log, m, j, pol)
	}
	// One admission decider for the mount and the socket: one verdict per
	// file version, whichever door asks, and the daemon's index of hard
	// links behind it.
	dec := admit.New(1 << 16)
	dec.Links = links.New()
	srv, err := mount.Mount(mount.Config{
		Policy: pol, MountPoint: arg, AllowOther: *allowOther, Admit: dec,
		Audit: audit, Debug: *debug, Log: log,
		Latency: func(op string, d time.Duration) { m.FuseOps.Observe(op, d) },
	})
	if err != nil {
		return fail(stderr, err)
	}
	if *socket == "" {
		*socket = pol.Control.Socket
	}
	if *socket != "" {
		ctl, err := serveControl(srv, dec, j, jerr, held, m, log, *socket)
		if err != nil {
			srv.Unmount()
			return fail(stderr, fmt.Errorf("control socket %s: %w", *socket, err))
		}
		defer ctl.Close()
		log.Info("control socket", "path", *socket)
	}
	if pol.Git.History == "warn" {
		go func() {
			reps, err := history.Scan(context.Background(), srv.Guard(), history.Options{})
			reportHistory(log, m, j, reps, err)
		}()
	}
	ready, _ := json.Marshal(map[string]any{"msg": "mounted", "mountpoint": srv.MountPoint(), "pid": os.Getpid(), "policy": pol.Source, "socket": *socket, "watch": srv.Watch()})
	fmt.Fprintf(stdout, "%s\n", ready)
	log.Info("mounted", "mountpoint", srv.MountPoint(), "roots", len(pol.Roots), "policy", pol.Source)

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() { srv.Wait(); close(done) }()
	for {
		select {
		case <-done:
			log.Info("unmounted", "mountpoint", srv.MountPoint())
			return 0
		case s := <-sigs:
			if s == syscall.SIGHUP {
				reload(log, srv, *policyFile)
				continue
			}
			log.Info("signal; unmounting", "signal", s.String())
			if err := srv.Unmount(); err != nil {
				log.Error("unmount failed", "err", err.Error())
				return exitFail
			}
			<-done
			log.Info("unmounted", "mountpoint", srv.MountPoint())
			return 0
		}
	}
}

// serveControl starts the control socket. Each request gets a service
// built on the guard in force at that moment and the daemon's journal.
func serveControl(srv *mount.Server, dec *admit.Decider, j *journal.Journal, jerr error, held *blobs.Store, m *metrics.Set, log *slog.Logger, path string) (*control.Server, error) {
	dev, err := srv.Dev()
	if err != nil {
		return nil, err
	}
	count := func(r *journal.Record) {
		switch {
		case r.Kind == journal.KindDenial:
			m.Denials.Add(r.Code, 1)
		case r.Origin == journal.OriginRead || r.Origin == journal.OriginLedger || r.Origin == journal.OriginDiff:
			m.Reads.Add(r.Origin, 1)
			m.Delivered.Add("", float64(r.Delivered))
			m.Saved.Add("", float64(r.Saved))
		}
	}
	c := &control.Server{MountDev: dev, Metrics: m, Log: log, MaxRequests: srv.Guard().Policy().Control.MaxRequests,
		Policy: func() policy.Control { return srv.Guard().Policy().Control }, Service: func() *session.Service {
			g := srv.Guard()
			return &session.Service{Guard: g, Admit: dec, Journal: j, JournalErr: jerr, Held: held, RequireWholeView: g.Policy().Journal.RequireWholeView, OnRecord: count, OnWrite: srv.Refresh}
		}}
	return c, c.Serve(path)
}

// countingAudit counts the mount's denials for /metrics.
type countingAudit struct {
	m    *metrics.Set
	next mount.Auditor
}

func (a countingAudit) Denial(d mount.Denial) {
	a.m.Denials.Add(string(d.Code), 1)
	a.next.Denial(d)
}

// journalAudit records the mount's denials in the journal, and logs them
// too; a failed append is logged, never dropped silently.
type journalAudit struct {
	j        *journal.Journal
	log      *slog.Logger
	fallback mount.Auditor
}

func (a journalAudit) Denial(d mount.Denial) {
	a.fallback.Denial(d)
	err := a.j.Append(&journal.Record{Kind: journal.KindDenial, Time: d.Time, Path: d.Path, Code: string(d.Code), Pid: d.Pid, Uid: d.Uid, Process: d.Process})
	if err != nil {
		a.log.Error("journal append failed", "err", err.Error())
	}
}

// hideHistory scans the repositories under pol's roots and adds the .git of
// each whose history exposes what the view hides to the deny paths.
func hideHistory(log *slog.Logger, m *metrics.Set, j *journal.Journal, pol *policy.Policy) {
	g, err := roots.New(pol)
	if err != nil {
		return // Mount reports it
	}
	defer g.Close()
	reps, err := history.Scan(context.Background(), g, history.Options{})
	for _, r := range reps {
		pol.Deny.Paths = append(pol.Deny.Paths, filepath.Join(r.Root.Real, r.Repo, ".git"))
	}
	reportHistory(log, m, j, reps, err)
}

// reportHistory says what the history scan found: one warning, one
// journal record and the metric per repository.
func reportHistory(log *slog.Logger, m *metrics.Set, j *journal.Journal, reps []history.Report, err error) {
	if err != nil {
		log.Warn("the git history check did not finish", "err", err.Error())
	}
	for _, r := range reps {
		log.Warn(r.Summary(), "repo", filepath.Join(r.Root.Path, r.Repo), "findings", len(r.Findings))
		m.History.Add("", float64(len(r.Findings)))
		if j != nil {
			j.Append(&journal.Record{Kind: journal.KindHistory, Path: filepath.Join(r.Root.Path, r.Repo), Code: "HISTORY_EXPOSES", Detail: r.Summary(), Pid: uint32(os.Getpid())})
		}
	}
}

func reload(log *slog.Logger, srv *mount.Server, file string) {
	pol, err := loadPolicy(file)
	if err == nil {
		err = srv.Reload(pol)
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
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: fsguard unmount [--lazy] MOUNTPOINT

Unmounts an fsguard mount. A stale mount (its daemon was killed) is
always detached.

example:
  fsguard unmount /workspace
`)
		fs.PrintDefaults()
	}
	arg, code, ok := parseOne(fs, args, stderr)
	if !ok {
		return code
	}
	if err := mount.Unmount(arg, *lazy); err != nil {
		return fail(stderr, err)
	}
	return 0
}
