package explain

import (
	"errors"
	"fmt"
	"io"

	"github.com/tmigr/tmigr/ftrace"
)

// ReadFile reads a whole recording in any form ftrace.Open reads
// (tracefs text, trace-cmd report text, trace.dat, gzip'd; "-" is
// standard input), in time order.
func ReadFile(path string) ([]ftrace.Event, ftrace.Header, error) {
	r, c, err := ftrace.Open(path)
	if err != nil {
		return nil, ftrace.Header{}, fmt.Errorf("%s: %w", path, err)
	}
	defer c.Close()
	evs, hdr, err := readAll(r)
	if err != nil {
		return nil, ftrace.Header{}, fmt.Errorf("%s: %w", path, err)
	}
	return evs, hdr, nil
}

// readAll reads every event of r. The first malformed line ends the
// reading with its error (a *ftrace.LineError names the line): an
// explanation built on part of a recording could blame the wrong CPU. So
// do events out of time order, which per-CPU buffers concatenated without
// merging give: the chain of decisions is a sequence in time.
func readAll(r *ftrace.Reader) ([]ftrace.Event, ftrace.Header, error) {
	var evs []ftrace.Event
	var last ftrace.Event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, ftrace.Header{}, err
		}
		if len(evs) > 0 && ev.TS < last.TS {
			return nil, ftrace.Header{}, &ftrace.LineError{Line: ev.Line, Err: fmt.Errorf(
				"time goes back, from %s at line %d to %s: the events are not in time order (per-CPU buffers concatenated? merge them by time first)",
				ftrace.FormatTS(last.TS)+" s", last.Line, ftrace.FormatTS(ev.TS)+" s")}
		}
		last = ev
		evs = append(evs, ev)
	}
	if len(evs) == 0 {
		return nil, ftrace.Header{}, errors.New("the recording holds no timer or timer_migration events")
	}
	return evs, r.Header(), nil
}

// fmtKtime prints a time of the hierarchy's clock (CLOCK_MONOTONIC, in
// which events and wakeups are kept). The trace's own clock ("local" by
// default) may run apart from it: the 6.12.117 recordings' are seconds
// ahead, so the two are never mixed up in one number.
func fmtKtime(ns int64) string {
	return ftrace.FormatTS(ns) + " s (CLOCK_MONOTONIC)"
}
