package main

import (
	"fmt"
	"io"
)

func runMount(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "Error: not yet")
	return exitFail
}

func runUnmount(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "Error: not yet")
	return exitFail
}
