package explain

import (
	"errors"
	"fmt"
	"io"

	"github.com/tmigr/tmigr/ftrace"
)

// ReadFile reads a whole recording in any form ftrace.Open reads
// (tracefs text, trace-cmd report text, trace.dat, gzip'd; "-" is
// standard input), in time order (sorted by ftrace.Open, as replay's).
func ReadFile(path string) ([]ftrace.Event, ftrace.Header, error) {
	evs, hdr, err := readFile(path)
	if err != nil {
		return nil, ftrace.Header{}, fmt.Errorf("%s: %w", path, err)
	}
	return evs, hdr, nil
}

func readFile(path string) ([]ftrace.Event, ftrace.Header, error) {
	r, c, err := ftrace.Open(path)
	if err != nil {
		return nil, ftrace.Header{}, err
	}
	defer c.Close()
	return readAll(r)
}

// readFrom is readFile of an open input; name is what it is called.
func readFrom(src io.Reader, name string) ([]ftrace.Event, ftrace.Header, error) {
	r, c, err := ftrace.OpenReader(src, name)
	if err != nil {
		return nil, ftrace.Header{}, err
	}
	defer c.Close()
	return readAll(r)
}

// readAll reads every event of r. The first malformed line ends the
// reading with its error (a *ftrace.LineError names the line): an
// explanation built on part of a recording could blame the wrong CPU.
// Events out of time order (per-CPU buffers concatenated) are sorted by
// the Reader, as replay's are: the chain of decisions is a sequence in
// time.
func readAll(r *ftrace.Reader) ([]ftrace.Event, ftrace.Header, error) {
	evs, err := ftrace.ReadAll(r)
	if err != nil {
		return nil, ftrace.Header{}, err
	}
	if len(evs) == 0 {
		return nil, ftrace.Header{}, errors.New("the recording holds no timer or timer_migration events")
	}
	return evs, r.Header(), nil
}

// fmtTS prints a trace time as the kernel does, seconds with six decimals.
func fmtTS(ns int64) string {
	if ns < 0 {
		return fmt.Sprintf("-%s", fmtTS(-ns))
	}
	return fmt.Sprintf("%d.%06d s", ns/1e9, ns%1e9/1e3)
}

// fmtKtime prints a time of the hierarchy's clock (CLOCK_MONOTONIC, in
// which events and wakeups are kept). The trace's own clock ("local" by
// default) may run apart from it: the 6.12.117 recordings' are seconds
// ahead, so the two are never mixed up in one number.
func fmtKtime(ns int64) string {
	return fmtTS(ns) + " (CLOCK_MONOTONIC)"
}
