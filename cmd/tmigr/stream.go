package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/tmigr/tmigr/ftrace"
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

// openStream opens the recording at input, or this machine live when input
// is "".
func openStream(ctx context.Context, input string, hrtimers bool) (*stream, error) {
	if input != "" {
		rd, c, err := ftrace.Open(input)
		if err != nil {
			return nil, err
		}
		return &stream{reader: rd, closer: c}, nil
	}
	return openLive(ctx, hrtimers)
}

// openLive opens this machine's events live.
func openLive(ctx context.Context, hrtimers bool) (*stream, error) {
	return nil, errors.New("live tracing is not available yet")
}
