package main

import (
	"net"
	"os"
)

// sdNotify tells the service manager about the daemon's state
// ("READY=1" once the mount answers, "RELOADING=1", "STOPPING=1"), when
// it runs under one that asked ($NOTIFY_SOCKET, systemd's Type=notify), so
// units ordered after fsguard start only once the view is there. Without
// $NOTIFY_SOCKET it does nothing.
func sdNotify(state string) error {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil
	}
	if path[0] == '@' {
		path = "\x00" + path[1:] // an abstract socket
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(state))
	return err
}
