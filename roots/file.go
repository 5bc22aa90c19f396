package roots

import (
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/fsguard/fsguard/fileid"
	"github.com/fsguard/fsguard/refusal"

	"golang.org/x/sys/unix"
)

// File is an admitted, open regular file.
type File struct {
	*os.File
	Name string      // the path in the caller's view, for messages and output
	Root *Root       // the root that holds the real file
	Rel  string      // real path relative to Root
	Real string      // real absolute path
	Stat unix.Stat_t // fstat of the open descriptor at open time
}

// Identity returns the identity of the file as opened.
func (f *File) Identity() fileid.Identity { return fileid.Of(&f.Stat) }

// Restat returns the identity of the open descriptor now.
func (f *File) Restat() (fileid.Identity, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileid.Identity{}, err
	}
	return fileid.Of(&st), nil
}

func validUTF8(s string) bool { return utf8.ValidString(s) }

// Dir is an admitted directory, open for creating and renaming entries.
type Dir struct {
	*os.File
	Root *Root
	Rel  string // real path relative to Root
}

// OpenParent opens the directory that would hold rel beneath root, for a
// write: the entry's own name must not be denied, and the directory must
// resolve beneath the root to a directory no deny rule matches. It returns
// the directory and the entry's base name.
func (g *Guard) OpenParent(root *Root, rel, display string) (*Dir, string, error) {
	if rel == "." {
		return nil, "", notAFile(display, "directory")
	}
	if g.Denied(root, rel) {
		return nil, "", deniedErr(display)
	}
	dirRel, name := filepath.Dir(rel), filepath.Base(rel)
	fd, viaLink, err := g.open(root, dirRel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err == unix.EXDEV {
		return nil, "", refusal.Cannot(refusal.OutsideAllowedRoots, display, "a symbolic link on the path leads outside the root")
	}
	if err != nil {
		return nil, "", g.openErr(err, root, dirRel, filepath.Dir(display))
	}
	d := &Dir{File: os.NewFile(uintptr(fd), filepath.Dir(display)), Root: root, Rel: dirRel}
	if viaLink {
		_, rel2, err := g.landed(fd, root, display)
		if err != nil {
			d.Close()
			return nil, "", err
		}
		d.Rel = rel2
	}
	if g.Denied(root, d.Rel) || g.Denied(root, filepath.Join(d.Rel, name)) {
		d.Close()
		return nil, "", deniedErr(display)
	}
	return d, name, nil
}
