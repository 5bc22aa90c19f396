package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/fileid"
	"github.com/fsguard/fsguard/internal/store/journal"
	"github.com/fsguard/fsguard/internal/view/opens"
)

// recordOpens starts the access audit of the mount ([audit] opens =
// "record"): every open of a file through it, by any process, becomes an
// access record, aggregated per process and file version per second and
// appended in batches off every opener's path.
func (d *Daemon) recordOpens() error {
	if d.rec == nil {
		return nil // nowhere to record them; the daemon said so already
	}
	rec, err := opens.Start(d.srv.MountPoint(), opens.Config{Emit: d.appendOpens, Seen: d.srv.Used, Own: d.srv.Own})
	if err != nil {
		return err
	}
	d.opens = rec
	if err := rec.ExitsUnknown(); err != nil {
		d.log.Warn("processes that exit before their opens are recorded are not named (no taskstats exit notifications)", "err", err.Error())
	}
	return nil
}

// maxBatch bounds one append (one transaction, one fsync), so an agent's
// read waiting for the journal's write lock waits for one batch at most.
const maxBatch = 512

// appendOpens turns a batch into access records and appends them.
func (d *Daemon) appendOpens(batch []opens.Access, lost opens.Lost) {
	pol := d.srv.Guard().Policy()
	if pol.Audit.Opens != "record" {
		return // turned off by a reload
	}
	recs := make([]*journal.Record, 0, min(len(batch)+1, maxBatch))
	flush := func() {
		if len(recs) == 0 {
			return
		}
		j, err := d.rec.Journal(), d.rec.Err()
		if j == nil && err == nil {
			err = errors.New("the journal is being reopened")
		}
		if err == nil {
			if err = j.Append(recs...); err != nil {
				d.rec.Failed(j, err)
			}
		}
		if err != nil {
			d.Metrics.JournalErrors.Add("", float64(len(recs)))
			d.log.Error("journal append failed: access records not recorded", "err", err.Error(), "count", len(recs))
		} else {
			d.Metrics.Opens.Add("", float64(len(recs)))
		}
		recs = recs[:0]
	}
	for _, a := range batch {
		r := &journal.Record{Kind: journal.KindAccess, Time: a.Time, Session: d.cfg.Session, Path: a.Path,
			Pid: a.Pid, Uid: a.Process.Uid, Process: a.Process.Name, Cgroup: a.Process.Cgroup, Opens: a.Opens}
		if t, ok := d.srv.Locate(a.Ino); ok {
			if pol.Unaudited(t.Root.Path, t.Root.Real, t.Rel) {
				continue
			}
			r.Path = openedPath(a.Path, a.Unlinked, t.Rel)
			id := fileid.Identity{Dev: t.Dev, Ino: t.Ino, Size: a.Size, MtimeNs: a.MtimeNs, CtimeNs: a.CtimeNs}
			r.RealPath, r.StatID = t.Real, fileid.StatID(t.Real, id) // statId names the version; its identity would add a sixth to each record
		}
		var why []string
		if a.Process.Name == "" {
			why = append(why, "the process exited before it could be named")
		}
		if a.Changed {
			why = append(why, "the file changed after this open and before it was recorded: the version named may be newer than the one opened")
		}
		r.Detail = strings.Join(why, "; ")
		recs = append(recs, r)
		if len(recs) == maxBatch {
			flush()
		}
	}
	if lost.Any() {
		r := &journal.Record{Kind: journal.KindAccess, Time: lost.To, Session: d.cfg.Session, Code: "ACCESS_LOST", Pid: uint32(os.Getpid())}
		if lost.Overflows > 0 {
			r.Detail = fmt.Sprintf("the kernel's queue of open events overflowed %d times between %s and %s: some opens in that time are not recorded", lost.Overflows, lost.From.Format("15:04:05.000"), lost.To.Format("15:04:05.000"))
			d.Metrics.OpensLost.Add("overflow", float64(lost.Overflows))
		}
		if lost.Dropped > 0 {
			if r.Detail != "" {
				r.Detail += "; "
			}
			r.Detail += fmt.Sprintf("%d opens between %s and %s arrived while the pending set was full and are not recorded", lost.Dropped, lost.From.Format("15:04:05.000"), lost.To.Format("15:04:05.000"))
			d.Metrics.OpensLost.Add("dropped", float64(lost.Dropped))
		}
		d.log.Warn("opens not all recorded", "detail", r.Detail)
		recs = append(recs, r)
	}
	flush()
}

// unhashed is what the kernel appends to its name of a descriptor whose
// name it no longer holds ("/a/b (deleted)").
const unhashed = " (deleted)"

// openedPath is where the opener saw the file, from path, the kernel's name
// of the open's descriptor, and rel, the file's place in its root. The
// kernel calls a name it dropped "deleted", and the mount has it drop a
// name it holds whenever the watch sees that name made in the backing tree
// (a file written just before it was opened, its event handled after the
// open) or the policy is reloaded: the file is there, and the record must
// name it. The suffix is cut only when the file still has a link and the
// name without it is the file's own, so a file whose own name ends so, or
// one deleted since, keeps it.
func openedPath(path string, unlinked bool, rel string) string {
	p, ok := strings.CutSuffix(path, unhashed)
	if !ok || unlinked || filepath.Base(p) != filepath.Base(rel) {
		return path
	}
	return p
}
