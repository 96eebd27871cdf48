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

// stream explains the recording r reads in one pass. It returns a nil
// report, and no error, when the pass cannot give the whole recording's
// report: the caller then reads it whole.
func stream(r *ftrace.Reader, o Options) (*Report, error) {
	e, err := r.Next()
	if err != nil {
		return nil, nil
	}
	hdr := r.Header()
	b, err := newBuilder(nil, hdr, o)
	if err != nil {
		return nil, nil
	}
	for {
		if !b.take(e) {
			return nil, nil
		}
		for ; b.win.start < b.win.end && e.TS-b.win.at(b.win.start).TS > swapWindow; b.win.pop() {
			b.step(b.win.start)
		}
		if e, err = r.Next(); err == io.EOF {
			break
		} else if err != nil {
			return nil, nil
		}
	}
	for ; b.win.start < b.win.end; b.win.pop() {
		b.step(b.win.start)
	}
	if !reflect.DeepEqual(hdr, r.Header()) {
		return nil, nil
	}
	b.finish()
	if b.unstable != "" {
		return nil, nil
	}
	return b.rep, nil
}

// explainPath explains the recording at path ("-": standard input) in one
// pass, or, where that pass cannot, reading it whole. Standard input is
// copied to a temporary file as it is read, to be read again from there.
func explainPath(path string, o Options) (*Report, error) {
	src, name := os.Stdin, path
	var spool *os.File
	if path == "-" {
		f, err := os.CreateTemp("", "tmigr-explain-*")
		if err != nil {
			return nil, fmt.Errorf("standard input needs a temporary copy: %w", err)
		}
		defer os.Remove(f.Name())
		defer f.Close()
		spool = f
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer f.Close()
		src = f
	}
	var in io.Reader = src
	if spool != nil {
		in = io.TeeReader(src, spool)
	}
	rep, err := streamFrom(in, name, o)
	if rep != nil || err != nil {
		return rep, err
	}
	// Read it again, whole.
	again := path
	if spool != nil {
		if _, err := io.Copy(spool, src); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		again = spool.Name()
	}
	evs, hdr, err := readFile(again)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rep, err = Build(evs, hdr, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
}

func streamFrom(in io.Reader, name string, o Options) (*Report, error) {
	r, c, err := ftrace.OpenReader(in, name)
	if err != nil {
		return nil, nil
	}
	defer c.Close()
	return stream(r, o)
}
