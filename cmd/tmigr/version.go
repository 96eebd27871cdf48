package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

func init() {
	register("version", "print the build: module version, VCS revision, Go version", runVersion)
}

const versionUsage = `usage: tmigr version (or tmigr --version)

Prints the module version (a release tag with go install ...@version,
"(devel)" or a pseudo-version for a build from a checkout), the VCS
revision the binary was built from and whether the tree had uncommitted
changes ("modified"), and the Go release and platform it was built with.
The revision is "unknown" in a binary built without VCS stamping: by
go run, with -buildvcs=false (GOFLAGS), or from a git worktree, which Go
does not stamp; go build or go install in a clone stamps it.
`

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("tmigr version", versionUsage, stdout, stderr)
	if rc, ok := fs.parse(args); !ok {
		return rc
	}
	bi, _ := debug.ReadBuildInfo()
	fmt.Fprintln(stdout, versionLine(bi))
	return 0
}

// versionLine formats the build information:
//
//	tmigr v1.2.0, revision 3fca651a2b4c (modified, 2026-12-01T18:23:09Z), go1.26.8 linux/amd64
func versionLine(bi *debug.BuildInfo) string {
	version, goVersion := "(unknown)", runtime.Version()
	var rev, when, modified string
	if bi != nil {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = "modified"
				}
			}
		}
	}
	line := "tmigr " + version
	if rev == "" {
		line += ", revision unknown"
	} else {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		line += ", revision " + rev
		var notes []string
		for _, n := range []string{modified, when} {
			if n != "" {
				notes = append(notes, n)
			}
		}
		if len(notes) > 0 {
			line += " (" + strings.Join(notes, ", ") + ")"
		}
	}
	return fmt.Sprintf("%s, %s %s/%s", line, goVersion, runtime.GOOS, runtime.GOARCH)
}
