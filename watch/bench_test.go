package watch

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/tmigr/tmigr/explain"
	"github.com/tmigr/tmigr/ftrace"
)

// benchFile is a recording of 18 CPUs with isolated and nohz_full CPUs
// that pull: the periods that explain a foreign timer are part of the
// cost.
const benchFile = "../testdata/traces/vm18-2node-mixed.txt"

// BenchmarkStream is the cost per event of what tmigr top and tmigr
// exporter do with a live stream, side by side with the parsing alone (the
// floor) and with explaining the whole recording at once (tmigr explain):
// ns/event, and the share of one CPU at 10,000 events a second
// (cpu%@10k/s).
func BenchmarkStream(b *testing.B) {
	text, err := os.ReadFile(benchFile)
	if err != nil {
		b.Fatal(err)
	}
	events := countEvents(b, text)
	report := func(b *testing.B) {
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(events)
		b.ReportMetric(ns, "ns/event")
		b.ReportMetric(ns*10000/1e9*100, "cpu%@10k/s")
	}
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			rd := ftrace.NewLiveReader(bytes.NewReader(text))
			for {
				if _, err := rd.Next(); err == io.EOF {
					break
				} else if err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b)
	})
	b.Run("watch", func(b *testing.B) {
		for b.Loop() {
			f := &Follow{Reader: ftrace.NewLiveReader(bytes.NewReader(text)), Period: 1e9,
				OnPeriod: func(Period) bool { return true }}
			if err := f.Run(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("explain", func(b *testing.B) {
		for b.Loop() {
			if _, err := explain.ExplainText(bytes.NewReader(text), explain.Options{}); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
}

func countEvents(b *testing.B, text []byte) int {
	rd := ftrace.NewLiveReader(bytes.NewReader(text))
	n := 0
	for {
		if _, err := rd.Next(); err == io.EOF {
			return n
		} else if err != nil {
			b.Fatal(err)
		}
		n++
	}
}
