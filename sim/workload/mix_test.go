package workload

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/kernel/cmdline"
)

// The derivation of the default housekeeping mix from the kernel
// recordings (the package doc's "The housekeeping mix, from recordings").
// TestMixFromRecordings re-derives it: go test ./sim/workload -run
// MixFromRecordings -v prints the table.

// mixRecordings are the recordings the mix is derived from: idle guests
// with isolated (isolcpus=) or nohz_full CPUs, Linux 6.12 to 7.3.
var mixRecordings = []string{
	"vm40-1node-isol-busy.txt",
	"vm40-1node-isol-busy-6.19.txt",
	"vm16-2node-isol-busy-sleepers.txt",
	"vm16-2node-isol-busy-sleepers-7.3.txt",
	"vm16-2node-isol-busy.txt",
	"vm24-1node-nohzfull-busy-sleepers.txt",
	"vm12-1node-nohzfull-busy.txt",
}

// cpuKind is how a recording's machine line classes a CPU.
type cpuKind int

const (
	kindHK cpuKind = iota
	kindIsolated
	kindNohzFull
)

var kindNames = [...]string{"housekeeping", "isolated", "nohz_full"}

// armStats is what one recording shows of the timers armed on each kind of
// CPU: per function, the global (neither pinned nor deferrable) arms, per
// second of recording and per CPU of the kind; and the CPUs each function
// was armed or expired on.
type armStats struct {
	file     string
	seconds  float64
	cpus     [3]int
	global   map[string][3]int       // function -> arms on CPUs of each kind
	armedOn  map[string]cpumask.Mask // global arms: the CPUs
	expired  map[string][3]int       // function -> expiries on CPUs of each kind (any timer)
	hkArmers cpumask.Mask            // housekeeping CPUs that armed a global timer
}

func readArms(t *testing.T, file string) armStats {
	t.Helper()
	f, err := os.Open(filepath.Join("../../testdata/traces", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := ftrace.NewReader(f)
	st := armStats{file: file, global: map[string][3]int{}, armedOn: map[string]cpumask.Mask{}, expired: map[string][3]int{}}
	var kind []cpuKind
	var first, last int64
	n := 0
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if kind == nil {
			m := rd.Header().Machine
			if m == nil {
				t.Fatalf("%s: no machine line", file)
			}
			iso, err := cmdline.ParseIsolation(m.Cmdline, m.CPUs)
			if err != nil {
				t.Fatal(err)
			}
			kind = make([]cpuKind, m.CPUs)
			for c := range kind {
				switch {
				case iso.NohzFull.Test(c):
					kind[c] = kindNohzFull
				case iso.Domain.Test(c):
					kind[c] = kindIsolated
				}
				st.cpus[kind[c]]++
			}
		}
		if n == 0 {
			first = ev.TS
		}
		n++
		last = ev.TS
		switch p := ev.Data.(type) {
		case ftrace.TimerStart:
			if p.Flags&(ftrace.TimerPinned|ftrace.TimerDeferrable) != 0 || p.CPU >= len(kind) {
				continue
			}
			k := st.global[p.Function]
			k[kind[p.CPU]]++
			st.global[p.Function] = k
			m := st.armedOn[p.Function]
			m.Set(p.CPU)
			st.armedOn[p.Function] = m
			if kind[p.CPU] == kindHK {
				st.hkArmers.Set(p.CPU)
			}
		case ftrace.TimerExpireEntry:
			if ev.CPU < len(kind) {
				k := st.expired[p.Function]
				k[kind[ev.CPU]]++
				st.expired[p.Function] = k
			}
		}
	}
	st.seconds = float64(last-first) / 1e9
	return st
}

// rate is arms per second per CPU of the kind.
func (s *armStats) rate(k cpuKind) float64 {
	if s.cpus[k] == 0 {
		return 0
	}
	total := 0
	for _, v := range s.global {
		total += v[k]
	}
	return float64(total) / s.seconds / float64(s.cpus[k])
}

func median(v []float64) float64 {
	sort.Float64s(v)
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// TestMixFromRecordings derives the global timers of the mix and holds the
// defaults against them: every housekeeping CPU of the isolcpus recordings
// arms global timers (process_timeout of kernel threads), at the rate
// kthread's period gives; the nohz_full CPUs arm some too (kcompactd's
// process_timeout, RCU's deferred nocb wake-ups), at the rate of
// nohz_timers; and the functions the package doc names are those seen.
func TestMixFromRecordings(t *testing.T) {
	var hkRates, nohzRates []float64
	var b strings.Builder
	fmt.Fprintf(&b, "%-40s %6s %5s %5s %5s  %s\n", "recording", "s", "hk", "iso", "nohz", "global arms/s per CPU: hk iso nohz; functions")
	for _, f := range mixRecordings {
		s := readArms(t, f)
		var fns []string
		for fn := range s.global {
			fns = append(fns, fn)
		}
		sort.Strings(fns)
		fmt.Fprintf(&b, "%-40s %6.2f %5d %5d %5d  %.2f %.2f %.2f; %s\n", f, s.seconds, s.cpus[0], s.cpus[1], s.cpus[2],
			s.rate(kindHK), s.rate(kindIsolated), s.rate(kindNohzFull), strings.Join(fns, ", "))
		if s.cpus[kindNohzFull] > 0 {
			nohzRates = append(nohzRates, s.rate(kindNohzFull))
		} else {
			hkRates = append(hkRates, s.rate(kindHK))
			// Every housekeeping CPU of an isolcpus machine arms global
			// timers: the mix's PerCPU class stands for them.
			if got := s.hkArmers.Weight(); got != s.cpus[kindHK] {
				t.Errorf("%s: %d of %d housekeeping CPUs armed a global timer (%s)", f, got, s.cpus[kindHK], s.hkArmers)
			}
		}
		if s.global["process_timeout"][kindHK]+s.global["process_timeout"][kindNohzFull] == 0 {
			t.Errorf("%s: no process_timeout armed: the mix's kthread classes stand for it", f)
		}
	}
	hk, nohz := median(hkRates), median(nohzRates)
	fmt.Fprintf(&b, "median global arms/s: per housekeeping CPU %.2f (isolcpus recordings), per nohz_full CPU %.2f\n", hk, nohz)
	t.Log("\n" + b.String())
	mix := map[string]Class{}
	for _, c := range DefaultMix() {
		mix[c.Name] = c
	}
	near := func(name string, period time.Duration, perSecond float64) {
		t.Helper()
		got := float64(time.Second) / float64(period)
		if got < perSecond*0.75 || got > perSecond*1.33 {
			t.Errorf("hk.%s: %.2f arms/s per CPU (period %v), the recordings' median is %.2f/s", name, got, period, perSecond)
		}
	}
	near("kthread", mix["kthread"].Period, hk)
	near("nohz_timers", mix["nohz_timers"].Period, nohz)
	if c := mix["kthread"]; c.Scope != PerCPU || c.Pinned || c.Deferrable || c.DelayedWork {
		t.Errorf("hk.kthread must be a global timer on every housekeeping CPU: %+v", c)
	}
	if c := mix["nohz_timers"]; c.Scope != PerNohzFull || c.Pinned || c.Deferrable || c.DelayedWork {
		t.Errorf("hk.nohz_timers must be a global timer on every nohz_full CPU: %+v", c)
	}
}
