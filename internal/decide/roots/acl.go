package roots

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// aclXattr is where Linux keeps a file's POSIX access ACL.
const aclXattr = "system.posix_acl_access"

// AccessACL reads the POSIX access ACL of rel's entry itself (a final
// symbolic link is not followed) into dest, in the kernel's own xattr
// form; with an empty dest it returns the ACL's size. The mount hands it
// to the kernel, which then checks every caller against the same ACL the
// backing file system would: mode bits alone would let a user an ACL
// shuts out read a file that is readable by "other", and would shut out
// a user an ACL lets in. No ACL is unix.ENODATA.
func (g *Guard) AccessACL(root *Root, rel string, dest []byte) (int, error) {
	at := root.At(rel)
	if g.Denied(root, rel) {
		return 0, deniedErr(at.Shown)
	}
	pfd, viaLink, err := g.open(root, rel, unix.O_PATH|unix.O_NOFOLLOW)
	if err != nil {
		return 0, err
	}
	defer unix.Close(pfd)
	if viaLink {
		if _, err := g.landed(pfd, at, true); err != nil {
			return 0, err
		}
	}
	// An O_PATH descriptor has no xattr calls of its own; its /proc link
	// names exactly the inode opened.
	n, err := unix.Getxattr(fmt.Sprintf("/proc/self/fd/%d", pfd), aclXattr, dest)
	if err == unix.EOPNOTSUPP {
		err = unix.ENODATA // a link, or a file system without ACLs
	}
	return n, err
}
