package roots

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// fsCaseFoldFL is FS_CASEFOLD_FL: the directory's names are compared by
// the kernel's utf8 casefolding, so ".ſsh" and ".SSH" open ".ssh".
const fsCaseFoldFL = 0x40000000

// caseFoldingTypes are the file systems whose directories may fold case
// (chattr +F), by statfs type, with the kernel feature that says this
// kernel can.
var caseFoldingTypes = map[int64]string{
	unix.EXT4_SUPER_MAGIC: "/sys/fs/ext4/features/casefold",
	unix.F2FS_SUPER_MAGIC: "/sys/fs/f2fs/features/casefold",
	unix.TMPFS_MAGIC:      "/sys/fs/tmpfs/features/casefold",
}

// mayFoldCase reports whether a directory beneath the root opened at fd
// (O_PATH) may compare names folding case: the root directory itself
// folds, or it is on a file system where any empty directory's owner can
// make one fold (chattr +F) and the kernel supports it, or resolution
// crosses into other mounts and the kernel can fold case on any. Then the
// root's names are compared folded even when [deny] fold is off: an exact
// comparison there would let ".SSH" through to ".ssh". Answering yes
// where no directory folds only makes deny rules match more names.
func mayFoldCase(fd int, crossMounts bool) bool {
	if dfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		flags, err := unix.IoctlGetUint32(dfd, unix.FS_IOC_GETFLAGS)
		unix.Close(dfd)
		if err == nil && flags&fsCaseFoldFL != 0 {
			return true
		}
	}
	if crossMounts {
		for _, feature := range caseFoldingTypes {
			if _, err := os.Stat(feature); err == nil {
				return true
			}
		}
		return false
	}
	var sfs unix.Statfs_t
	if unix.Fstatfs(fd, &sfs) != nil {
		return true // unknown: fold
	}
	feature, ok := caseFoldingTypes[int64(sfs.Type)]
	if !ok {
		return false
	}
	_, err := os.Stat(feature)
	return err == nil
}

// folds reports whether names beneath root are compared folded: the
// policy's [deny] fold, or a file system that may fold them (mayFoldCase).
func (g *Guard) folds(root *Root) bool { return g.pol.Folds() || root.caseFolds }
