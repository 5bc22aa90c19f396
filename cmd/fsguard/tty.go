package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// onTerminal reports whether w is a terminal: progress and notices for a
// person go there, never into a pipe a program reads.
func onTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
