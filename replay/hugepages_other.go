//go:build !linux

package replay

import "github.com/tmigr/tmigr/ftrace"

// adviseHugePages is Linux's alone (hugepages_linux.go).
func adviseHugePages([]ftrace.Event) {}
