package roots

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/fsguard/fsguard/internal/concept/policy"
	"github.com/fsguard/fsguard/internal/concept/refusal"

	"golang.org/x/sys/unix"
)

// A git directory is recognised by what it holds, as git itself recognises
// one (setup.c, is_git_directory), never by its name: git reads a git
// directory's config, hooks/, info/attributes and the rest and runs the
// commands they name (core.fsmonitor, core.sshCommand, core.pager, filter
// drivers, hooks) as whoever runs git, so a file written there is code the
// host runs. Git accepts a directory when it has HEAD, and objects/ and
// refs/ in its common directory: the directory itself, or the one its
// commondir file names (a worktree's git directory has HEAD and commondir
// and neither of the others). So a directory is taken for a git directory
// when it holds
//
//   - objects and refs (any type of entry: HEAD is not asked for, so the
//     common directory a commondir file names is one too, HEAD or not), or
//   - HEAD and commondir.
//
// That takes in every git directory git would use, whatever leads git
// there: a .git directory, the target of a .git file's "gitdir:" line or
// of a .git symbolic link, a bare repository by any name, a worktree's or
// a submodule's git directory, Google repo's .repo/projects/*.git. A
// directory that merely holds a file named HEAD is not one. Nothing is
// cached: every write asks the file system, so a repository made while
// the daemon runs is recognised at its first write.

// gitMark is one entry that marks a git directory.
type gitMark uint8

const (
	markHEAD gitMark = 1 << iota
	markCommondir
	markObjects
	markRefs
)

// gitMarks names the marks, in the order of their bits.
var gitMarks = [...]string{"HEAD", "commondir", "objects", "refs"}

// gitDir reports whether a directory holding the marks m is a git
// directory.
func (m gitMark) gitDir() bool {
	return m&(markObjects|markRefs) == markObjects|markRefs || m&(markHEAD|markCommondir) == markHEAD|markCommondir
}

// String lists the marks, as a refusal names them.
func (m gitMark) String() string {
	var s []string
	for i, name := range gitMarks {
		if m&(1<<i) != 0 {
			s = append(s, name)
		}
	}
	return strings.Join(s, ", ")
}

// markOf is the mark a directory entry named name would be, folded as
// deny rules fold names (on a case-folding file system "head" is HEAD);
// 0 for none.
func markOf(name string) gitMark {
	name = policy.Fold(name)
	for i, m := range gitMarks {
		if name == strings.ToLower(m) {
			return 1 << i
		}
	}
	return 0
}

// marksIn looks up, in the directory dfd, the marks that decide whether it
// is a git directory: each pair's second mark only where its first is
// there, all four where all says so. A lookup does not follow a final
// symbolic link (a link named HEAD or objects counts as the entry itself,
// as git would follow it). An entry that cannot be looked up for want of
// permission counts as there: the answer may only err toward a refusal.
func marksIn(dfd int, all bool) (gitMark, error) {
	var m gitMark
	for _, pair := range [...][2]gitMark{{markObjects, markRefs}, {markHEAD, markCommondir}} {
		for _, mark := range pair {
			there, err := markIn(dfd, mark)
			if err != nil {
				return m, err
			}
			if there {
				m |= mark
			} else if !all {
				break
			}
		}
	}
	return m, nil
}

// markIn looks up one mark in the directory dfd.
func markIn(dfd int, mark gitMark) (bool, error) {
	name := gitMarks[bits.TrailingZeros8(uint8(mark))]
	var st unix.Stat_t
	var err error = unix.EINTR
	for try := 0; err == unix.EINTR && try < 16; try++ {
		err = unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	switch err {
	case nil, unix.EACCES, unix.EPERM:
		return true, nil
	case unix.ENOENT, unix.ENOTDIR:
		return false, nil
	}
	return false, err
}

// writeIntoGitDir is the one decision that keeps the agent out of git's
// own files: it refuses creating or replacing the entry name in d when d,
// or any directory above it up to and including its root, is a git
// directory; when the entry would make d one (HEAD beside commondir, refs
// beside objects); and when the entry is a .git file, which tells git
// where a git directory is. It walks up from d's own descriptor through
// "..", so what it judges is where the write will land, whatever path led
// there: per level, a lookup of objects and of HEAD (their pairs' other
// marks only where they are there) and an open of "..", no walk of the
// tree. The lookups are made with the guard's access (the caller's
// rights), which can see every mark of a directory the caller could open.
func (g *Guard) writeIntoGitDir(d *Dir, name, shown string) error {
	switch policy.Fold(name) {
	case ".git":
		return refusal.Of(refusal.GitDir, refusal.OpWrite, shown, refusal.Facts{Detail: "a .git file tells git where a repository's git directory is"})
	case "commondir":
		// Refused wherever it is, not only beside HEAD: a write of HEAD
		// and one of commondir at once would each find the other
		// missing, and together make a git directory (objects/ and
		// refs/, the other way, are directories no write can make).
		return refusal.Of(refusal.GitDir, refusal.OpWrite, shown, refusal.Facts{Detail: "a commondir file makes its directory a git directory wherever it is (it names where a repository's objects and refs are)"})
	}
	depth := 0
	if d.Rel != "." {
		depth = strings.Count(d.Rel, "/") + 1
	}
	var refused error
	err := g.Do(func() error {
		fd, up := int(d.Fd()), -1
		defer func() {
			if up >= 0 {
				unix.Close(up)
			}
		}()
		add := markOf(name)
		for level := 0; ; level++ {
			// Where the entry is a mark, every mark of its directory
			// decides whether it would make one.
			m, err := marksIn(fd, level == 0 && add != 0)
			if err != nil {
				return err
			}
			if m.gitDir() {
				what := "it is inside a git directory"
				if level == 0 {
					what = "it is in a git directory"
				}
				refused = refusal.Of(refusal.GitDir, refusal.OpWrite, shown, refusal.Facts{Detail: fmt.Sprintf("%s (one holding %s)", what, m)})
				return nil
			}
			if level == 0 && (m | add).gitDir() {
				refused = refusal.Of(refusal.GitDir, refusal.OpWrite, shown, refusal.Facts{Detail: fmt.Sprintf("it would make its directory a git directory (one holding %s)", m|add)})
				return nil
			}
			if level == depth {
				// The root itself, unless a directory on the way was
				// moved meanwhile: then what was judged is not where the
				// write lands.
				var st unix.Stat_t
				if err := unix.Fstat(fd, &st); err != nil {
					return err
				}
				if st.Dev != d.Root.Dev || st.Ino != d.Root.Ino {
					refused = refusal.Of(refusal.ChangedResolving, refusal.OpWrite, shown, refusal.Facts{})
				}
				return nil
			}
			parent, err := unix.Openat(fd, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			if up >= 0 {
				unix.Close(up)
			}
			fd, up = parent, parent
		}
	})
	if err != nil {
		return refusal.Of(refusal.IOFailed, refusal.OpWrite, shown, refusal.Facts{Detail: unwrap(err).Error()}).Because(err)
	}
	return refused
}
