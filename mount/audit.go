package mount

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"fsguard/caller"
	"fsguard/refusal"

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
}

// Auditor receives denials. The journal implements it; until then, and
// whenever no journal is configured, JSONLines writes them as log lines.
type Auditor interface {
	Denial(Denial)
}

func newDenial(c *fuse.Caller, path string, code refusal.Code) Denial {
	d := Denial{Time: time.Now().UTC(), Path: path, Code: code}
	if c != nil {
		d.Pid, d.Uid = c.Pid, c.Uid
		d.Process = caller.ProcessName(c.Pid)
	}
	return d
}

// JSONLines writes each denial as one JSON object per line.
type JSONLines struct {
	mu sync.Mutex
	W  io.Writer
}

func (j *JSONLines) Denial(d Denial) {
	b, _ := json.Marshal(struct {
		Msg string `json:"msg"`
		Denial
	}{"denied", d})
	j.mu.Lock()
	defer j.mu.Unlock()
	j.W.Write(append(b, '\n'))
}
