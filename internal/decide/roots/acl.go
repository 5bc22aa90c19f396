package roots

import (
	"encoding/binary"
	"strconv"

	"golang.org/x/sys/unix"
)

// aclXattr is where Linux keeps a file's POSIX access ACL.
const aclXattr = "system.posix_acl_access"

// The tags of an access ACL's entries (linux/posix_acl_xattr.h).
const (
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20
)

// clampToACL lowers the permission bits of st, the stat of the entry fd
// stands for, to what every caller the bits would let in is let in by the
// entry's POSIX access ACL: the mount shows mode bits alone (the kernel is
// not asked to check ACLs through it, which would cost a round trip per
// inode for every caller who is not the owner), and those bits must never
// grant what the ACL does not. An ACL that grants beyond the bits (a named
// user let into a 0600 file) grants nothing through the mount; one that
// restricts (a named user shut out of a file "other" may read) still
// restricts. The owner's bits are the ACL's own; the group bits are the
// owning group's entry, a named user's and the mask, whichever allows
// least (a named user may be in the owning group); "other" is "other",
// each named user's and each named group's entry under the mask,
// whichever allows least (a caller that is none of the owner and the
// owning group may be any of those). A file with no ACL keeps its bits.
// An ACL that cannot be read or parsed leaves the owner's bits alone.
// opath: fd is an O_PATH descriptor, which has no xattr calls of its own
// (its /proc link names exactly the inode opened).
func clampToACL(fd int, opath bool, st *unix.Stat_t) {
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return
	}
	var small [128]byte
	buf := small[:]
	n, err := getACL(fd, opath, buf)
	if err == unix.ERANGE {
		if n, err = getACL(fd, opath, nil); err == nil {
			buf = make([]byte, n+64)
			n, err = getACL(fd, opath, buf)
		}
	}
	switch err {
	case nil:
	case unix.ENODATA, unix.EOPNOTSUPP:
		return // no ACL, or a file system without them
	default:
		st.Mode &^= 0o077 // fail closed
		return
	}
	perm, ok := aclMode(buf[:n])
	if !ok {
		st.Mode &^= 0o077
		return
	}
	st.Mode = st.Mode&^0o777 | st.Mode&perm
}

// getACL reads the access ACL of fd into dest (nil: its size).
func getACL(fd int, opath bool, dest []byte) (int, error) {
	if opath {
		return unix.Getxattr("/proc/self/fd/"+strconv.Itoa(fd), aclXattr, dest)
	}
	return unix.Fgetxattr(fd, aclXattr, dest)
}

// aclMode returns the permission bits (0o777) no more permissive than the
// access ACL b, in the kernel's xattr form, for any caller (see
// clampToACL); ok is false when b is not such an ACL.
func aclMode(b []byte) (perm uint32, ok bool) {
	if len(b) < 4 || binary.LittleEndian.Uint32(b) != 2 || (len(b)-4)%8 != 0 {
		return 0, false
	}
	var user, group, other, mask uint32 = 0, 0, 0, 7
	// users and groups: what the named users' and named groups' entries
	// all allow (7 while there are none).
	users, groups := uint32(7), uint32(7)
	named, seen := false, 0
	for e := b[4:]; len(e) > 0; e = e[8:] {
		tag, p := binary.LittleEndian.Uint16(e), uint32(binary.LittleEndian.Uint16(e[2:]))&7
		switch tag {
		case aclUserObj:
			user, seen = p, seen|aclUserObj
		case aclUser:
			users, named = users&p, true
		case aclGroupObj:
			group, seen = p, seen|aclGroupObj
		case aclGroup:
			groups, named = groups&p, true
		case aclMask:
			mask = p
		case aclOther:
			other, seen = p, seen|aclOther
		default:
			return 0, false
		}
	}
	if seen != aclUserObj|aclGroupObj|aclOther {
		return 0, false
	}
	if named {
		// Named entries count under the mask, as the owning group's does;
		// "other" is never masked.
		users, groups = users&mask, groups&mask
	}
	g := group & mask & users
	o := other & users & groups
	return user<<6 | g<<3 | o, true
}

// FstatShown is fstat of fd, an entry beneath a root (opath: an O_PATH
// descriptor), with its permission bits lowered to its ACL as Entry's are:
// the stat the mount shows of an open file or a root's top.
func FstatShown(fd int, opath bool, st *unix.Stat_t) error {
	if err := unix.Fstat(fd, st); err != nil {
		return err
	}
	clampToACL(fd, opath, st)
	return nil
}
