package roots

import (
	"os"
	"unicode/utf8"

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

// Identity is what a file version is known by on the fast path: if any of
// these change, the content may have.
type Identity struct {
	Dev, Ino         uint64
	Size             int64
	MtimeNs, CtimeNs int64
}

// IdentityOf extracts the identity from a stat.
func IdentityOf(st *unix.Stat_t) Identity {
	return Identity{
		Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size,
		MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano(),
	}
}

// Identity returns the identity of the file as opened.
func (f *File) Identity() Identity { return IdentityOf(&f.Stat) }

// Restat returns the identity of the open descriptor now.
func (f *File) Restat() (Identity, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return Identity{}, err
	}
	return IdentityOf(&st), nil
}

func validUTF8(s string) bool { return utf8.ValidString(s) }
