package replay_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tmigr/tmigr/explain"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/kernel"
	"github.com/tmigr/tmigr/replay"
	"github.com/tmigr/tmigr/sim"
	"github.com/tmigr/tmigr/sim/workload"
)

// The stream benchmarks read, replay and explain a recording the
// simulator makes: 16 CPUs on 2 nodes under cyclictest with stress for
// half a second (about 250,000 events), the shape of issue 25's 64-CPU
// recording at a quarter of its width. Each reports events/s; B/op is
// what reading and checking the recording allocates in all.

var simTrace struct {
	once   sync.Once
	dir    string
	path   string
	events int
	err    error
}

// simRecording writes the simulator's recording once for every benchmark
// of the run.
func simRecording(b *testing.B) (string, int) {
	b.Helper()
	simTrace.once.Do(func() {
		km := kernel.For(kernel.Newest)
		cfg := sim.Config{CPUs: 16, Nodes: 2, HZ: 250, Policy: km.Policy(true), ImbalancedNUMA: km.ImbalancedNUMA(),
			Duration: 500 * time.Millisecond, Seed: 1}
		w, err := workload.Parse("cyclictest:stress=16", &cfg, new(workload.DefaultOptions()))
		if err != nil {
			simTrace.err = err
			return
		}
		var buf bytes.Buffer
		cfg.Trace = &buf
		if _, err := sim.Run(cfg, workload.NewHousekeeping(), w); err != nil {
			simTrace.err = err
			return
		}
		if simTrace.dir, err = os.MkdirTemp("", "tmigr-stream-bench-"); err != nil {
			simTrace.err = err
			return
		}
		simTrace.path = filepath.Join(simTrace.dir, "sim.txt")
		if simTrace.err = os.WriteFile(simTrace.path, buf.Bytes(), 0o644); simTrace.err != nil {
			return
		}
		r, c, err := ftrace.Open(simTrace.path)
		if err != nil {
			simTrace.err = err
			return
		}
		defer c.Close()
		evs, err := ftrace.ReadAll(r)
		simTrace.events, simTrace.err = len(evs), err
	})
	if simTrace.err != nil {
		b.Fatal(simTrace.err)
	}
	return simTrace.path, simTrace.events
}

func TestMain(m *testing.M) {
	code := m.Run()
	if simTrace.dir != "" {
		os.RemoveAll(simTrace.dir)
	}
	os.Exit(code)
}

func reportRate(b *testing.B, path string, events int) {
	if st, err := os.Stat(path); err == nil {
		b.SetBytes(st.Size())
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkStreamRead reads the recording as a stream, event by event, as
// top and the exporter do.
func BenchmarkStreamRead(b *testing.B) {
	path, events := simRecording(b)
	b.ReportAllocs()
	for b.Loop() {
		r, c, err := ftrace.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			_, err := r.Next()
			if err != nil {
				break
			}
			n++
		}
		c.Close()
		if n != events {
			b.Fatalf("%d events, want %d", n, events)
		}
	}
	reportRate(b, path, events)
}

// BenchmarkStreamReplay is tmigr replay of the recording, every check:
// read whole and checked (whole, as ReadFile and Run), and read as a
// stream and checked a quarter of it at a time, with margins of the
// default's proportion to the segment (segments, as RunFile checks a
// recording longer than its segment), side by side.
func BenchmarkStreamReplay(b *testing.B) {
	path, events := simRecording(b)
	o := replay.Options{Wheel: true, Tmigr: true, Hrtimer: true, Placement: true}
	check := func(b *testing.B, res *replay.Result, err error) {
		if err != nil {
			b.Fatal(err)
		}
		if res.Tmigr == nil || res.Tmigr.Checked == 0 {
			b.Fatal("no tmigr decision checked")
		}
	}
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			t, err := replay.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			res, err := replay.Run(t, o)
			check(b, res, err)
		}
		reportRate(b, path, events)
	})
	b.Run("segments", func(b *testing.B) {
		o := o
		o.Segment = events / 4
		o.Margin = o.Segment * replay.DefaultMargin / replay.DefaultSegment
		b.ReportAllocs()
		for b.Loop() {
			res, err := replay.RunFile(path, o)
			check(b, res, err)
			if res.Segmented == nil || res.Segmented.Segments != 4 {
				b.Fatalf("checked in %+v, want 4 segments", res.Segmented)
			}
		}
		reportRate(b, path, events)
	})
}

// BenchmarkStreamExplain is tmigr explain of the recording, in one pass.
func BenchmarkStreamExplain(b *testing.B) {
	path, events := simRecording(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := explain.ExplainFile(path, explain.Options{}); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, path, events)
}
