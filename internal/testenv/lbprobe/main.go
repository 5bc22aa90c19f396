package main

import (
	"fmt"
	"os"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

func main() {
	src, mp := os.Args[1], os.Args[2]
	root, err := fs.NewLoopbackRoot(src)
	if err != nil {
		panic(err)
	}
	srv, err := fs.Mount(mp, root, &fs.Options{})
	if err != nil {
		panic(err)
	}
	fd, err := unix.Open(mp, unix.O_TMPFILE|unix.O_RDWR, 0o600)
	fmt.Println("tmpfile:", fd, err)
	srv.Unmount()
}
