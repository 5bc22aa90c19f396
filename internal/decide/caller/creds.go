package caller

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// ErrCannotAct says the process cannot take a caller's credentials (it
// lacks CAP_SETUID/CAP_SETGID): the request is refused, never served with
// the process's own rights instead.
var ErrCannotAct = errors.New("the fsguard daemon cannot act with the caller's credentials (it needs CAP_SETUID and CAP_SETGID; run it as root)")

// daemonGroups are the process's own supplementary groups, restored on a
// thread after it acted for a caller.
var daemonGroups, _ = unix.Getgroups()

// Do runs fn with the caller's file-system credentials: fsuid, fsgid and
// supplementary groups, on an OS thread locked to a goroutine of its own.
// Everything fn opens, creates, renames or lists is checked by the kernel
// against the caller, as if the caller had made the call. fn must do only
// file-system work: its thread is the caller's until fn returns.
//
// When the process already is the caller (direct mode, or root asking a
// root daemon), fn simply runs. If the thread cannot be given back its own
// credentials afterwards, it is left locked, and the runtime ends it with
// its goroutine, so no later work ever runs with a caller's identity.
func (c *Caller) Do(fn func() error) error {
	if c == nil || !c.needsSwitch() {
		return fn()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := c.assume()
		if err == nil {
			err = fn()
		}
		if restore() == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

// assume gives the current thread the caller's file-system credentials and
// checks that the kernel took them (setfsuid(2) reports no failure).
func (c *Caller) assume() error {
	groups := make([]int, len(c.Groups))
	for i, g := range c.Groups {
		groups[i] = int(g)
	}
	if err := unix.Setgroups(groups); err != nil {
		return fmt.Errorf("%w: setgroups: %v", ErrCannotAct, err)
	}
	unix.Setfsgid(int(c.Gid))
	unix.Setfsuid(int(c.Uid))
	if gid, _ := unix.SetfsgidRetGid(-1); gid != int(c.Gid) {
		return ErrCannotAct
	}
	if uid, _ := unix.SetfsuidRetUid(-1); uid != int(c.Uid) {
		return ErrCannotAct
	}
	return nil
}

// restore gives the current thread back the process's own credentials.
func restore() error {
	uid, gid := os.Geteuid(), os.Getegid()
	unix.Setfsuid(uid)
	unix.Setfsgid(gid)
	if err := unix.Setgroups(daemonGroups); err != nil {
		return err
	}
	if got, _ := unix.SetfsuidRetUid(-1); got != uid {
		return ErrCannotAct
	}
	if got, _ := unix.SetfsgidRetGid(-1); got != gid {
		return ErrCannotAct
	}
	return nil
}
