package main

import (
	"cmp"
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/host"
	"github.com/tmigr/tmigr/tracefs"
	"github.com/tmigr/tmigr/watch"
)

// signalContext is the context of a command that runs until Ctrl-C or
// SIGTERM: done at either, so that the command puts back what it changed.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// stream is the events top, exporter and host --verify follow: a
// recording, or this machine live.
type stream struct {
	reader *ftrace.Reader
	// watcher is nil for a recording: the Follow makes it from the
	// recording's machine line.
	watcher *watch.Watcher
	live    bool
	// lost, for a live stream, is the events its buffers lost so far.
	lost   func() uint64
	closer io.Closer
}

func (s *stream) Close() error {
	if s.closer == nil {
		return nil
	}
	return s.closer.Close()
}

// liveOptions say where this machine's files and tracefs are, for a
// live stream.
type liveOptions struct {
	// Root is the machine's root for tmigr host's files ("/"; a
	// container's /host where the host's /proc and /sys are mounted).
	Root string
	// Tracefs is the tracefs mount ("" finds or mounts it).
	Tracefs string
	// HRTimers traces the hrtimer events too (always on PREEMPT_RT).
	HRTimers bool
	// Recorder names the command in the machine line's note.
	Recorder string
}

// flags adds the flags of a live stream to a command's.
func (o *liveOptions) flags(fs *flagSet) {
	fs.BoolVar(&o.HRTimers, "hrtimers", false, "also trace the hrtimer events (always on PREEMPT_RT)")
	fs.StringVar(&o.Root, "root", "/", "the machine's root for its /proc and /sys (a container's /host)")
	fs.StringVar(&o.Tracefs, "tracefs", "", "the tracefs mount (default: found, or mounted at /sys/kernel/tracing)")
	fs.dirs("root", "tracefs")
}

// openStream opens the recording at input, or this machine live when input
// is "".
func openStream(input string, o liveOptions) (*stream, error) {
	if input != "" {
		rd, c, err := ftrace.Open(input)
		if err != nil {
			return nil, err
		}
		return &stream{reader: rd, closer: c}, nil
	}
	return openLive(o)
}

// openLive opens this machine's timer events live: its machine as tmigr
// host reads it, a tracefs instance of its own, started, and its pipe.
// Closing the stream closes the pipe and removes the instance.
func openLive(o liveOptions) (*stream, error) {
	snap, err := readSnapshot(cmp.Or(o.Root, "/"))
	if err != nil {
		return nil, err
	}
	h, err := host.Parse(snap)
	if err != nil {
		return nil, err
	}
	m, rep, err := host.RecordingMachine(h, o.Recorder)
	if err != nil {
		return nil, err
	}
	w, err := watch.New(watch.Machine{Machine: &m, Model: rep.Model, Partition: rep.Partition})
	if err != nil {
		return nil, err
	}
	in, err := tracefs.Open(tracefs.Options{Root: o.Tracefs, HRTimers: o.HRTimers || rep.PreemptRT})
	if err != nil {
		return nil, err
	}
	pipe, err := in.Pipe()
	if err == nil {
		err = in.Start()
	}
	if err != nil {
		in.Close()
		return nil, err
	}
	return &stream{
		reader:  ftrace.NewLiveReader(pipe),
		watcher: w,
		live:    true,
		lost: func() uint64 {
			n, _ := in.Lost()
			return n
		},
		closer: closeAll{pipe, in},
	}, nil
}

// closeAll closes each in order and returns the first error.
type closeAll []io.Closer

func (cs closeAll) Close() error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
