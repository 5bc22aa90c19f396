// Package policy owns fsguard's configuration: the policy.toml format, its
// defaults (the embedded default policy), and validation that rejects a bad
// file with the key and line at fault before anything runs.
package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// DefaultDeny is the deny list every policy starts from unless it sets
// deny.use_defaults = false.
var DefaultDeny = []string{
	"**/.env",
	"**/.env.*",
	"**/*.pem",
	"**/*.key",
	"**/id_rsa*",
	"**/id_ed25519*",
	"**/id_ecdsa*",
	"**/id_dsa*",
	"**/.ssh/**",
	"**/.aws/**",
	"**/.gnupg/**",
	"**/.netrc",
	// Credential files, as gitleaks and trufflehog list them: each holds a
	// token in plain text.
	"**/.git-credentials",
	"**/.kube/config",
	"**/.docker/config.json",
	"**/.dockercfg",
	"**/.npmrc",
	"**/.yarnrc.yml",
	"**/.pypirc",
	"**/.pgpass",
	"**/.my.cnf",
	"**/.vault-token",
	"**/.s3cfg",
	"**/.boto",
	"**/.htpasswd",
	"**/.config/gh/hosts.yml",
	"**/.config/hub",
	"**/.config/gcloud/**",
	"**/.azure/**",
	"**/.terraform.d/credentials.tfrc.json",
	"**/.terraformrc",
	"**/.gem/credentials",
	"**/.cargo/credentials",
	"**/.cargo/credentials.toml",
	"**/.composer/auth.json",
	"**/*.p12",
	"**/*.pfx",
	"**/*.jks",
	"**/*.keystore",
	"**/*.kdbx",
}

// DefaultWriteDeny is what the agent may not write unless the policy sets
// write.use_defaults = false: files the host runs on its own (git's config
// and hooks, a .git file that points git elsewhere, direnv's .envrc) and
// ssh's configuration. The read deny list applies to writes as well.
var DefaultWriteDeny = []string{
	"**/.git",
	"**/.git/**",
	"**/.envrc",
	"**/.ssh/**",
}

// Policy is a loaded, validated policy.
type Policy struct {
	Roots   []Root
	Deny    Deny
	Limits  Limits
	Sniff   Sniff
	Journal Journal
	Mount   Mount
	Control Control
	Write   Write
	Git     Git
	Metrics Metrics
	Audit   Audit
	Secrets Secrets

	// Source is the file the policy came from, or "embedded default".
	Source string
	// Digest is the SHA-256 of the file's bytes as they were read (hex;
	// "" for the embedded default), so an operator can tell which version
	// of the file a daemon runs under.
	Digest string
}

// Root is one allowed directory. Path is absolute and clean as configured;
// Real is its symlink-free form, which is what resolution works from.
type Root struct {
	Path string `toml:"path"`
	Name string `toml:"name"`
	// CrossMounts lets paths enter mount points below the root. Off by
	// default: a bind mount inside a root does not widen the view.
	CrossMounts bool   `toml:"cross_mounts"`
	Real        string `toml:"-"`
}

// Deny holds the deny rules: absolute subtrees and globs.
type Deny struct {
	UseDefaults *bool    `toml:"use_defaults"`
	Paths       []string `toml:"paths"`
	Globs       []Glob   `toml:"globs"`
	// HardLinks decides on a file with more than one name: "known" (the
	// default) hides it when another name it has under the roots is
	// denied, and judges it like any file otherwise (its other names
	// outside the roots cannot be seen); "inside" shows it only when every
	// other name is known, inside the roots and not denied; "strict" never
	// shows it; "allow" ignores links.
	HardLinks string `toml:"hard_links"`
	// Fold matches names as people read them (see Fold): case-, NFC- and
	// format-character-insensitively, without trailing spaces and dots.
	// Default true.
	Fold *bool `toml:"fold"`
}

// Folds reports whether deny, write-deny and allow rules compare folded
// names.
func (p *Policy) Folds() bool { return p.Deny.Fold == nil || *p.Deny.Fold }

// Limits bound what one read may show and scan.
type Limits struct {
	MaxLines      int   `toml:"max_lines"`
	MaxLineChars  int   `toml:"max_line_chars"`
	MaxBytes      int   `toml:"max_bytes"`
	MaxScanBytes  int64 `toml:"max_scan_bytes"`
	SampleBytes   int   `toml:"sample_bytes"`
	MaxMediaBytes int64 `toml:"max_media_bytes"`
	// MaxDirEntries bounds the entries of a directory a read lists: a
	// larger directory is refused, as the listing holds them all at once.
	MaxDirEntries int `toml:"max_dir_entries"`
	// MemoryLimit is the daemon's own memory limit in bytes (the Go
	// runtime's soft limit: it collects harder as it nears it). 0: the
	// cgroup's memory.max less headroom, or none outside a bounded cgroup;
	// GOMEMLIMIT in the environment overrides both.
	MemoryLimit int64 `toml:"memory_limit"`
}

// Sniff lists the content classes that are refused outright, by every door
// (read, socket, MCP, mount), and the places exempt from that.
type Sniff struct {
	Refuse []string `toml:"refuse"`
	// AllowGlobs exempts matching paths (relative to their root, or
	// absolute) from content refusals: e.g. "**/testdata/**" holding test
	// keys. Name deny rules still apply.
	AllowGlobs []Glob `toml:"allow_globs"`
	// Archives says what is done with packed files (gzip, tar, zip, by
	// their content): "scan" (the default) looks into them, their
	// members checked by name and content as files of the tree are, and
	// refuses one that cannot be checked within the bounds; "deny"
	// refuses every packed file; "allow" serves them unopened.
	Archives string `toml:"archives"`
}

// The values of [sniff] archives.
const (
	ArchivesScan  = "scan"
	ArchivesDeny  = "deny"
	ArchivesAllow = "allow"
)

// Allowed reports whether rel beneath a root (configured path base, real
// path real) is exempt from content refusals.
func (p *Policy) Allowed(base, real, rel string) bool {
	return p.matchAny(p.Sniff.AllowGlobs, base, real, rel)
}

// Unaudited reports whether opens of rel beneath a root (configured path
// base, real path real) are left out of the access records.
func (p *Policy) Unaudited(base, real, rel string) bool {
	return p.matchAny(p.Audit.Exclude, base, real, rel)
}

// matchAny reports whether one of globs matches rel beneath a root, by
// its root-relative path or either absolute form.
func (p *Policy) matchAny(globs []Glob, base, real, rel string) bool {
	if len(globs) == 0 {
		return false
	}
	for _, b := range []string{real, base} {
		if MatchGlobs(globs, rel, filepath.Join(b, rel), p.Folds()) >= 0 {
			return true
		}
	}
	return false
}

// MatchGlobs returns the index of the first glob that matches rel (root-
// relative, "." for the root) or abs (for absolute globs), or -1. Paths
// are split once for all globs.
func MatchGlobs(globs []Glob, rel, abs string, fold bool) int {
	var relSegs, absSegs []string
	for i, gl := range globs {
		if gl.Absolute() {
			if absSegs == nil {
				absSegs = SplitName(abs, fold)
			}
			if gl.MatchName(absSegs, fold) {
				return i
			}
			continue
		}
		if rel == "." || rel == "" {
			continue
		}
		if relSegs == nil {
			relSegs = SplitName(rel, fold)
		}
		if gl.MatchName(relSegs, fold) {
			return i
		}
	}
	return -1
}

// MatchGlobsLast is MatchGlobs for a path none of whose ancestors any of
// globs matches (an entry of a listed directory that MatchGlobs passed): a
// glob matches a path when it matches the path or an ancestor, so only the
// whole path is left to try, and most rules are rejected by their last
// segment alone. relSegs and absSegs are the path split as SplitName
// splits it; absSegs is used only by absolute globs.
func MatchGlobsLast(globs []Glob, relSegs, absSegs []string, fold bool) int {
	for i, gl := range globs {
		segs := relSegs
		if gl.Absolute() {
			segs = absSegs
		}
		if len(segs) > 0 && gl.matchWhole(segs, fold) {
			return i
		}
	}
	return -1
}

// Journal says where the journal lives.
type Journal struct {
	Path string `toml:"path"`
	// RequireWholeView: a write needs the session to have been handed
	// every line of the current version, not just some of it.
	RequireWholeView bool `toml:"require_whole_view"`
	// Required makes every command fail closed when the journal cannot
	// record: a read that cannot be recorded is refused, and the daemon
	// does not start without its journal.
	Required bool `toml:"required"`
	// HeldMaxBytes caps the held-content store beside the journal (the
	// versions sessions were handed, compressed, for diffs on changed
	// re-reads and for anchored edits); 0 keeps nothing.
	HeldMaxBytes int64 `toml:"held_max_bytes"`
}

// Mount tunes the FUSE view.
type Mount struct {
	// Denied is "hide" (ENOENT, the default) or "eacces".
	Denied string `toml:"denied"`
	// EntryTimeout and AttrTimeout are how long the kernel may cache names
	// and attributes. Longer is faster; the cost is that a change in the
	// backing tree (including a new deny match by rename) shows up late.
	EntryTimeout Duration `toml:"entry_timeout"`
	AttrTimeout  Duration `toml:"attr_timeout"`
	// Open is "kernel" (the kernel opens files without asking the daemon;
	// the policy is enforced at LOOKUP and READ) or "daemon" (every open
	// is checked by the daemon, and large files use FUSE passthrough).
	Open string `toml:"open"`
	// PassthroughMinBytes: in "daemon" open mode, files at least this
	// large are read through FUSE passthrough; smaller ones through the
	// daemon and the page cache.
	PassthroughMinBytes int64 `toml:"passthrough_min_bytes"`
	// PassthroughUnchecked lets passthrough serve files that can change
	// (every file not FS_IMMUTABLE_FL): the kernel then reads the backing
	// file with no check of the bytes it reads, so one changed in place
	// after its open (a key written into it) is served as it is. Off, only
	// immutable files are passed through; the others are read through the
	// daemon, which checks every READ's bytes.
	PassthroughUnchecked bool `toml:"passthrough_unchecked"`
	// Watch is how the daemon learns of changes in the backing tree, to
	// invalidate what the kernel cached: "auto" (fanotify where every root
	// is a whole filesystem, else inotify; see watch.Start),
	// "fanotify", "inotify", or "off" (no watch: names and attributes are
	// then cached for at most 1 s, so changes show within that).
	Watch string `toml:"watch"`
	// Warm turns the mount's warming engine on: pushes of small files'
	// bytes into the page cache after a listing names them, listings made
	// ahead of a walker, refills of what the machine reclaimed, and the
	// warm walk (with a watch only; see mount's gate and warm walk).
	// False: the kernel's caches fill only as the agent reads.
	Warm bool `toml:"warm"`
	// WarmWalk (with Warm): the daemon walks the mount right after
	// mounting, as a tree walker would, so the kernel caches its names and
	// the small files' bytes before the agent asks; WarmMaxBytes bounds
	// the bytes it pushes into the page cache.
	WarmWalk     bool  `toml:"warm_walk"`
	WarmMaxBytes int64 `toml:"warm_max_bytes"`
}

// Control configures the daemon's control socket.
type Control struct {
	Socket string `toml:"socket"`
	// AllowUids and AllowGids name who besides root may connect (decided
	// from the kernel's peer credentials at accept; a gid matches the
	// primary or any supplementary group). Empty: root only.
	AllowUids []uint32 `toml:"allow_uids"`
	AllowGids []uint32 `toml:"allow_gids"`
	// MaxRequests bounds the requests served at once; more wait.
	MaxRequests int `toml:"max_requests"`
}

// Metrics configures where Prometheus can scrape the daemon: /metrics is
// always on the control socket; Listen ("127.0.0.1:9469") also serves it,
// and only it, over TCP. Empty: no TCP listener.
type Metrics struct {
	Listen string `toml:"listen"`
}

// Git says what to do when a repository's history holds what the view
// hides (a denied path, a private key): "warn" (the default: a warning at
// mount start and in policy check, a metric and a journal record) or
// "hide" (also hide that repository's .git from the view).
type Git struct {
	History string `toml:"history"`
}

// Audit says what the daemon records about the mount beyond denials.
type Audit struct {
	// Opens is "record" (the default: every open of a file through the
	// mount, by any process in any mount namespace, becomes an access
	// record in the journal, aggregated per process and file version) or
	// "off".
	Opens string `toml:"opens"`
	// OpensSet: the policy file says opens = "record" itself, so a
	// daemon that cannot record them must not start; by default it
	// starts and says that it does not record them.
	OpensSet bool `toml:"-"`
	// Exclude: opens of paths these globs match (root-relative, as deny
	// globs) are not recorded, e.g. "**/node_modules/**".
	Exclude []Glob `toml:"exclude"`
}

// Write holds what may not be written (by write and edit), beyond the read
// deny list, which applies to writes too.
type Write struct {
	UseDefaults *bool  `toml:"use_defaults"`
	DenyGlobs   []Glob `toml:"deny_globs"`
	// HookManagers decides on the files of hook managers
	// (HookManagerGlobs), whose commands run on the host at the next
	// commit: "deny" (the default) refuses writing them, "allow" lets the
	// agent change what the developer's commits run.
	HookManagers string `toml:"hook_managers"`
}

// HookManagerGlobs are the files in which hook managers keep the commands
// git hooks run: husky's .husky/, pre-commit's config, lefthook's configs
// and script directories, overcommit's and simple-git-hooks' configs.
var HookManagerGlobs = mustGlobs(
	"**/.husky",
	"**/.pre-commit-config.yaml", "**/.pre-commit-config.yml",
	"**/lefthook.yml", "**/lefthook.yaml", "**/lefthook.json", "**/lefthook.toml", "**/lefthook.jsonc",
	"**/.lefthook.yml", "**/.lefthook.yaml", "**/.lefthook.json", "**/.lefthook.toml", "**/.lefthook.jsonc",
	"**/lefthook-local.yml", "**/lefthook-local.yaml", "**/lefthook-local.json", "**/lefthook-local.toml",
	"**/.lefthook-local.yml", "**/.lefthook-local.yaml", "**/.lefthook-local.json", "**/.lefthook-local.toml",
	"**/.lefthook", "**/.lefthook-local",
	"**/.overcommit.yml", "**/.git-hooks",
	"**/.simple-git-hooks.json", "**/.simple-git-hooks.js", "**/.simple-git-hooks.cjs", "**/.simple-git-hooks.mjs",
	"**/simple-git-hooks.json", "**/simple-git-hooks.js", "**/simple-git-hooks.cjs", "**/simple-git-hooks.mjs",
)

// mustGlobs compiles built-in globs.
func mustGlobs(src ...string) []Glob {
	out := make([]Glob, len(src))
	for i, s := range src {
		g, err := CompileGlob(s)
		if err != nil {
			panic(err) // the built-in lists are tested
		}
		out[i] = g
	}
	return out
}

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration struct{ time.Duration }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", b)
	}
	d.Duration = v
	return nil
}

func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Known sniff classes that a policy may refuse.
var SniffClasses = []string{"private-key", "binary", "image"}

func defaults() Policy {
	return Policy{
		Limits: Limits{
			MaxLines:      2000,
			MaxLineChars:  2000,
			MaxBytes:      50 * 1024,
			MaxScanBytes:  1 << 30,
			SampleBytes:   8192,
			MaxMediaBytes: 5 << 20,
			MaxDirEntries: 20000,
		},
		Sniff:   Sniff{Refuse: []string{"private-key"}, Archives: ArchivesScan},
		Journal: Journal{HeldMaxBytes: 256 << 20},
		Control: Control{MaxRequests: 16},
		Git:     Git{History: "warn"},
		Audit:   Audit{Opens: "record"},
		Mount: Mount{
			Denied: "hide",
			Open:   "kernel",
			// Long: the watch, not expiry, keeps the kernel's cache fresh
			// (cut to 1 s when no watch can be set).
			EntryTimeout:        Duration{time.Hour},
			AttrTimeout:         Duration{time.Hour},
			PassthroughMinBytes: 64 * 1024,
			Watch:               "auto",
			Warm:                true,
			WarmWalk:            true,
			WarmMaxBytes:        256 << 20,
		},
	}
}

// EmbeddedDefault is the Source of the policy a run without a policy file
// uses (Default).
const EmbeddedDefault = "embedded default"

// Default returns the embedded default policy: dir as the only root, the
// default deny list and limits. It refuses to make the whole file system,
// or a home directory itself, the root: run from there, an agent would see
// everything the user has; that takes a policy that says so.
func Default(dir string) (*Policy, error) {
	if err := broadRoot(dir); err != nil {
		return nil, err
	}
	p := defaults()
	p.Source = EmbeddedDefault
	p.Roots = []Root{{Path: dir}}
	if err := p.finish(nil); err != nil {
		return nil, err
	}
	return &p, nil
}

// broadRoot refuses a directory too broad to be an implicit root.
func broadRoot(dir string) error {
	clean := filepath.Clean(dir)
	why := ""
	switch {
	case clean == "/":
		why = "the whole file system"
	case clean == "/root" || filepath.Dir(clean) == "/home":
		why = "a home directory, with its keys and credentials"
	default:
		if home, err := os.UserHomeDir(); err == nil && filepath.Clean(home) == clean {
			why = "your home directory, with its keys and credentials"
		}
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("the current directory %s is %s: fsguard will not make it the root without a policy that says so; run from the project's directory, or pass --policy FILE (or set FSGUARD_POLICY) with a [[root]] naming it", clean, why)
}

// Load reads and validates a policy file.
func Load(file string) (*Policy, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", file, err)
	}
	p.Source = file
	sum := sha256.Sum256(data)
	p.Digest = hex.EncodeToString(sum[:])
	return p, nil
}

// raw mirrors the file layout; "root" is an array of tables.
type raw struct {
	Root    []Root  `toml:"root"`
	Deny    Deny    `toml:"deny"`
	Limits  Limits  `toml:"limits"`
	Sniff   Sniff   `toml:"sniff"`
	Journal Journal `toml:"journal"`
	Mount   Mount   `toml:"mount"`
	Control Control `toml:"control"`
	Write   Write   `toml:"write"`
	Git     Git     `toml:"git"`
	Metrics Metrics `toml:"metrics"`
	Audit   Audit   `toml:"audit"`
	Secrets Secrets `toml:"secrets"`
}

// Parse decodes and validates policy text.
func Parse(data []byte) (*Policy, error) {
	d := defaults()
	r := raw{Limits: d.Limits, Sniff: d.Sniff, Journal: d.Journal, Mount: d.Mount, Control: d.Control, Git: d.Git, Audit: d.Audit}
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&r)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			line := pe.Position.Line
			// Arrays report the key's line; point at the bad element.
			if m := globErrRe.FindStringSubmatch(pe.Message); m != nil {
				if pat, err := strconv.Unquote(m[1]); err == nil {
					if l := lineOfValue(data, "globs", pat); l > 0 {
						line = l
					}
				}
			}
			return nil, fmt.Errorf("line %d: %s", line, pe.Message)
		}
		if m := typeErrRe.FindStringSubmatch(err.Error()); m != nil {
			return nil, fmt.Errorf("line %s: %s: %s", m[1], m[2], m[3])
		}
		return nil, err
	}
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0]
		return nil, fmt.Errorf("line %d: unknown key %q", lineOfKey(data, k), k.String())
	}
	p := Policy{
		Roots: r.Root, Deny: r.Deny, Limits: r.Limits, Sniff: r.Sniff,
		Journal: r.Journal, Mount: r.Mount, Control: r.Control, Write: r.Write, Git: r.Git, Metrics: r.Metrics, Audit: r.Audit,
		Secrets: r.Secrets,
	}
	p.Audit.OpensSet = md.IsDefined("audit", "opens")
	if len(p.Roots) == 0 {
		return nil, fmt.Errorf("no [[root]]: a policy needs at least one allowed root")
	}
	if err := p.finish(data); err != nil {
		return nil, err
	}
	return &p, nil
}

// typeErrRe matches the decoder's type mismatch errors, which carry the
// line in their text rather than as a ParseError.
var globErrRe = regexp.MustCompile(`^deny pattern ("(?:[^"\\]|\\.)*")`)

var typeErrRe = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]+)"\): (.*)$`)

// finish validates and fills derived fields. data, when non-nil, is the
// source text, used to put a line number on errors found after decoding.
func (p *Policy) finish(data []byte) error {
	at := func(key, value string) string {
		if data == nil {
			return ""
		}
		return fmt.Sprintf("line %d: ", lineOfValue(data, key, value))
	}
	names := map[string]string{}
	for i := range p.Roots {
		r := &p.Roots[i]
		if r.Path == "" {
			return fmt.Errorf("%sroot.path is empty", at("path", ""))
		}
		if !filepath.IsAbs(r.Path) {
			return fmt.Errorf("%sroot.path %q is relative: roots must be absolute paths", at("path", r.Path), r.Path)
		}
		r.Path = filepath.Clean(r.Path)
		real, err := filepath.EvalSymlinks(r.Path)
		if err != nil {
			return fmt.Errorf("%sroot.path %q: %v", at("path", r.Path), r.Path, unwrapPathErr(err))
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			return fmt.Errorf("%sroot.path %q is not a directory", at("path", r.Path), r.Path)
		}
		r.Real = real
		if dangerous(real) {
			return fmt.Errorf("%sroot.path %q is under /proc, /sys or /dev, which are never served", at("path", r.Path), r.Path)
		}
		if r.Name == "" {
			r.Name = filepath.Base(real)
			if r.Name == "/" {
				r.Name = "root"
			}
		}
		if strings.ContainsAny(r.Name, "/\x00") || r.Name == "." || r.Name == ".." {
			return fmt.Errorf("%sroot.name %q is not a valid directory name", at("name", r.Name), r.Name)
		}
		if prev, dup := names[r.Name]; dup {
			return fmt.Errorf("%sroot.name %q is used by both %q and %q: give each root a distinct name", at("name", r.Name), r.Name, prev, r.Path)
		}
		names[r.Name] = r.Path
	}
	p.Deny.Globs = withDefaults(&p.Deny.UseDefaults, DefaultDeny, p.Deny.Globs)
	switch p.Deny.HardLinks {
	case "":
		p.Deny.HardLinks = "known"
	case "known", "inside", "strict", "allow":
	default:
		return fmt.Errorf("%sdeny.hard_links must be \"known\", \"inside\", \"strict\" or \"allow\", got %q", at("hard_links", p.Deny.HardLinks), p.Deny.HardLinks)
	}
	p.Write.DenyGlobs = withDefaults(&p.Write.UseDefaults, DefaultWriteDeny, p.Write.DenyGlobs)
	switch p.Write.HookManagers {
	case "":
		p.Write.HookManagers = "deny"
	case "deny", "allow":
	default:
		return fmt.Errorf("%swrite.hook_managers must be \"deny\" or \"allow\", got %q", at("hook_managers", p.Write.HookManagers), p.Write.HookManagers)
	}
	if p.Control.MaxRequests < 1 {
		return fmt.Errorf("%scontrol.max_requests must be at least 1, got %d", at("max_requests", ""), p.Control.MaxRequests)
	}
	for i, s := range p.Deny.Paths {
		if !filepath.IsAbs(s) {
			return fmt.Errorf("%sdeny.paths entry %q is relative: use an absolute path, or a glob in deny.globs", at("paths", s), s)
		}
		p.Deny.Paths[i] = filepath.Clean(s)
	}
	l := p.Limits
	for _, c := range []struct {
		key string
		v   int64
	}{
		{"max_lines", int64(l.MaxLines)}, {"max_line_chars", int64(l.MaxLineChars)},
		{"max_bytes", int64(l.MaxBytes)}, {"max_scan_bytes", l.MaxScanBytes},
		{"sample_bytes", int64(l.SampleBytes)}, {"max_media_bytes", l.MaxMediaBytes},
		{"max_dir_entries", int64(l.MaxDirEntries)},
	} {
		if c.v <= 0 {
			return fmt.Errorf("%slimits.%s must be a positive integer, got %d", at(c.key, ""), c.key, c.v)
		}
	}
	if l.MemoryLimit != 0 && l.MemoryLimit < 64<<20 {
		return fmt.Errorf("%slimits.memory_limit must be 0 (from the cgroup) or at least 67108864 (64 MiB), got %d", at("memory_limit", ""), l.MemoryLimit)
	}
	if l.MaxLineChars < 16 || l.MaxBytes < 4*l.MaxLineChars+64 {
		return fmt.Errorf("%slimits.max_bytes (%d) must hold at least one clamped line: at least 4*max_line_chars+64 = %d", at("max_bytes", ""), l.MaxBytes, 4*l.MaxLineChars+64)
	}
	if p.Journal.HeldMaxBytes < 0 {
		return fmt.Errorf("%sjournal.held_max_bytes must be 0 (keep nothing) or a positive number of bytes, got %d", at("held_max_bytes", ""), p.Journal.HeldMaxBytes)
	}
	for _, c := range p.Sniff.Refuse {
		if !contains(SniffClasses, c) {
			return fmt.Errorf("%ssniff.refuse: unknown class %q (known: %s)", at("refuse", c), c, strings.Join(SniffClasses, ", "))
		}
	}
	switch p.Sniff.Archives {
	case ArchivesScan, ArchivesDeny, ArchivesAllow:
	default:
		return fmt.Errorf("%ssniff.archives must be \"scan\", \"deny\" or \"allow\", got %q", at("archives", p.Sniff.Archives), p.Sniff.Archives)
	}
	switch p.Mount.Open {
	case "kernel", "daemon":
	default:
		return fmt.Errorf("%smount.open must be \"kernel\" or \"daemon\", got %q", at("open", p.Mount.Open), p.Mount.Open)
	}
	switch p.Mount.Watch {
	case "auto", "fanotify", "inotify", "off":
	default:
		return fmt.Errorf("%smount.watch must be \"auto\", \"fanotify\", \"inotify\" or \"off\", got %q", at("watch", p.Mount.Watch), p.Mount.Watch)
	}
	if a := p.Metrics.Listen; a != "" {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("%smetrics.listen %q is not host:port (e.g. \"127.0.0.1:9469\"): %v", at("listen", a), a, err)
		}
	}
	switch p.Git.History {
	case "warn", "hide":
	default:
		return fmt.Errorf("%sgit.history must be \"warn\" or \"hide\", got %q", at("history", p.Git.History), p.Git.History)
	}
	switch p.Audit.Opens {
	case "record", "off":
	default:
		return fmt.Errorf("%saudit.opens must be \"record\" or \"off\", got %q", at("opens", p.Audit.Opens), p.Audit.Opens)
	}
	switch p.Mount.Denied {
	case "hide", "eacces":
	default:
		return fmt.Errorf("%smount.denied must be \"hide\" or \"eacces\", got %q", at("denied", p.Mount.Denied), p.Mount.Denied)
	}
	if err := p.Secrets.finish(at); err != nil {
		return err
	}
	for _, s := range []struct{ key, v string }{{"journal.path", p.Journal.Path}, {"control.socket", p.Control.Socket}} {
		if s.v != "" && !filepath.IsAbs(s.v) {
			return fmt.Errorf("%s%s %q must be an absolute path", at(s.key[strings.Index(s.key, ".")+1:], s.v), s.key, s.v)
		}
	}
	return nil
}

// withDefaults puts a built-in list before the configured globs unless
// use_defaults is false, and records the choice.
func withDefaults(use **bool, defaults []string, globs []Glob) []Glob {
	if *use != nil && !**use {
		return globs
	}
	var defs []Glob
	for _, s := range defaults {
		g, err := CompileGlob(s)
		if err != nil {
			panic(err) // the built-in lists are tested
		}
		defs = append(defs, g)
	}
	t := true
	*use = &t
	return append(defs, globs...)
}

// Refuses reports whether the policy refuses a sniff class.
func (p *Policy) Refuses(class string) bool { return contains(p.Sniff.Refuse, class) }

func dangerous(p string) bool {
	for _, d := range []string{"/proc", "/sys", "/dev"} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// Dangerous reports whether an absolute path is under /proc, /sys or /dev,
// which fsguard never serves whatever the roots say.
func Dangerous(p string) bool { return dangerous(p) }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// lineOfKey finds the line that defines key k (the last line that sets its
// final component, inside the table named by the rest), for error messages.
func lineOfKey(data []byte, k toml.Key) int {
	last := regexp.QuoteMeta(k[len(k)-1])
	keyRe := regexp.MustCompile(`^\s*"?` + last + `"?\s*=`)
	tableRe := regexp.MustCompile(`^\s*\[\[?\s*"?` + last + `"?\s*\]\]?`)
	parent := ""
	if len(k) > 1 {
		parent = k[len(k)-2]
	}
	inParent := parent == ""
	for i, line := range strings.Split(string(data), "\n") {
		if m := regexp.MustCompile(`^\s*\[\[?\s*([^\]]+?)\s*\]\]?`).FindStringSubmatch(line); m != nil {
			parts := strings.Split(m[1], ".")
			inParent = parent == "" || parts[len(parts)-1] == parent
			if tableRe.MatchString(line) {
				return i + 1
			}
			continue
		}
		if inParent && keyRe.MatchString(line) {
			return i + 1
		}
	}
	return 0
}

// lineOfValue finds the first line that sets key (to a value containing
// value, when given).
func lineOfValue(data []byte, key, value string) int {
	re := regexp.MustCompile(`^\s*` + regexp.QuoteMeta(key) + `\s*=`)
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		if re.MatchString(line) && (value == "" || strings.Contains(line, value)) {
			return i + 1
		}
	}
	// Values inside a multi-line array sit on their own lines.
	if value != "" {
		for i, line := range lines {
			if strings.Contains(line, `"`+value+`"`) {
				return i + 1
			}
		}
	}
	return 0
}

// Summary renders the effective policy for `fsguard policy check`.
func (p *Policy) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# effective policy (source: %s)\n", p.Source)
	for _, r := range p.Roots {
		fmt.Fprintf(&b, "[[root]]\npath = %q\nname = %q\ncross_mounts = %v\n", r.Path, r.Name, r.CrossMounts)
		if r.Real != r.Path {
			fmt.Fprintf(&b, "# resolves to %q\n", r.Real)
		}
	}
	fmt.Fprintf(&b, "\n[deny]\nuse_defaults = %v\n", *p.Deny.UseDefaults)
	fmt.Fprintf(&b, "paths = %s\n", tomlList(p.Deny.Paths))
	var globs []string
	for _, g := range p.Deny.Globs {
		globs = append(globs, g.String())
	}
	fmt.Fprintf(&b, "globs = %s\n", tomlList(globs))
	fmt.Fprintf(&b, "hard_links = %q\nfold = %v\n", p.Deny.HardLinks, p.Folds())
	l := p.Limits
	fmt.Fprintf(&b, "\n[limits]\nmax_lines = %d\nmax_line_chars = %d\nmax_bytes = %d\nmax_scan_bytes = %d\nsample_bytes = %d\nmax_media_bytes = %d\nmax_dir_entries = %d\nmemory_limit = %d\n",
		l.MaxLines, l.MaxLineChars, l.MaxBytes, l.MaxScanBytes, l.SampleBytes, l.MaxMediaBytes, l.MaxDirEntries, l.MemoryLimit)
	var allow []string
	for _, g := range p.Sniff.AllowGlobs {
		allow = append(allow, g.String())
	}
	fmt.Fprintf(&b, "\n[sniff]\nrefuse = %s\nallow_globs = %s\narchives = %q\n", tomlList(p.Sniff.Refuse), tomlList(allow), p.Sniff.Archives)
	fmt.Fprintf(&b, "\n[journal]\npath = %q\nrequired = %v\nrequire_whole_view = %v\nheld_max_bytes = %d\n", p.Journal.Path, p.Journal.Required, p.Journal.RequireWholeView, p.Journal.HeldMaxBytes)
	m := p.Mount
	fmt.Fprintf(&b, "\n[mount]\ndenied = %q\nopen = %q\nentry_timeout = %q\nattr_timeout = %q\npassthrough_min_bytes = %d\npassthrough_unchecked = %v\nwatch = %q\nwarm = %v\nwarm_walk = %v\nwarm_max_bytes = %d\n",
		m.Denied, m.Open, m.EntryTimeout, m.AttrTimeout, m.PassthroughMinBytes, m.PassthroughUnchecked, m.Watch, m.Warm, m.WarmWalk, m.WarmMaxBytes)
	c := p.Control
	fmt.Fprintf(&b, "\n[control]\nsocket = %q\nallow_uids = %s\nallow_gids = %s\nmax_requests = %d\n", c.Socket, idList(c.AllowUids), idList(c.AllowGids), c.MaxRequests)
	var wglobs []string
	for _, g := range p.Write.DenyGlobs {
		wglobs = append(wglobs, g.String())
	}
	fmt.Fprintf(&b, "\n[git]\nhistory = %q\n", p.Git.History)
	fmt.Fprintf(&b, "\n[metrics]\nlisten = %q\n", p.Metrics.Listen)
	var excl []string
	for _, g := range p.Audit.Exclude {
		excl = append(excl, g.String())
	}
	fmt.Fprintf(&b, "\n[audit]\nopens = %q\nexclude = %s\n", p.Audit.Opens, tomlList(excl))
	b.WriteString(p.Secrets.summary())
	fmt.Fprintf(&b, "\n[write]\nuse_defaults = %v\ndeny_globs = %s\nhook_managers = %q\n", *p.Write.UseDefaults, tomlList(wglobs), p.Write.HookManagers)
	return b.String()
}

func idList(ids []uint32) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = strconv.FormatUint(uint64(id), 10)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func tomlList(v []string) string {
	if len(v) == 0 {
		return "[]"
	}
	q := make([]string, len(v))
	for i, s := range v {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// Secrets configures the credential detector (sniff.Detector): tokens and
// passwords in ordinary text are masked in place, through every door, in
// files whose path no AllowGlobs glob matches.
type Secrets struct {
	// Mask turns the detector on (the default) or off.
	Mask *bool `toml:"mask"`
	// Generic also masks `name = value` assignments whose name says
	// api_key, secret, token or password and whose value looks random.
	// Off by default: on code it masks what is not a credential.
	Generic bool `toml:"generic"`
	// Disable names families (SecretFamilies, or rules' names) not looked
	// for.
	Disable []string `toml:"disable"`
	// AllowGlobs: files these globs match (as deny globs) are shown with
	// their credentials unmasked, e.g. "**/testdata/**".
	AllowGlobs []Glob `toml:"allow_globs"`
	// Rules are the policy's own families.
	Rules []SecretRule `toml:"rule"`
}

// A SecretRule is a family of credentials the policy adds: a match of
// Regex (RE2) found around one of its Anchors, at most MaxSecretMatch
// bytes long, masked whole (or its first capture group, when it has one)
// but for its first Keep bytes.
type SecretRule struct {
	Name    string   `toml:"name"`
	Regex   string   `toml:"regex"`
	Anchors []string `toml:"anchors"`
	Keep    int      `toml:"keep"`
	// Re is Regex, compiled when the policy loads.
	Re *regexp.Regexp `toml:"-" json:"-"`
}

// Bounds on the policy's own rules: a rule is looked for only around its
// anchors, each at least MinSecretAnchor bytes, so text without one costs
// the detector nothing; a match longer than MaxSecretMatch is not one.
const (
	MinSecretAnchor = 3
	MaxSecretAnchor = 64
	MaxSecretRegex  = 1024
	MaxSecretMatch  = 512
	MaxSecretRules  = 64
	MaxRuleAnchors  = 32
	MaxSecretKeep   = 64
)

// SecretFamilies are the families of credentials fsguard knows by their
// structure (sniff's rules; a test keeps the two lists equal), each a name
// secrets.disable may give.
var SecretFamilies = []string{
	"github-pat", "github-oauth", "github-user-token", "github-app-token", "github-refresh-token", "github-fine-grained-pat",
	"gitlab-pat", "gitlab-token",
	"aws-access-key-id", "aws-secret-key",
	"google-api-key",
	"slack-token", "slack-app-token", "slack-webhook",
	"stripe-key", "stripe-webhook-secret",
	"openai-key", "anthropic-key",
	"huggingface-token", "npm-token", "pypi-token", "dockerhub-pat", "sendgrid-key", "shopify-token",
	"databricks-token", "digitalocean-token", "vault-token", "grafana-token", "newrelic-key", "linear-api-key",
	"doppler-token", "pulumi-token", "age-secret-key", "telegram-bot-token", "mailgun-key",
	"twilio-api-key", "twilio-auth-token", "atlassian-token",
	"azure-account-key", "azure-ad-client-secret", "connection-string-password", "url-password", "jwt",
	"postman-key", "heroku-key", "sentry-token", "supabase-token", "flyio-token", "alibaba-key-id",
	"discord-webhook", "shippo-token", "square-token", "planetscale-token", "terraform-token", "notion-token",
	"dropbox-token", "onepassword-token", "adobe-client-secret", "clojars-token",
	"dynatrace-token", "easypost-key", "flutterwave-key", "frameio-token", "infracost-key", "openshift-token",
	"prefect-token", "readme-key", "rubygems-key", "scalingo-token", "settlemint-token", "sourcegraph-token",
	"artifactory-key", "perplexity-key", "groq-key", "defined-networking-key", "mapbox-secret-token",
	"google-oauth-secret", "google-oauth-token", "openrouter-key", "replicate-token", "nvidia-key", "pinecone-key",
	"langsmith-key", "docker-swarm-token", "discord-bot-token", "okta-token",
	"onepassword-secret-key", "aws-bedrock-key", "clickhouse-key", "duffel-token", "facebook-page-token",
	"harness-token", "octopus-key", "sendinblue-key", "typeform-token", "intra42-secret",
	"cloudflare-origin-ca-key", "teams-webhook", "maxmind-license-key",
}

// GenericSecret is the family of secrets.generic's assignments.
const GenericSecret = "generic-secret"

// Masks reports whether credentials are masked at all.
func (s *Secrets) Masks() bool { return s.Mask == nil || *s.Mask }

// SecretsShown reports whether rel beneath a root (configured path base,
// real path real) is shown with its credentials unmasked.
func (p *Policy) SecretsShown(base, real, rel string) bool {
	return p.matchAny(p.Secrets.AllowGlobs, base, real, rel)
}

// Families returns the families looked for, in SecretFamilies' order,
// then GenericSecret and the policy's rules; none when Mask is off.
func (s *Secrets) Families() []string {
	if !s.Masks() {
		return nil
	}
	var out []string
	for _, f := range SecretFamilies {
		if !contains(s.Disable, f) {
			out = append(out, f)
		}
	}
	if s.Generic && !contains(s.Disable, GenericSecret) {
		out = append(out, GenericSecret)
	}
	for _, r := range s.Rules {
		if !contains(s.Disable, r.Name) {
			out = append(out, r.Name)
		}
	}
	return out
}

var kebab = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// finish validates the section and compiles its rules; at puts a line
// number on an error.
func (s *Secrets) finish(at func(key, value string) string) error {
	if s.Mask == nil {
		t := true
		s.Mask = &t
	}
	if len(s.Rules) > MaxSecretRules {
		return fmt.Errorf("%ssecrets: %d rules, at most %d", at("name", ""), len(s.Rules), MaxSecretRules)
	}
	known := append(append([]string{}, SecretFamilies...), GenericSecret)
	for i := range s.Rules {
		r := &s.Rules[i]
		where := at("name", r.Name)
		if r.Name == "" {
			return fmt.Errorf("%ssecrets.rule #%d has no name: give it a kebab-case name, e.g. \"acme-token\"", at("regex", ""), i+1)
		}
		if len(r.Name) > 64 || !kebab.MatchString(r.Name) {
			return fmt.Errorf("%ssecrets.rule name %q is not kebab-case (lower-case letters and digits joined by '-', at most 64 bytes)", where, r.Name)
		}
		if contains(known, r.Name) {
			return fmt.Errorf("%ssecrets.rule name %q is a built-in family: name the rule otherwise (to stop the built-in one, list it in secrets.disable)", where, r.Name)
		}
		known = append(known, r.Name)
		if r.Regex == "" {
			return fmt.Errorf("%ssecrets.rule %q has no regex", where, r.Name)
		}
		if len(r.Regex) > MaxSecretRegex {
			return fmt.Errorf("%ssecrets.rule %q: regex is %d bytes, at most %d", where, r.Name, len(r.Regex), MaxSecretRegex)
		}
		re, err := regexp.Compile(r.Regex)
		if err != nil {
			return fmt.Errorf("%ssecrets.rule %q: regex: %v (RE2 syntax, as Go's regexp)", where, r.Name, err)
		}
		if re.MatchString("") {
			return fmt.Errorf("%ssecrets.rule %q: regex %q matches the empty string: it must match the credential itself", where, r.Name, r.Regex)
		}
		r.Re = re
		if len(r.Anchors) == 0 {
			return fmt.Errorf("%ssecrets.rule %q has no anchors: give at least one literal string of %d bytes or more that every match contains (the detector looks for the rule only around them)", where, r.Name, MinSecretAnchor)
		}
		if len(r.Anchors) > MaxRuleAnchors {
			return fmt.Errorf("%ssecrets.rule %q has %d anchors, at most %d", where, r.Name, len(r.Anchors), MaxRuleAnchors)
		}
		for _, a := range r.Anchors {
			if len(a) < MinSecretAnchor || len(a) > MaxSecretAnchor {
				return fmt.Errorf("%ssecrets.rule %q: anchor %q must be %d to %d bytes long", where, r.Name, a, MinSecretAnchor, MaxSecretAnchor)
			}
		}
		if r.Keep < 0 || r.Keep > MaxSecretKeep {
			return fmt.Errorf("%ssecrets.rule %q: keep must be 0 to %d (the bytes of its public prefix shown), got %d", where, r.Name, MaxSecretKeep, r.Keep)
		}
	}
	for _, f := range s.Disable {
		if !contains(known, f) {
			return fmt.Errorf("%ssecrets.disable: unknown family %q (known: %s)", at("disable", f), f, strings.Join(known, ", "))
		}
	}
	return nil
}

// summary renders the section for Summary, with the families in effect.
func (s *Secrets) summary() string {
	var b strings.Builder
	var allow []string
	for _, g := range s.AllowGlobs {
		allow = append(allow, g.String())
	}
	fmt.Fprintf(&b, "\n[secrets]\nmask = %v\ngeneric = %v\ndisable = %s\nallow_globs = %s\n", s.Masks(), s.Generic, tomlList(s.Disable), tomlList(allow))
	fmt.Fprintf(&b, "# families masked: %s\n", tomlList(s.Families()))
	for _, r := range s.Rules {
		fmt.Fprintf(&b, "[[secrets.rule]]\nname = %q\nregex = %q\nanchors = %s\nkeep = %d\n", r.Name, r.Regex, tomlList(r.Anchors), r.Keep)
	}
	return b.String()
}
