package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/tmigr/tmigr/conformance"
	"github.com/tmigr/tmigr/lab"
)

func init() {
	registerLab("matrix", "record and check the conformance matrix of shapes; write docs/conformance.md", runLabMatrix)
}

const labMatrixUsage = `usage: tmigr lab matrix [--shapes LIST] [--no-record] [--dir DIR] [--out FILE] [flags]

Records a guest of every shape of the conformance matrix with "tmigr lab
record" (QEMU: about 25 minutes for all of them on a 2-core host), checks
each one's boot line against the model's hierarchy, replays it through the
model (wheel, tmigr, hrtimer), compares it with the simulator ("tmigr lab
compare"), and writes the document to --out: standard output unless told
otherwise, "--out docs/conformance.md" to rewrite the tracked one. With
--no-record the recordings already in --dir are checked instead, which
needs no QEMU. An interrupted run (Ctrl-C) writes no document. Exit status
1 when a check found a mismatch.

Shapes:
%s
flags:
`

func runLabMatrix(args []string, stdout, stderr io.Writer) int {
	var shapeList strings.Builder
	tw := tabwriter.NewWriter(&shapeList, 0, 0, 2, ' ', 0)
	for _, sh := range conformance.Matrix() {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", sh.Name, sh.Flags(), sh.Note)
	}
	tw.Flush()
	fs := newFlagSet("tmigr lab matrix", fmt.Sprintf(labMatrixUsage, shapeList.String()), stdout, stderr)
	shapes := fs.String("shapes", "", "comma-separated shape names (default: all)")
	noRecord := fs.Bool("no-record", false, "check the recordings in --dir as they are; record nothing")
	dir := fs.String("dir", filepath.Join("testdata", "traces"), "the recordings' directory")
	out := fs.String("out", "-", "the document to write (\"-\": standard output, \"\": none); docs/conformance.md is the tracked one")
	duration := fs.Duration("duration", 0, "record every shape for this long instead of its own duration")
	var host lab.Host
	fs.StringVar(&host.CacheDir, "cache", "", "the recorder's cache directory (default $XDG_CACHE_HOME/tmigr/lab or ~/.cache/tmigr/lab)")
	fs.StringVar(&host.Mirror, "mirror", "", "Debian archive base URL (default http://deb.debian.org)")
	fs.BoolVar(&host.NoInstall, "no-install", false, "never run apt-get install; fail naming what is missing")
	seed := fs.Uint64("seed", 1, "the simulator's random seed")
	retries := fs.Int("retries", 1, "record a shape whose recording failed again, this many times")
	fs.files("out")
	fs.dirs("dir", "cache")
	fs.operands("", 0, 0, completion{})
	if rc, ok := fs.parse(args); !ok {
		return rc
	}
	if *duration < 0 || (*noRecord && *duration != 0) {
		fmt.Fprintln(stderr, "tmigr lab matrix: --duration must be positive, and goes with recording (not with --no-record)")
		return 2
	}
	if *retries < 0 {
		fmt.Fprintln(stderr, "tmigr lab matrix: --retries must not be negative")
		return 2
	}
	o := conformance.MatrixOptions{Dir: *dir, Record: !*noRecord, Duration: *duration, Host: host, Retries: *retries,
		Progress: prefixWriter{stderr, "tmigr lab: "}, Compare: conformance.CompareOptions{Seed: *seed}}
	if *shapes != "" {
		for _, s := range strings.Split(*shapes, ",") {
			o.Shapes = append(o.Shapes, strings.TrimSpace(s))
		}
	}
	if _, err := conformance.SelectShapes(o.Shapes); err != nil {
		fmt.Fprintf(stderr, "tmigr lab matrix: --shapes: %v\n", err)
		return 2
	}
	ctx, stop := labContext()
	defer stop()
	rows, err := conformance.RunMatrix(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "tmigr lab matrix: %v\n", err)
		return 1
	}
	if *out == "-" {
		summary(stderr, rows) // standard output is the document's
	} else {
		summary(stdout, rows)
	}
	if *out != "" {
		var doc bytes.Buffer
		if err := conformance.WriteConformance(&doc, rows, docDir(*dir), matrixCommand(args)); err != nil {
			fmt.Fprintf(stderr, "tmigr lab matrix: %v\n", err)
			return 1
		}
		if *out != "-" {
			if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
				fmt.Fprintf(stderr, "tmigr lab matrix: %v\n", err)
				return 1
			}
		}
		if err := writeOutput(*out, doc.Bytes(), stdout); err != nil {
			fmt.Fprintf(stderr, "tmigr lab matrix: %v\n", err)
			return 1
		}
		if *out != "-" {
			fmt.Fprintf(stderr, "tmigr lab: wrote %s\n", *out)
		}
	}
	if conformance.Mismatched(rows) {
		return 1
	}
	return 0
}

// matrixCommand is the command line as the document names it: the flags
// that say what was checked, without the machine's own paths.
func matrixCommand(args []string) string {
	cmd := []string{"go run ./cmd/tmigr lab matrix"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "no-record", "shapes", "duration", "seed", "retries":
			cmd = append(cmd, a)
			if !hasValue && name != "no-record" && i+1 < len(args) {
				i++
				cmd = append(cmd, args[i])
			}
		default:
			if !hasValue && name != "no-install" && i+1 < len(args) {
				i++ // a path or URL: left out
			}
		}
	}
	return strings.Join(cmd, " ")
}

// docDir is the recordings' directory as the document names it: a path
// inside the repository as given, anything else by its last element only
// (the document must not carry the paths of the machine that wrote it).
func docDir(dir string) string {
	d := filepath.ToSlash(filepath.Clean(dir))
	if filepath.IsAbs(dir) || d == ".." || strings.HasPrefix(d, "../") {
		return filepath.Base(dir) + " (given with --dir)"
	}
	return d
}

// summary prints one line per shape.
func summary(w io.Writer, rows []conformance.MatrixRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "shape\tkernel\tevents\tchecked\tmatched\tundetermined\tmismatched\tpulls (background)\tpulls (mix)\trecorded in")
	for i := range rows {
		r := &rows[i]
		c, m, u, x := r.Totals()
		rec := "-"
		if r.Record > 0 {
			rec = fmt.Sprintf("%.1f s", r.Record.Seconds())
		}
		agree := func(src conformance.TimerSource) string {
			if s := r.Comp.Sim(src); s != nil {
				return s.Agreement.String()
			}
			return "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", r.Shape.Name, r.Kernel, r.Events, c, m, u, x,
			agree(conformance.RecordedBackground), agree(conformance.HousekeepingMix), rec)
	}
	tw.Flush()
}
