package mount

import (
	"log/slog"
	"time"

	"github.com/fsguard/fsguard/internal/concept/refusal"
	"github.com/fsguard/fsguard/internal/decide/caller"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Denial is one refused access through the mount.
type Denial struct {
	Time time.Time `json:"time"`
	// Path is the name the caller used, relative to the mount's top ("/.env");
	// the daemon puts it in the caller's own view when it can.
	Path string `json:"path"`
	// RealPath is the backing file's real path.
	RealPath string       `json:"realPath,omitempty"`
	Code     refusal.Code `json:"code"`
	Pid      uint32       `json:"pid"`
	Uid      uint32       `json:"uid"`
	Process  string       `json:"process"`
	// Count is how many denials this one stands for (an auditor that
	// coalesces repeats sets it); 0 is one.
	Count int64 `json:"count,omitempty"`
}

// Auditor receives denials. The daemon's sink journals them; LogLines
// writes them as log lines.
type Auditor interface {
	Denial(Denial)
}

func newDenial(c *fuse.Caller, shown string, code refusal.Code) Denial {
	d := Denial{Time: time.Now().UTC(), Path: shown, Code: code}
	if c != nil {
		d.Pid, d.Uid = c.Pid, c.Uid
		d.Process = caller.ProcessName(c.Pid)
	}
	return d
}

// LogLines writes each denial as a log line (level WARN, msg "denied")
// through the daemon's structured logger, like its other lines.
type LogLines struct{ Log *slog.Logger }

func (l LogLines) Denial(d Denial) {
	if d.Count > 1 {
		l.Log.Warn("denied", "path", d.Path, "realPath", d.RealPath, "code", string(d.Code), "pid", d.Pid, "uid", d.Uid, "process", d.Process, "count", d.Count)
		return
	}
	l.Log.Warn("denied", "path", d.Path, "realPath", d.RealPath, "code", string(d.Code), "pid", d.Pid, "uid", d.Uid, "process", d.Process)
}
