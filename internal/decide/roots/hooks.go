package roots

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/refusal"

	"golang.org/x/sys/unix"
)

// A repository's hooks need not live in its git directory: git runs the
// hooks in the directory core.hooksPath names (githooks(5)), as whoever
// commits, and hook managers keep there, or in files of the work tree,
// the commands every commit runs (husky's .husky/, pre-commit's
// .pre-commit-config.yaml, lefthook's lefthook.yml). A file the agent
// writes there is code the host runs, as surely as one in .git/hooks.
//
// The hooks directory is found as git finds it: for each directory from
// the one a write lands in up to its root that holds a .git entry (a
// work tree's top), the git directory it leads to (a directory, a
// symbolic link, or a file's "gitdir:" line), that git directory's and
// its common directory's config and config.worktree, the files they
// include (include.path and every includeIf's path, whatever the
// condition: the answer may only err toward a refusal); the same for
// every repository under the roots, wherever the write lands (see
// hookscan.go: a hooks path may lead out of its work tree); and the
// global configs of the system, of the work tree's owner and of every
// human user of the user database (root and uids from 1000: the developer
// who runs git on the host need not own the tree), ~/.gitconfig and
// ~/.config/git/config each. Every core.hooksPath any of them sets is
// resolved as git does: relative to the work tree's top (a bare
// repository's git directory), "~/" to a home (in a user's global config
// that user's; in a repository's, every human user's, as whoever runs git
// may be any of them). The write is refused when the directory it lands
// in, or one above it up to the root, is one of those directories,
// compared by identity, so a symbolic link to the hooks directory leads
// nowhere new; and when the entry is a config file one of them includes.
// No config is cached: a setting made while the daemon runs counts at the
// next write. What fsguard cannot see is the developer's own command line
// and environment: `git -c`, GIT_CONFIG_*, an XDG_CONFIG_HOME elsewhere.
//
// The configs are read with the daemon's own rights (a caller that
// cannot read a repository's config must not make its hooks writable),
// each a regular file opened without blocking, at most maxConfigBytes;
// at most maxConfigFiles per repository, and a few per user for the
// global ones. A config past a bound refuses the write rather than being
// half read.

const (
	maxConfigBytes = 256 << 10
	maxConfigFiles = 16
	maxGitFile     = 4 << 10
)

// writeIntoHooks is the decision that keeps the agent out of the hooks
// git and hook managers run: it refuses creating or replacing the entry
// name in d when d or a directory above it is the hooks directory of a
// repository (above d, under the roots, or any a global config applies
// to) or the entry is a config file one includes, and (unless [write] hook_managers
// allows it) when the entry is a hook manager's file by rel or by d's
// real path.
func (g *Guard) writeIntoHooks(d *Dir, name, shown, rel string) error {
	if g.pol.Write.HookManagers != "allow" {
		for _, r := range []string{rel, filepath.Join(d.Rel, name)} {
			for _, base := range []string{d.Root.Real, d.Root.Path} {
				if i := policy.MatchGlobs(policy.HookManagerGlobs, r, filepath.Join(base, r), g.folds(d.Root)); i >= 0 {
					return refusal.Of(refusal.HookManager, refusal.OpWrite, shown, refusal.Facts{Rule: policy.HookManagerGlobs[i].String()})
				}
			}
		}
	}
	depth := 0
	if d.Rel != "." {
		depth = strings.Count(d.Rel, "/") + 1
	}
	// The identities of d and each directory above it up to the root
	// (where a write may land), and every directory above d up to the
	// file system's top that is a work tree's top (a repository above the
	// root may name a hooks directory beneath it).
	type ident struct{ dev, ino uint64 }
	var chain []ident
	var tops []int
	defer func() {
		for _, fd := range tops {
			unix.Close(fd)
		}
	}()
	fd, err := unix.Openat(int(d.Fd()), ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return hookErr(shown, err)
	}
	var owners, dirOwners []uint32
	var prev ident
	for lv := 0; ; lv++ {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return hookErr(shown, err)
		}
		here := ident{st.Dev, st.Ino}
		if lv > 0 && here == prev {
			unix.Close(fd) // the top of the file system: ".." is itself
			break
		}
		prev = here
		if lv <= depth {
			chain = append(chain, here)
			if (lv == 0 || lv == depth) && (len(dirOwners) == 0 || dirOwners[0] != st.Uid) {
				dirOwners = append(dirOwners, st.Uid)
			}
		}
		var gst unix.Stat_t
		switch err := unix.Fstatat(fd, ".git", &gst, unix.AT_SYMLINK_NOFOLLOW); err {
		case nil:
			tops, owners = append(tops, fd), append(owners, gst.Uid)
		case unix.ENOENT, unix.ENOTDIR:
		default:
			unix.Close(fd)
			return hookErr(shown, err)
		}
		parent, err := unix.Openat(fd, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if len(tops) == 0 || tops[len(tops)-1] != fd {
			unix.Close(fd)
		}
		if err != nil {
			return hookErr(shown, err)
		}
		fd = parent
		if lv > 4096 {
			unix.Close(fd)
			return hookErr(shown, unix.ELOOP)
		}
	}
	// inHooks refuses when one of paths (their "~" expanded), resolved
	// for the work tree whose top is top (AT_FDCWD: none, only absolute
	// paths), is d or a directory above it up to the root.
	inHooks := func(top int, paths []string) error {
		for _, hp := range paths {
			if top == unix.AT_FDCWD && !filepath.IsAbs(hp) {
				continue
			}
			hfd, err := unix.Openat(top, hp, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				continue // no such directory: no write lands in it
			}
			var hs unix.Stat_t
			err = unix.Fstat(hfd, &hs)
			unix.Close(hfd)
			if err != nil {
				continue
			}
			for i, l := range chain {
				if l == (ident{hs.Dev, hs.Ino}) {
					what := "it is in"
					if i > 0 {
						what = "it is beneath"
					}
					return refusal.Of(refusal.GitHooks, refusal.OpWrite, shown, refusal.Facts{Detail: fmt.Sprintf("%s a repository's hooks directory (core.hooksPath = %s)", what, strconv.Quote(hp))})
				}
			}
		}
		return nil
	}
	unreadable := func(err error) error {
		return refusal.Of(refusal.GitHooks, refusal.OpWrite, shown, refusal.Facts{Detail: "a git config that applies to it could not be checked for core.hooksPath (" + err.Error() + ")"})
	}
	// included refuses when one of the config files a repository's
	// configs include (whether it exists yet or not) is the entry being
	// written: git reads it as its own config, whose core.fsmonitor,
	// core.pager, aliases and filters it runs.
	included := func(incs []string) error {
		for _, inc := range incs {
			if policy.Fold(filepath.Base(inc)) != policy.Fold(name) && filepath.Base(inc) != name {
				continue
			}
			dfd, err := unix.Open(filepath.Dir(inc), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				continue
			}
			var ds unix.Stat_t
			err = unix.Fstat(dfd, &ds)
			unix.Close(dfd)
			if err == nil && chain[0] == (ident{ds.Dev, ds.Ino}) {
				return refusal.Of(refusal.GitDir, refusal.OpWrite, shown, refusal.Facts{Detail: fmt.Sprintf("a repository's git config includes it (include.path = %s)", strconv.Quote(inc))})
			}
		}
		return nil
	}
	all, err := users()
	if err != nil {
		return unreadable(err)
	}
	humans, err := humanUsers(all)
	if err != nil {
		return unreadable(err)
	}
	// Every human user's global config and the system's: the developer
	// who runs git on the host need not be the tree's owner. An absolute
	// or "~" hooks path there counts wherever the write lands; a
	// relative one, in every work tree below.
	glob := globalConfigs(humans)
	if glob.err != nil {
		return unreadable(glob.err)
	}
	if err := inHooks(unix.AT_FDCWD, glob.hooks); err != nil {
		return err
	}
	if err := included(glob.includes); err != nil {
		return err
	}
	// check reads the configs of the repository whose work tree top (or,
	// bare, whose git directory) is base, and refuses when a hooks
	// directory they name, or a file they include, is where the write
	// lands.
	check := func(base int, owner uint32, bare bool) error {
		c := &configs{seen: map[[2]uint64]bool{}, homes: homesFor(all, humans, owner), max: maxConfigFiles}
		if bare {
			c.repo(base)
		} else if gd, err := gitDirOf(base); err == nil {
			c.repo(gd)
			unix.Close(gd)
		}
		c.globals() // the owner's, whatever its uid
		if c.err != nil {
			return unreadable(c.err)
		}
		if err := inHooks(base, append(c.hooks, glob.hooks...)); err != nil {
			return err
		}
		return included(c.includes)
	}
	for t, top := range tops {
		if err := check(top, owners[t], false); err != nil {
			return err
		}
	}
	// The global configs of the owners of d and of the root, as before
	// any user database lists them.
	for _, owner := range dirOwners {
		c := &configs{seen: map[[2]uint64]bool{}, homes: homesFor(all, nil, owner), max: maxConfigFiles}
		c.globals()
		if c.err != nil {
			return unreadable(c.err)
		}
		if err := inHooks(unix.AT_FDCWD, c.hooks); err != nil {
			return err
		}
		if err := included(c.includes); err != nil {
			return err
		}
	}
	// Every repository under the roots, wherever its work tree is: a
	// hooks path or an include may lead out of its own work tree
	// ("../common-hooks"), and a bare repository's relative hooks path
	// is relative to its git directory.
	if err := g.eachRepo(func(base int, owner uint32, bare bool) error {
		return check(base, owner, bare)
	}); err != nil {
		if _, ok := errors.AsType[*refusal.Error](err); ok {
			return err
		}
		return unreadable(err)
	}
	return nil
}

func hookErr(shown string, err error) error {
	return refusal.Of(refusal.IOFailed, refusal.OpWrite, shown, refusal.Facts{Detail: unwrap(err).Error()}).Because(err)
}

// passwd is the user database homes are read from (a test's own).
var passwd atomic.Pointer[string]

func init() {
	etc := "/etc/passwd"
	passwd.Store(&etc)
}

// user is one entry of the user database.
type user struct {
	name string
	uid  uint32
	home string
}

// maxUsers bounds the users whose global configs are read.
const maxUsers = 1 << 14

// humanUsers lists the users of the user database who may run git on the
// host as a developer, of all: root and every uid from 1000 on (the
// first a login gets), with a home directory. Past maxUsers, an error.
func humanUsers(all []user) ([]user, error) {
	var out []user
	for _, u := range all {
		if (u.uid == 0 || u.uid >= 1000) && u.uid != 65534 && filepath.IsAbs(u.home) && u.home != "/" {
			if out = append(out, u); len(out) > maxUsers {
				return nil, fmt.Errorf("more than %d users to read the git configs of", maxUsers)
			}
		}
	}
	return out, nil
}

// users reads the user database.
func users() ([]user, error) {
	b, err := readBounded(unix.AT_FDCWD, *passwd.Load(), 4<<20)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil // no users (a container's bare image): no global configs
	} else if err != nil {
		return nil, fmt.Errorf("the user database: %w", err)
	}
	var out []user
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) < 6 {
			continue
		}
		uid, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			continue
		}
		out = append(out, user{f[0], uint32(uid), f[5]})
	}
	return out, nil
}

// homesFor is where "~/" may lead in a repository's config: the home of
// whoever runs git, who may be any of humans, or the work tree's owner
// (found among all).
func homesFor(all, humans []user, owner uint32) []string {
	var homes []string
	seen := map[string]bool{}
	add := func(h string) {
		if h != "" && !seen[h] {
			seen[h] = true
			homes = append(homes, h)
		}
	}
	for _, u := range all {
		if u.uid == owner {
			add(u.home)
			break
		}
	}
	for _, u := range humans {
		add(u.home)
	}
	return homes
}

// readUsers is users, for callers that have no error to give.
var readUsers = users

// expand is p with a leading "~/" (or "~") taken to each of c's homes,
// "~user/" to that user's; nothing where no such user is.
func (c *configs) expand(p string) []string {
	if !strings.HasPrefix(p, "~") {
		return []string{p}
	}
	name, rest, _ := strings.Cut(p[1:], "/")
	if name == "" {
		out := make([]string, 0, len(c.homes))
		for _, h := range c.homes {
			out = append(out, filepath.Join(h, rest))
		}
		return out
	}
	all, err := readUsers()
	if err != nil {
		return nil
	}
	for _, u := range all {
		if u.name == name {
			return []string{filepath.Join(u.home, rest)}
		}
	}
	return nil
}

// globalConfigs reads the system's config and the global configs of every
// one of users, each with its own "~".
func globalConfigs(users []user) *configs {
	c := &configs{seen: map[[2]uint64]bool{}, max: 4 + 8*len(users)}
	c.readIn(unix.AT_FDCWD, "/etc/gitconfig")
	for _, u := range users {
		c.homes = []string{u.home} // "~" in a user's config is that user's home
		c.globals()
	}
	return c
}

// repo reads the configs of the git directory gd: its config and
// config.worktree, and its common directory's.
func (c *configs) repo(gd int) {
	c.readIn(gd, "config")
	c.readIn(gd, "config.worktree")
	if b, err := readBounded(gd, "commondir", maxGitFile); err == nil {
		if cd, err := unix.Openat(gd, strings.TrimSpace(string(b)), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			c.readIn(cd, "config")
			c.readIn(cd, "config.worktree")
			unix.Close(cd)
		}
	}
}

// globals reads the global configs in c's home (the first of c.homes):
// ~/.gitconfig and $XDG_CONFIG_HOME/git/config at its default,
// ~/.config/git/config (an XDG_CONFIG_HOME set elsewhere is the
// developer's environment, which fsguard cannot see).
func (c *configs) globals() {
	if len(c.homes) == 0 {
		return
	}
	home := c.homes[0]
	c.readIn(unix.AT_FDCWD, filepath.Join(home, ".gitconfig"))
	c.readIn(unix.AT_FDCWD, filepath.Join(home, ".config/git/config"))
}

// gitDirOf opens the git directory the .git entry of topfd leads to: the
// directory (or a symbolic link's), or the one a file's "gitdir:" names.
func gitDirOf(topfd int) (int, error) {
	fd, err := unix.Openat(topfd, ".git", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != unix.ENOTDIR {
		return fd, err
	}
	b, err := readBounded(topfd, ".git", maxGitFile)
	if err != nil {
		return -1, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return -1, unix.ENOENT
	}
	return unix.Openat(topfd, strings.TrimSpace(dir), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// configs gathers core.hooksPath values from git config files.
type configs struct {
	seen map[[2]uint64]bool
	// homes are where "~/" leads; max bounds the files read.
	homes []string
	max   int
	n     int
	// hooks are the core.hooksPath values, "~" expanded.
	hooks []string
	// includes are the absolute paths of the files include.path and
	// includeIf.*.path name, read or not (one missing now counts once
	// it is made).
	includes []string
	err      error
}

// readIn reads the config file name (beneath dirfd when relative) and the
// files it includes; a file that does not exist or is not a regular file
// is skipped, as git skips a missing include.
func (c *configs) readIn(dirfd int, name string) {
	if c.err != nil {
		return
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	k := [2]uint64{st.Dev, st.Ino}
	if c.seen[k] {
		return
	}
	c.seen[k] = true
	if c.n++; c.n > c.max {
		c.err = fmt.Errorf("more than %d config files", c.max)
		return
	}
	if st.Size > maxConfigBytes {
		c.err = fmt.Errorf("a config file of more than %d bytes", maxConfigBytes)
		return
	}
	b := make([]byte, st.Size+1)
	n, _ := f.ReadAt(b, 0)
	if n > maxConfigBytes {
		c.err = fmt.Errorf("a config file of more than %d bytes", maxConfigBytes)
		return
	}
	var incs []string
	for _, kv := range parseConfig(b[:n]) {
		switch {
		case kv.section == "core" && kv.key == "hookspath":
			c.hooks = append(c.hooks, c.expand(kv.value)...)
		case (kv.section == "include" || kv.section == "includeif") && kv.key == "path":
			incs = append(incs, kv.value)
		}
	}
	for _, inc := range incs {
		for _, p := range c.expand(inc) {
			if !filepath.IsAbs(p) { // relative to the including file's directory
				if dirfd == unix.AT_FDCWD {
					p = filepath.Join(filepath.Dir(name), p)
				} else if real, err := realPath(fd); err == nil {
					p = filepath.Join(filepath.Dir(real), p)
				} else {
					continue
				}
			}
			c.includes = append(c.includes, p)
			c.readIn(unix.AT_FDCWD, p)
		}
	}
}

// configValue is one variable of a git config file: its section (the
// part before the first dot or quote, lower case), its key (lower case)
// and its value, unquoted.
type configValue struct{ section, key, value string }

// parseConfig reads git config syntax (git-config(1)): [section] and
// [section "sub"] headers, key = value lines, comments after '#' or ';'
// outside quotes, double-quoted parts with backslash escapes, and lines
// continued by a final backslash.
func parseConfig(b []byte) []configValue {
	var out []configValue
	section := ""
	// Join continued lines first.
	text := strings.ReplaceAll(string(b), "\r\n", "\n")
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		for strings.HasSuffix(line, "\\") && !strings.HasSuffix(line, "\\\\") && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + lines[i]
		}
		s := strings.TrimSpace(line)
		if s == "" || s[0] == '#' || s[0] == ';' {
			continue
		}
		if s[0] == '[' {
			end := strings.IndexByte(s, ']')
			if end < 0 {
				continue
			}
			h := strings.TrimSpace(s[1:end])
			name := h
			if j := strings.IndexAny(h, " \t\"."); j >= 0 {
				name = h[:j]
			}
			section = strings.ToLower(name)
			s = strings.TrimSpace(s[end+1:])
			if s == "" || s[0] == '#' || s[0] == ';' {
				continue
			}
		}
		key, val, hasVal := strings.Cut(s, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		if !hasVal {
			continue // a boolean: no path
		}
		out = append(out, configValue{section, key, unquote(val)})
	}
	return out
}

// unquote is a config value as git reads it.
func unquote(v string) string {
	var b bytes.Buffer
	inQuote := false
	v = strings.TrimSpace(v)
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			inQuote = !inQuote
		case c == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				if b.Len() > 0 {
					b.Truncate(b.Len() - 1)
				}
			default:
				b.WriteByte(v[i])
			}
		case !inQuote && (c == '#' || c == ';'):
			return strings.TrimRight(b.String(), " \t")
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimRight(b.String(), " \t")
}

// readBounded reads the regular file name beneath dirfd, refusing one of
// more than max bytes.
func readBounded(dirfd int, name string, max int64) ([]byte, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, unix.EINVAL
	}
	if st.Size > max {
		return nil, unix.EFBIG
	}
	b := make([]byte, st.Size+1)
	n, _ := f.ReadAt(b, 0)
	if int64(n) > max {
		return nil, unix.EFBIG
	}
	return b[:n], nil
}
