package daemon

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// The daemon holds the mount and every container's socket: an OOM kill
// takes them all. Each request is bounded on its own; the daemon also
// sets the Go runtime's memory limit, so that near it the collector works
// harder instead of letting the heap grow into the cgroup's hard limit.

// memoryLimit is the limit the daemon sets and where it came from:
// GOMEMLIMIT in the environment (the runtime read it; nothing is set),
// the policy's [limits] memory_limit, or the cgroup's memory.max less
// headroom. 0: none is set.
func memoryLimit(policyLimit int64, cgroupMax func() int64) (int64, string) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, "GOMEMLIMIT"
	}
	if policyLimit > 0 {
		return policyLimit, "policy"
	}
	if max := cgroupMax(); max > 0 {
		return max - headroom(max), "cgroup"
	}
	return 0, ""
}

// headroom is what is left below the cgroup's limit for memory the Go
// runtime does not count (the kernel's buffers for the FUSE device and
// sockets, thread stacks): an eighth, at most 256 MiB.
func headroom(max int64) int64 { return min(max/8, 256<<20) }

// setMemoryLimit applies memoryLimit and says what it set.
func (d *Daemon) setMemoryLimit(policyLimit int64) {
	limit, from := memoryLimit(policyLimit, cgroupMemoryMax)
	switch {
	case from == "GOMEMLIMIT":
		d.log.Info("memory limit", "from", from, "bytes", debug.SetMemoryLimit(-1))
	case limit > 0:
		debug.SetMemoryLimit(limit)
		d.log.Info("memory limit", "from", from, "bytes", limit)
	default:
		d.log.Info("memory limit", "from", "none", "note", "no [limits] memory_limit, GOMEMLIMIT or bounded cgroup: the daemon's memory is bounded per request only")
	}
}

// cgroupMemoryMax is the memory.max of this process's cgroup (v2), or
// memory.limit_in_bytes (v1); 0 when unbounded or unknown.
func cgroupMemoryMax() int64 {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			file = filepath.Join("/sys/fs/cgroup", parts[2], "memory.max")
		case strings.Contains(","+parts[1]+",", ",memory,"):
			file = filepath.Join("/sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes")
		default:
			continue
		}
		if v := readLimit(file); v > 0 {
			return v
		}
	}
	return 0
}

// readLimit reads a cgroup limit file: "max" (or v1's near-2^63 value)
// is no limit.
func readLimit(file string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || v >= 1<<62 {
		return 0
	}
	return v
}
