// Package daemon is the composition root of `fsguard mount`: it opens the
// journal and the held-content store, makes the one admission decider the
// mount and the socket share, mounts the view, serves the control socket,
// reports what git histories expose, and writes the mount's denials to the
// journal off the FUSE path. The CLI parses flags and signals and calls
// Start, Reload and Stop; tests do the same.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsguard/fsguard/internal/concept/document"
	"github.com/fsguard/fsguard/internal/concept/metrics"
	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/concept/termsafe"
	"github.com/fsguard/fsguard/internal/decide/admit"
	"github.com/fsguard/fsguard/internal/decide/history"
	"github.com/fsguard/fsguard/internal/decide/roots"
	"github.com/fsguard/fsguard/internal/decide/sniff"
	"github.com/fsguard/fsguard/internal/door/control"
	"github.com/fsguard/fsguard/internal/service/session"
	"github.com/fsguard/fsguard/internal/store/blobs"
	"github.com/fsguard/fsguard/internal/store/journal"
	"github.com/fsguard/fsguard/internal/store/sqlitedb"
	"github.com/fsguard/fsguard/internal/view/mount"
	"github.com/fsguard/fsguard/internal/view/opens"
	"github.com/fsguard/fsguard/internal/view/warm"
)

// Config is what a daemon needs.
type Config struct {
	Policy     *policy.Policy
	MountPoint string
	AllowOther bool
	Debug      bool
	// Socket is where the control socket is served ("": none).
	Socket string
	// JournalPath is the journal's file ("": no journal; denials are
	// logged only).
	JournalPath string
	Log         *slog.Logger
	// Denials, when set, also receives each denial as a log line.
	Denials mount.Auditor
	// Session names the agent session the mount serves: its denials and
	// access records carry it.
	Session string
}

// Daemon is a running `fsguard mount`.
type Daemon struct {
	cfg Config
	// locks are the socket's and the mount point's (lock.go), released
	// last, once the socket is gone.
	locks   []*os.File
	log     *slog.Logger
	Metrics *metrics.Set
	// rec is the journal as every part uses it (nil: no journal path).
	rec      *recorder
	held     *blobs.Store
	srv      *mount.Server
	ctl      *control.Server
	scrape   *http.Server
	scrapeAt net.Addr
	sink     *denialSink
	opens    *opens.Recorder
	// dec is the one admission decider; verdicts is where its classes
	// are kept across runs ("": nowhere), saved under the policy of the
	// mount's guard in force.
	dec      *admit.Decider
	verdicts string
	saveMu   sync.Mutex
	// mounted is closed once srv is set; bg ends with the daemon (the
	// background work that waits for the agent's pauses).
	mounted chan struct{}
	bg      context.Context
	stopBg  context.CancelFunc
	// jobs are the background goroutines (see job); close waits for them
	// before it closes what they use. closing: none starts any more.
	jobMu   sync.Mutex
	jobs    sync.WaitGroup
	closing bool
	// stopFiles ends the watch of the journal's files.
	stopFiles, filesDone chan struct{}
	// state is what `fsguard status` reports beyond what the parts know.
	state *tracker
	// fdLimit is the descriptor limit in force (0: unknown).
	fdLimit uint64
}

// Start mounts the view and serves the socket; it returns once the mount
// answers.
func Start(cfg Config) (*Daemon, error) {
	d := &Daemon{cfg: cfg, log: cfg.Log, Metrics: metrics.New(), mounted: make(chan struct{})}
	d.bg, d.stopBg = context.WithCancel(context.Background())
	if d.log == nil {
		d.log = slog.New(slog.NewJSONHandler(termsafe.Writer(os.Stderr), nil))
	}
	if cfg.Socket != "" {
		l, err := lockSocket(cfg.Socket)
		if err != nil {
			return nil, err
		}
		d.locks = append(d.locks, l)
	}
	if mp, err := filepath.Abs(cfg.MountPoint); err == nil {
		l, err := lockMountPoint(mp)
		if err != nil {
			d.close()
			return nil, err
		}
		if l != nil {
			d.locks = append(d.locks, l)
		}
	}
	pol := d.overridden(cfg.Policy)
	d.setMemoryLimit(pol.Limits.MemoryLimit)
	d.fdLimit = raiseDescriptorLimit()
	d.watchDescriptorLimit(d.fdLimit)
	d.state = newTracker(pol.Git.History)
	if cfg.JournalPath != "" {
		// Made private before anything is written in it (journal.Open
		// would too, without a word): the log says what was changed.
		if did, err := sqlitedb.PrivateDir(cfg.JournalPath); err == nil && did != "" {
			d.log.Warn("journal directory made private", "dir", filepath.Dir(cfg.JournalPath), "change", did)
		}
		// The journal is opened, held (a file deleted or replaced under
		// the daemon is noticed at each append and every second, its
		// records rescued, nothing appended into an orphaned file) and
		// written once (a probe) before anything is served: a journal that
		// opens but cannot be written is not recording.
		d.rec = &recorder{path: cfg.JournalPath, log: d.log, m: d.Metrics,
			hold: func(j *journal.Journal) error {
				if err := j.HoldFiles(func(err error) {
					d.log.Error("journal files lost", "err", err.Error())
					d.Metrics.Events.Add("journal_files_lost", 1)
					d.rec.Failed(j, err)
				}); err != nil {
					return err
				}
				if lost := j.Lost(); lost != nil {
					d.log.Error("the journal lost acknowledged records; a loss record says so", "err", lost.Error())
				}
				return nil
			},
			stopped: d.journalStopped, told: d.journalBack}
		if jerr := d.rec.open(); jerr != nil {
			if pol.Journal.Required {
				d.close()
				return nil, fmt.Errorf("the journal cannot be written (%v), and the policy requires it ([journal] required = true)", jerr)
			}
			d.log.Warn("the journal does not record: reads say so, denials are logged and kept until it does; retrying", "err", jerr.Error())
		}
		d.stopFiles, d.filesDone = make(chan struct{}), make(chan struct{})
		go d.checkFiles()
	} else if pol.Journal.Required {
		return nil, fmt.Errorf("no journal path, and the policy requires a journal ([journal] required = true)")
	}
	if j := d.rec.Journal(); j != nil && pol.Journal.HeldMaxBytes > 0 {
		var herr error
		d.held, herr = blobs.OpenBeside(j.Path(), j.ID(), pol.Journal.HeldMaxBytes)
		var foreign *blobs.ForeignJournal
		if errors.As(herr, &foreign) {
			d.close()
			return nil, herr // a replaced journal is reported, never used as a new one
		}
		if herr == nil {
			d.Metrics.HeldBytes = d.held.Bytes
		}
		if herr != nil {
			d.log.Warn("no held-content store: changed files are re-sent as lines, and anchored edits need a fresh read", "err", herr.Error())
		}
	}
	d.sink = newDenialSink(d.rec, d.log, d.Metrics, cfg.Denials, cfg.Session)
	if j := d.rec.Journal(); j != nil {
		// Writes a killed writer left between rename and record: the files
		// say which happened.
		if n, err := (&session.Service{Journal: j}).Recover(true); err != nil {
			d.log.Warn("resolving interrupted writes failed; journal verify will report them", "err", err.Error())
		} else if n > 0 {
			d.log.Warn("resolved writes interrupted before their outcome was recorded", "count", n)
		}
	}
	if pol.Git.History == "hide" {
		// Before the mount exists: a .git whose history exposes what the
		// view hides is never visible, not even for a moment.
		d.hideHistory(pol)
	}
	// One admission decider for the mount and the socket: one verdict per
	// file version, whichever door asks, and the index of hard links.
	dec := admit.New(1 << 16)
	dec.Links = admit.NewLinkIndex()
	if d.rec != nil {
		count := func(family string) { d.Metrics.Masked.Add(family, 1) }
		dec.OnMasks = func(f *roots.File, masks []sniff.Mask) {
			if j := d.rec.Journal(); j != nil {
				session.MaskAudit(j, count)(f, masks)
			}
		}
	}
	d.dec, d.Metrics.Scans = dec, dec.Scans
	d.loadVerdicts(pol)
	srv, err := mount.Mount(mount.Config{
		Policy: pol, MountPoint: cfg.MountPoint, AllowOther: cfg.AllowOther, Admit: dec,
		Audit: d.sink, Debug: cfg.Debug, Log: d.log,
		Latency: func(op string, t time.Duration) { d.Metrics.FuseOps.Observe(op, t) },
		Event: func(name string) {
			d.Metrics.Events.Add(name, 1)
			if name == "warm_walk_done" {
				d.job(d.saveWhenQuiet) // the walk decided most of the tree
			}
		},
		Prefetched: func(result string) { d.Metrics.Prefetched.Add(result, 1) },
		Unrecordable: func(path string) error {
			select {
			case <-d.mounted:
			default:
				// Served before Mount returned: the policy in force is
				// the start's, whose required journal was written at start.
				return d.rec.Refusal(pol.Journal.Required, refusal.OpRead, path)
			}
			return d.rec.Refusal(d.srv.Guard().Policy().Journal.Required, refusal.OpRead, path)
		},
		ListedAhead: func(result string) { d.Metrics.ListedAhead.Add(result, 1) },
	})
	if err != nil {
		d.close()
		return nil, err
	}
	d.srv = srv
	close(d.mounted)
	if dev, err := srv.Dev(); err == nil {
		d.sink.dev.Store(&dev) // denials are journaled in their caller's view
	}
	if pol.Audit.Opens == "record" {
		if err := d.recordOpens(); err != nil {
			if pol.Audit.OpensSet || pol.Journal.Required {
				srv.Unmount()
				d.close()
				return nil, fmt.Errorf("%v; or set [audit] opens = \"off\"", err)
			}
			d.log.Warn("opens through the mount are not recorded (set [audit] opens = \"record\" to make this an error)", "err", err.Error())
		}
	}
	if cfg.Socket != "" {
		if err := d.serveControl(dec); err != nil {
			srv.Unmount()
			d.close()
			return nil, fmt.Errorf("control socket %s: %w", cfg.Socket, err)
		}
		d.log.Info("control socket", "path", cfg.Socket)
	}
	if a := pol.Metrics.Listen; a != "" {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			srv.Unmount()
			d.close()
			return nil, fmt.Errorf("metrics listener %s: %w", a, err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			d.Metrics.Write(w)
		})
		d.scrape, d.scrapeAt = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln.Addr()
		go d.scrape.Serve(ln)
		d.log.Info("metrics listener", "addr", ln.Addr().String())
	}
	// The warm walk, and the history check that reuses what it met: the
	// daemon joins the two, the mount knows neither the check nor git.
	srv.Warming().Walk()
	if pol.Git.History == "warn" {
		d.job(func(ctx context.Context) {
			// A warning, not a gate: it runs in the agent's pauses, so that
			// it never competes with the agent's own commands for the disk
			// and the CPU.
			d.state.historyStarted()
			reps, err := history.Scan(ctx, srv.Guard(), history.Options{Quiet: srv.Quiet, Repos: walkedRepos(srv.Warming()), Credentials: history.CredentialsUnder(pol), Checked: d.state.checked})
			if ctx.Err() != nil {
				return // stopped: what it found so far is not the answer
			}
			d.reportHistory(reps, err)
		})
	}
	return d, nil
}

// walkedRepos is the history check's Repos from the mount's warm walk
// (warm.Engine.Walked): the working trees it met and the directories it
// did not list, each left out when it lies where the check does not look
// (history.NotLookedIn: inside node_modules, inside a .git directory).
func walkedRepos(e *warm.Engine) func(context.Context) (found, unlisted []history.Repo, ok bool) {
	return func(ctx context.Context) (found, unlisted []history.Repo, ok bool) {
		f, u, ok := e.Walked(ctx)
		return lookedIn(f), lookedIn(u), ok
	}
}

// lookedIn is the directories of ds the history check looks in, as its
// trees.
func lookedIn(ds []warm.Dir) []history.Repo {
	var out []history.Repo
	for _, d := range ds {
		if !slices.ContainsFunc(strings.Split(d.Rel, "/"), history.NotLookedIn) {
			out = append(out, history.Repo{Root: d.Root, Rel: d.Rel})
		}
	}
	return out
}

// warmOverride is the environment variable that turns the mount's warming
// engine off whatever the policy says ("0"), for an operator who wants it
// off without editing the policy; CI runs the FUSE tests so once more.
const warmOverride = "FSGUARD_WARM"

// overridden applies the environment's overrides to pol (see warmOverride).
func (d *Daemon) overridden(pol *policy.Policy) *policy.Policy {
	if os.Getenv(warmOverride) == "0" && pol.Mount.Warm {
		d.log.Info("the warming engine is off: " + warmOverride + "=0 overrides [mount] warm")
		pol.Mount.Warm = false
	}
	return pol
}

// Opens says whether opens through the mount are being recorded:
// "record" or "off".
func (d *Daemon) Opens() string {
	if d.opens == nil {
		return "off"
	}
	return "record"
}

// Server is the live mount.
func (d *Daemon) Server() *mount.Server { return d.srv }

// Wait blocks until the mount is gone (Stop, or an external unmount).
func (d *Daemon) Wait() { d.srv.Wait() }

// Reload swaps in a new policy; a bad one is refused and the old one kept.
func (d *Daemon) Reload(pol *policy.Policy) error {
	if err := d.srv.Reload(d.overridden(pol)); err != nil {
		return err
	}
	d.setMemoryLimit(pol.Limits.MemoryLimit)
	return nil
}

// Stop unmounts, waits for the mount to be gone, and writes what is left
// of the denials before closing the journal.
func (d *Daemon) Stop() error {
	if d.opens != nil {
		d.opens.Drain() // its held descriptors would keep the mount busy
	}
	d.stopJobs() // they ask the mount (its guard, its pauses) until they end
	if err := d.srv.Unmount(); err != nil {
		return err
	}
	d.srv.Wait()
	d.saveVerdicts()
	d.close()
	return nil
}

// loadVerdicts adds the classes a previous run saved beside the journal.
func (d *Daemon) loadVerdicts(pol *policy.Policy) {
	if d.rec == nil {
		return
	}
	d.verdicts = d.rec.path + ".verdicts"
	// PDFium's compiled code is kept beside them, in the same private
	// directory: a restarted daemon does not compile it again.
	document.Configure(filepath.Join(filepath.Dir(d.rec.path), "pdfium"))
	n, err := d.dec.Load(d.verdicts, pol)
	if err != nil {
		d.log.Warn("saved verdicts not used: every file is read and scanned afresh", "path", d.verdicts, "err", err.Error())
		return
	}
	if n > 0 {
		d.log.Info("saved verdicts loaded", "path", d.verdicts, "classes", n)
	}
}

// saveWhenQuiet saves the verdicts in the agent's next pause: a save
// encodes every class and writes and fsyncs the whole file, and made at
// once, beside the agent's first command after the walk, it would slow
// that command.
func (d *Daemon) saveWhenQuiet(ctx context.Context) {
	select {
	case <-d.mounted:
	case <-ctx.Done():
		return
	}
	if d.srv.Quiet(ctx) == nil {
		d.saveVerdicts()
	}
}

// saveVerdicts writes the decider's trustworthy classes beside the
// journal, for the next run.
func (d *Daemon) saveVerdicts() {
	if d.verdicts == "" {
		return
	}
	d.saveMu.Lock()
	defer d.saveMu.Unlock()
	n, err := d.dec.Save(d.verdicts, d.srv.Guard().Policy())
	if err != nil {
		d.log.Warn("verdicts not saved: the next run scans afresh", "path", d.verdicts, "err", err.Error())
		return
	}
	d.log.Info("verdicts saved", "path", d.verdicts, "classes", n)
}

// MetricsAddr is where the TCP metrics listener listens (nil: none).
func (d *Daemon) MetricsAddr() net.Addr { return d.scrapeAt }

// checkFiles looks at the journal's files every second until stop.
func (d *Daemon) checkFiles() {
	defer close(d.filesDone)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if j := d.rec.Journal(); j != nil {
				if err := j.CheckFiles(); err != nil {
					d.rec.Failed(j, err)
				}
			}
		case <-d.stopFiles:
			return
		}
	}
}

// job runs f on a background goroutine of the daemon's, under the
// daemon's context; close ends that context and waits for every job
// before it closes the journal and the rest, so no job appends to a closed
// journal. Once close began, none starts.
func (d *Daemon) job(f func(ctx context.Context)) {
	d.jobMu.Lock()
	defer d.jobMu.Unlock()
	if d.closing {
		return
	}
	d.jobs.Go(func() { pprof.Do(d.bg, pprof.Labels(JobLabel, d.cfg.MountPoint), f) })
}

// JobLabel is the profiler label on the daemon's background jobs; its
// value is the daemon's mount point, as given.
const JobLabel = "fsguard_daemon"

// stopJobs ends the background jobs' context and waits for them; none
// starts after.
func (d *Daemon) stopJobs() {
	d.jobMu.Lock()
	d.closing = true
	d.jobMu.Unlock()
	d.stopBg()
	d.jobs.Wait()
}

func (d *Daemon) close() {
	d.stopJobs()
	if d.stopFiles != nil {
		close(d.stopFiles)
		<-d.filesDone // before the journal closes
	}
	if d.opens != nil {
		d.opens.Close() // appends what is pending, before the journal closes
	}
	if d.ctl != nil {
		d.ctl.Close()
	}
	if d.scrape != nil {
		d.scrape.Close()
	}
	if d.sink != nil {
		d.sink.close()
	}
	if d.held != nil {
		d.held.Close()
	}
	d.rec.close()
	for _, l := range d.locks {
		l.Close()
	}
	d.locks = nil
}

// serveControl starts the control socket. Each request gets a service
// built on the guard in force at that moment, for its caller.
func (d *Daemon) serveControl(dec *admit.Decider) error {
	dev, err := d.srv.Dev()
	if err != nil {
		return err
	}
	m := d.Metrics
	count := func(door string, r *journal.Record) {
		d.state.saw(r)
		switch {
		case r.Kind == journal.KindDenial:
			m.Denials.Add(door+","+r.Code, 1)
		case r.Origin == journal.OriginWrite || r.Origin == journal.OriginEdit:
			m.Writes.Add(r.Origin, 1)
		case r.Origin == journal.OriginRead || r.Origin == journal.OriginLedger || r.Origin == journal.OriginDiff:
			m.Reads.Add(r.Origin, 1)
			m.Delivered.Add("", float64(r.Delivered))
			m.Saved.Add("", float64(max(r.Saved, 0))) // a counter only rises
		}
	}
	srv := d.srv
	var c *control.Server
	conns, requests := socketBounds(d.fdLimit, openDescriptors(), srv.Guard().Policy().Control.MaxRequests)
	if requests < srv.Guard().Policy().Control.MaxRequests {
		d.log.Warn("the control socket serves fewer requests at once than [control] max_requests: the descriptor limit leaves no more; raise it (LimitNOFILE=, ulimit -n)",
			"limit", d.fdLimit, "connections", conns, "requests", requests, "max_requests", srv.Guard().Policy().Control.MaxRequests)
	}
	c = &control.Server{MountDev: dev, Metrics: m, Log: d.log, MaxRequests: requests, MaxConns: conns, OnTableFull: roots.RelieveDescriptors,
		Policy: func() policy.Control { return srv.Guard().Policy().Control },
		Service: func() *session.Service {
			g := srv.Guard()
			// An open journal is tried even while the recorder says it
			// does not record: an append that fails refuses (required) or
			// notes as the mount's gate does, and one that succeeds tells
			// the recorder it records again, at once.
			j, jerr := d.rec.Journal(), d.rec.Err()
			if d.rec == nil {
				jerr = errors.New("no journal path is configured")
			}
			s := &session.Service{Guard: g, Admit: dec, Journal: j, JournalErr: jerr, RequireWholeView: g.Policy().Journal.RequireWholeView, OnWrite: srv.Refresh,
				OnRecord:      func(door string, r *journal.Record) { count(door, r); d.rec.Succeeded(j) },
				OnAppendError: func(err error) { m.JournalErrors.Add("", 1); d.rec.Failed(j, err) }, Daemon: func() *session.DaemonFacts { return d.facts(c) }}
			if d.sink != nil {
				s.OnUnrecorded = d.sink.Keep
			}
			if d.held != nil {
				s.Held = d.held
			}
			return s
		}}
	if err := c.Serve(d.cfg.Socket); err != nil {
		return err
	}
	d.ctl = c
	return nil
}

// hideHistory scans the repositories under pol's roots and adds the .git
// of each whose history exposes what the view hides to the deny paths.
func (d *Daemon) hideHistory(pol *policy.Policy) {
	g, err := roots.New(pol)
	if err != nil {
		return // Mount reports it
	}
	defer g.Close()
	d.state.historyStarted()
	reps, err := history.Scan(d.bg, g, history.Options{Credentials: history.CredentialsUnder(pol), Checked: d.state.checked})
	for _, r := range reps {
		pol.Deny.Paths = append(pol.Deny.Paths, filepath.Join(r.Root.Real, r.Repo, ".git"))
	}
	d.reportHistory(reps, err)
}

// reportHistory says what the history scan found: one warning, one
// journal record and the metric per repository.
func (d *Daemon) reportHistory(reps []history.Report, err error) {
	d.state.historyDone(err)
	if err != nil {
		d.log.Warn("the git history check did not finish", "err", err.Error())
	}
	for _, r := range reps {
		// Recorded first, so whoever reads the warning finds the record.
		if j := d.rec.Journal(); j != nil {
			j.Append(&journal.Record{Kind: journal.KindHistory, Path: filepath.Join(r.Root.Path, r.Repo), Code: "HISTORY_EXPOSES", Detail: r.Summary(), Pid: uint32(os.Getpid())})
		}
		d.Metrics.History.Add("", float64(len(r.Findings)))
		d.log.Warn(r.Summary(), "repo", filepath.Join(r.Root.Path, r.Repo), "findings", len(r.Findings))
	}
}

// journalStopped is told when the journal stops recording: with
// [journal] required, what the kernel holds of the mount is dropped, so
// that nothing is served from its caches that the daemon would refuse.
func (d *Daemon) journalStopped() {
	select {
	case <-d.mounted:
	default:
		return // nothing cached yet
	}
	if d.srv.Guard().Policy().Journal.Required {
		d.srv.Invalidate()
	}
}

// journalBack is told when the journal records again: the denials kept
// meanwhile are written.
func (d *Daemon) journalBack() {
	if d.sink != nil {
		d.sink.kick()
	}
}
