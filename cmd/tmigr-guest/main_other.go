//go:build !linux

// Command tmigr-guest is the load of a "tmigr lab record" guest; it runs
// on Linux only (see main_linux.go).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "tmigr-guest: runs inside a Linux guest only")
	os.Exit(2)
}
