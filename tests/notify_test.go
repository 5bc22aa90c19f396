package tests

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServiceManagerIsToldWhenReady: under a service manager that asked
// ($NOTIFY_SOCKET, systemd's Type=notify), the daemon says READY=1 only
// once the mount answers, RELOADING=1 then READY=1 around a reload, and
// STOPPING=1 when told to stop.
func TestServiceManagerIsToldWhenReady(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	sockPath := filepath.Join(f.base, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	next := func() string {
		t.Helper()
		conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a hang guard
		buf := make([]byte, 4096)
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no notification: %v", err)
		}
		return string(buf[:n])
	}
	d := startMountEnv(t, f.mp, []string{"NOTIFY_SOCKET=" + sockPath}, "--policy", f.policy)
	msg := next()
	if !strings.Contains(msg, "READY=1") || !strings.Contains(msg, fmt.Sprintf("MAINPID=%d", d.cmd.Process.Pid)) {
		t.Fatalf("first notification %q", msg)
	}
	// Ready means the view answers.
	if _, err := os.Stat(filepath.Join(f.mp, "README.md")); err != nil || !mounted(f.mp) {
		t.Fatalf("READY=1 before the mount answers: %v", err)
	}
	d.cmd.Process.Signal(syscall.SIGHUP)
	if msg := next(); msg != "RELOADING=1" {
		t.Fatalf("on SIGHUP: %q", msg)
	}
	if msg := next(); msg != "READY=1" {
		t.Fatalf("after the reload: %q", msg)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	if msg := next(); msg != "STOPPING=1" {
		t.Fatalf("on SIGTERM: %q", msg)
	}
	d.stop() // waits, with a hang guard, for it to exit and unmount
}
