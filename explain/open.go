package explain

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/tmigr/tmigr/ftrace"
)

// open opens a recording for reading; "-" is standard input. It has the
// shape of ftrace.Open (path in, Reader and Closer out), which reads
// trace-cmd report text, gzip and trace.dat as well; once that lands,
// open's body becomes "return ftrace.Open(path)".
func open(path string) (*ftrace.Reader, io.Closer, error) {
	if path == "-" {
		return ftrace.NewReader(os.Stdin), io.NopCloser(nil), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	return ftrace.NewReader(f), f, nil
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
				fmtTS(last.TS), last.Line, fmtTS(ev.TS))}
		}
		last = ev
		evs = append(evs, ev)
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
