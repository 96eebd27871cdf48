package bench

import (
	"testing"
	"time"

	"github.com/tmigr/tmigr"
)

// BenchmarkRuntimeWakes isolates what a worker's wake-up costs the
// goroutine that re-arms timers: BenchmarkAPI's tmigr op (Reset of one of
// apiTimers precise timers) with no short timeouts, so nothing it arms
// fires, while one self-re-arming hrtimer per worker wakes that worker
// every period and does nothing else (period 0: none). The difference
// between the rows is the price of the wake-ups alone, on the CPUs the
// benchmark shares with the workers.
func BenchmarkRuntimeWakes(b *testing.B) {
	w := apiLoad()
	for _, idle := range []tmigr.IdleMode{tmigr.HaltPoll, tmigr.Halt} {
		for _, period := range []time.Duration{0, 125 * time.Microsecond} {
			b.Run(idle.String()+"/"+period.String(), func(b *testing.B) {
				rt, err := tmigr.Start(tmigr.Config{Idle: idle, SpareProcs: true})
				if err != nil {
					b.Fatal(err)
				}
				defer rt.Close()
				ts := make([]*tmigr.Timer, apiTimers)
				for i := range ts {
					ts[i] = rt.AfterFunc(apiInitial(i), count)
				}
				var tickers []*tmigr.Timer
				if period > 0 {
					for _, s := range rt.Stats() {
						var t *tmigr.Timer
						t, err = rt.HRAfterFunc(s.CPU, period, func() { t.Reset(period) }, tmigr.Hard)
						if err != nil {
							b.Fatal(err)
						}
						tickers = append(tickers, t)
					}
				}
				st0 := rt.Stats()
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					k := i & (apiTable - 1)
					d := w.dur[k]
					if d < apiLongMin {
						d += apiLongMin // no short timeouts: nothing re-armed here fires
					}
					ts[int(w.idx[k])].Reset(d)
				}
				b.StopTimer()
				var wakeups uint64
				for i, s := range rt.Stats() {
					wakeups += s.Wakeups - st0[i].Wakeups
				}
				b.ReportMetric(float64(wakeups)/float64(b.N), "wakeups/op")
				for _, t := range tickers {
					t.Stop()
				}
				for _, t := range ts {
					t.Stop()
				}
			})
		}
	}
}
