package explain

import (
	"fmt"
	"io"
	"os"
	"reflect"

	"github.com/tmigr/tmigr/ftrace"
)

// Streams.
//
// A recording is explained in one pass over its events, holding the state
// of its CPUs, groups and live timers, and a window of the events ahead of
// the one explained: the swapped transitions a group's state is put back
// in order by are at most swapWindow apart. What the builder would ask of
// the whole recording (the hierarchy's groups, which CPUs trace their
// transitions, the groups whose state changes unseen, a pre-recording
// timer's next timer_start) it learns as the lines come, a window ahead of
// where it explains. Where an answer it used turns out, by the end, not to
// be the whole recording's, or the recording does not let a pass begin (a
// machine whose CPUs only the whole recording counts, a line in error),
// the recording is read again whole (Build), so that the report is the
// same either way.

// window is the events from start to end (indexes in the recording): a
// ring for a stream, the whole recording for Build.
type window struct {
	ev         []ftrace.Event
	start, end int
}

func (w *window) at(i int) *ftrace.Event { return &w.ev[i%len(w.ev)] }

func (w *window) push(e ftrace.Event) {
	if w.end-w.start == len(w.ev) {
		ev := make([]ftrace.Event, 2*len(w.ev))
		for i := w.start; i < w.end; i++ {
			ev[i%len(ev)] = *w.at(i)
		}
		w.ev = ev
	}
	*w.at(w.end) = e
	w.end++
}

// pop drops the window's first event, letting go of its text.
func (w *window) pop() {
	*w.at(w.start) = ftrace.Event{}
	w.start++
}

// stream explains the recording r reads in one pass. It returns nil
// when the pass cannot give the whole recording's report: the caller then
// reads it whole.
func stream(r *ftrace.Reader, o Options) *Report {
	e, err := r.Next()
	if err != nil {
		return nil
	}
	hdr := r.Header()
	b, err := newBuilder(nil, hdr, o)
	if err != nil {
		return nil
	}
	for {
		if !b.take(e) {
			return nil
		}
		for ; b.win.start < b.win.end && e.TS-b.win.at(b.win.start).TS > swapWindow; b.win.pop() {
			b.step(b.win.start)
		}
		if e, err = r.Next(); err == io.EOF {
			break
		} else if err != nil {
			return nil
		}
	}
	for ; b.win.start < b.win.end; b.win.pop() {
		b.step(b.win.start)
	}
	if !reflect.DeepEqual(hdr, r.Header()) {
		return nil
	}
	b.finish()
	if b.unstable != "" {
		return nil
	}
	return b.rep
}

// explainPath explains the recording at path ("-": standard input) in one
// pass, or, where that pass cannot, reading it whole. Standard input, or a
// pipe, is copied to a temporary file as it is read, to be read again from
// there; without a temporary file, it is read whole at once.
func explainPath(path string, o Options) (*Report, error) {
	src := os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer f.Close()
		src = f
	}
	var rep *Report
	again := func() ([]ftrace.Event, ftrace.Header, error) { return readFrom(src, path) }
	if st, err := src.Stat(); err == nil && st.Mode().IsRegular() {
		rep = streamFrom(src, path, o)
		again = func() ([]ftrace.Event, ftrace.Header, error) {
			if _, err := src.Seek(0, io.SeekStart); err != nil {
				return nil, ftrace.Header{}, err
			}
			return readFrom(src, path)
		}
	} else if spool, err := os.CreateTemp("", "tmigr-explain-*"); err == nil {
		defer os.Remove(spool.Name())
		defer spool.Close()
		rep = streamFrom(io.TeeReader(src, spool), path, o)
		again = func() ([]ftrace.Event, ftrace.Header, error) {
			if _, err := io.Copy(spool, src); err != nil {
				return nil, ftrace.Header{}, err
			}
			return readFile(spool.Name())
		}
	}
	if rep != nil {
		return rep, nil
	}
	evs, hdr, err := again()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if rep, err = Build(evs, hdr, o); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
}

func streamFrom(in io.Reader, name string, o Options) *Report {
	r, c, err := ftrace.OpenReader(in, name)
	if err != nil {
		return nil
	}
	defer c.Close()
	return stream(r, o)
}
