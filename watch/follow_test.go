package watch

import (
	"bufio"
	"context"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tmigr/tmigr/ftrace"
)

// TestLiveFollow feeds a recording through a pipe, as trace_pipe gives it,
// to a live Follow with its Lock shared with a concurrent reader (an
// exporter's scrape): the totals at the end are those of the recording
// read whole, and cancelling the context ends the stream (run with -race).
func TestLiveFollow(t *testing.T) {
	const path = "../testdata/traces/vm40-1node-isol-busy.txt"
	_, whole := follow(t, path, 0)
	want, wantEvents, _ := whole.Totals()

	text, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer text.Close()
	pr, pw := io.Pipe()
	// The machine line goes first, then the events a line at a time.
	lines := bufio.NewScanner(text)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	lines.Scan()
	w, err := ForRecording(ftrace.Header{Machine: mustMachine(t, lines.Text())})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for lines.Scan() {
			if _, err := io.WriteString(pw, lines.Text()+"\n"); err != nil {
				return
			}
		}
		// Keep the pipe open, as trace_pipe stays: the test cancels.
	}()
	var mu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &Follow{Watcher: w, Reader: ftrace.NewLiveReader(pr), Live: true, Period: 5 * time.Millisecond, Lock: &mu,
		OnPeriod: func(Period) bool { return true }}
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	// Scrape while it runs, until every event arrived.
	for {
		mu.Lock()
		_, events, _ := w.Totals()
		mu.Unlock()
		if events == wantEvents {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	pw.CloseWithError(io.ErrClosedPipe) // as the caller closes trace_pipe
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	got, _, _ := w.Totals()
	for c := range want {
		if got[c] != want[c] {
			t.Errorf("CPU %d: live %+v, whole %+v", c, got[c], want[c])
		}
	}
}

func mustMachine(t *testing.T, line string) *ftrace.Machine {
	t.Helper()
	const prefix = "# machine: "
	if len(line) < len(prefix) || line[:len(prefix)] != prefix {
		t.Fatalf("first line %q is not a machine line", line)
	}
	m, err := ftrace.ParseMachine(line[len(prefix):])
	if err != nil {
		t.Fatal(err)
	}
	return &m
}
