// Package metrics owns the daemon's Prometheus-format metrics: labelled
// counters and latency histograms kept in memory since the daemon started,
// written in the text exposition format. Small on purpose: a handful of
// series, no client library.
package metrics

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsguard/fsguard/internal/concept/version"
	"golang.org/x/sys/unix"
)

// Counter is a monotonically increasing value per label value.
type Counter struct {
	Name, Help, Label string
	mu                sync.Mutex
	vals              map[string]float64
}

// Add adds v to the series with label value lv ("" when unlabelled).
func (c *Counter) Add(lv string, v float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.vals == nil {
		c.vals = map[string]float64{}
	}
	c.vals[lv] += v
}

func (c *Counter) write(w io.Writer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", c.Name, c.Help, c.Name)
	if len(c.vals) == 0 && c.Label == "" {
		fmt.Fprintf(w, "%s 0\n", c.Name)
	}
	for _, lv := range sortedKeys(c.vals) {
		fmt.Fprintf(w, "%s%s %g\n", c.Name, labels(c.Label, lv, ""), c.vals[lv])
	}
}

// Histogram counts observations into fixed buckets, per label value.
type Histogram struct {
	Name, Help, Label string
	Buckets           []float64 // upper bounds, ascending, in seconds
	mu                sync.Mutex
	series            map[string]*hseries
}

type hseries struct {
	counts []uint64
	sum    float64
	n      uint64
}

// Observe records one duration.
func (h *Histogram) Observe(lv string, d time.Duration) {
	s := d.Seconds()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.series == nil {
		h.series = map[string]*hseries{}
	}
	hs := h.series[lv]
	if hs == nil {
		hs = &hseries{counts: make([]uint64, len(h.Buckets))}
		h.series[lv] = hs
	}
	for i, b := range h.Buckets {
		if s <= b {
			hs.counts[i]++
		}
	}
	hs.sum += s
	hs.n++
}

func (h *Histogram) write(w io.Writer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", h.Name, h.Help, h.Name)
	keys := make([]string, 0, len(h.series))
	for k := range h.series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, lv := range keys {
		hs := h.series[lv]
		for i, b := range h.Buckets {
			fmt.Fprintf(w, "%s_bucket%s %d\n", h.Name, labels(h.Label, lv, fmt.Sprintf("%g", b)), hs.counts[i])
		}
		fmt.Fprintf(w, "%s_bucket%s %d\n", h.Name, labels(h.Label, lv, "+Inf"), hs.n)
		fmt.Fprintf(w, "%s_sum%s %g\n%s_count%s %d\n", h.Name, labels(h.Label, lv, ""), hs.sum, h.Name, labels(h.Label, lv, ""), hs.n)
	}
}

// labels renders a series' labels. A counter's label may be several names
// separated by commas ("source,code"), its values then likewise.
func labels(name, value, le string) string {
	var parts []string
	if name != "" {
		names, values := strings.Split(name, ","), strings.Split(value, ",")
		for i, n := range names {
			v := ""
			if i < len(values) {
				v = values[i]
			}
			parts = append(parts, fmt.Sprintf("%s=%q", n, v))
		}
	}
	if le != "" {
		parts = append(parts, fmt.Sprintf("le=%q", le))
	}
	if len(parts) == 0 {
		return ""
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Set is the daemon's metrics.
type Set struct {
	Reads         Counter
	Denials       Counter
	Delivered     Counter
	Saved         Counter
	History       Counter
	Events        Counter
	Writes        Counter
	JournalErrors Counter
	Opens         Counter
	OpensLost     Counter
	Prefetched    Counter
	ListedAhead   Counter
	Masked        Counter
	SocketRefused Counter
	FuseOps       Histogram
	// HeldBytes, when set, is the held-content store's size, read at
	// each scrape.
	HeldBytes func() (int64, error)
	// Scans, when set, counts the admission decider's content scans.
	Scans func() int64
	// DescriptorHits, when set, counts the opens that found the
	// descriptor table full.
	DescriptorHits func() int64
}

// New returns the daemon's metric set.
func New() *Set {
	return &Set{
		Reads:         Counter{Name: "fsguard_reads_total", Help: "Agent reads answered, by origin (read: lines shown; ledger: a notice instead).", Label: "origin"},
		Denials:       Counter{Name: "fsguard_denials_total", Help: "Refused accesses, by the door that refused (mount; cli, mcp or socket for requests on the control socket) and refusal code.", Label: "source,code"},
		Delivered:     Counter{Name: "fsguard_bytes_delivered_total", Help: "Bytes of read output handed to agents."},
		Saved:         Counter{Name: "fsguard_ledger_bytes_saved_total", Help: "Bytes not sent because the session already held the lines, or a smaller diff said the same."},
		History:       Counter{Name: "fsguard_history_findings_total", Help: "Paths or keys in a repository's git history that the view hides, found at mount start."},
		Writes:        Counter{Name: "fsguard_writes_total", Help: "Files replaced by write or edit through the socket, by origin.", Label: "origin"},
		JournalErrors: Counter{Name: "fsguard_journal_append_errors_total", Help: "Records the journal could not append (each also logged or said to the caller)."},
		Events:        Counter{Name: "fsguard_mount_events_total", Help: "The mount's own events: a root missing, a root reopened at its configured path, the warm walk done, a repository's index view made by it.", Label: "event"},
		Opens:         Counter{Name: "fsguard_opens_total", Help: "Opens of files through the mount recorded as access records (aggregated per process and file version)."},
		OpensLost:     Counter{Name: "fsguard_opens_lost_total", Help: "Times opens could not be recorded one by one: the kernel's event queue overflowed, or opens were dropped while the pending set was full.", Label: "reason"},
		Prefetched:    Counter{Name: "fsguard_prefetch_files_total", Help: "Small files pushed into the kernel's page cache after a listing named them (pushed), not pushed because the queue was full (dropped) or the kernel did not know the file in time (unknown), invalidated because they changed while pushed (changed), or not pushed again by a refill because the kernel still held them whole (held).", Label: "result"},
		Masked:        Counter{Name: "fsguard_masked_spans_total", Help: "Credentials found in file versions and shown masked through every door, by family (a version counted once, when decided).", Label: "family"},
		ListedAhead:   Counter{Name: "fsguard_listed_ahead_total", Help: "Directories listed in the background before the walker that listed their parent asked: used by its listing, dropped because something in them changed (stale), or never asked for in time (unused).", Label: "result"},
		SocketRefused: Counter{Name: "fsguard_socket_refused_total", Help: "Connections and requests the control socket turned away unserved, by reason: a uid the policy does not allow (uid), no peer credentials (credentials), a uid at its share of connections (connections), no request slot within the wait (busy), a request line not sent in time (timeout).", Label: "reason"},
		FuseOps: Histogram{Name: "fsguard_fuse_op_seconds", Help: "Latency of FUSE operations served by the daemon.", Label: "op",
			Buckets: []float64{10e-6, 50e-6, 100e-6, 500e-6, 1e-3, 5e-3, 25e-3, 100e-3, 1}},
	}
}

// Write writes the exposition.
func (s *Set) Write(w io.Writer) {
	s.Reads.write(w)
	s.Denials.write(w)
	s.Delivered.write(w)
	s.Saved.write(w)
	s.History.write(w)
	s.Events.write(w)
	s.Writes.write(w)
	s.Masked.write(w)
	s.JournalErrors.write(w)
	s.Opens.write(w)
	s.OpensLost.write(w)
	s.Prefetched.write(w)
	s.ListedAhead.write(w)
	s.SocketRefused.write(w)
	s.FuseOps.write(w)
	if s.HeldBytes != nil {
		if n, err := s.HeldBytes(); err == nil {
			fmt.Fprintf(w, "# HELP fsguard_held_content_bytes Compressed bytes in the held-content store (capped by journal.held_max_bytes).\n# TYPE fsguard_held_content_bytes gauge\nfsguard_held_content_bytes %d\n", n)
		}
	}
	if s.Scans != nil {
		fmt.Fprintf(w, "# HELP fsguard_admit_scans_total Files read and classified because their version's verdict was not known (not remembered, nor saved by an earlier run).\n# TYPE fsguard_admit_scans_total counter\nfsguard_admit_scans_total %d\n", s.Scans())
	}
	if s.DescriptorHits != nil {
		fmt.Fprintf(w, "# HELP fsguard_descriptor_limit_hits_total Opens that found the descriptor table full (RLIMIT_NOFILE): the kept descriptors were closed and the open retried.\n# TYPE fsguard_descriptor_limit_hits_total counter\nfsguard_descriptor_limit_hits_total %d\n", s.DescriptorHits())
	}
	writeProcess(w)
	fmt.Fprintf(w, "# HELP fsguard_build_info The running build: version and Go version.\n# TYPE fsguard_build_info gauge\nfsguard_build_info{version=%q,goversion=%q} 1\n", Version(), runtime.Version())
}

// Version is this build's version (internal/concept/version), the one
// --version and the MCP serverInfo report too.
func Version() string { return version.String() }

// writeProcess writes the standard Go and process gauges (the names the
// Prometheus client library uses), so a leak of goroutines or descriptors
// shows on a dashboard.
func writeProcess(w io.Writer) {
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %s\n", name, help, name, name, strconv.FormatFloat(v, 'g', -1, 64))
	}
	gauge("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gauge("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and still in use.", float64(ms.HeapAlloc))
	gauge("go_memstats_sys_bytes", "Number of bytes obtained from system.", float64(ms.Sys))
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		gauge("process_open_fds", "Number of open file descriptors.", float64(len(ents)))
	}
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil {
		gauge("process_max_fds", "Maximum number of open file descriptors.", float64(lim.Cur))
	}
	// /proc/self/stat: utime and stime (fields 14, 15) in clock ticks,
	// starttime (22) in ticks since boot, vsize (23) in bytes, rss (24) in
	// pages. The kernel's tick is 100 Hz on every Linux this runs on.
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from 3 on
	if len(f) < 22 {
		return
	}
	num := func(i int) float64 { v, _ := strconv.ParseFloat(f[i-3], 64); return v }
	const hz = 100
	fmt.Fprintf(w, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %s\n",
		strconv.FormatFloat((num(14)+num(15))/hz, 'g', -1, 64))
	gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", num(23))
	gauge("process_resident_memory_bytes", "Resident memory size in bytes.", num(24)*float64(os.Getpagesize()))
	var info unix.Sysinfo_t
	if unix.Sysinfo(&info) == nil {
		boot := float64(time.Now().Unix() - int64(info.Uptime))
		gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", boot+num(22)/hz)
	}
}
