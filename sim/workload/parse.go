package workload

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/sim"
)

// Options are the workloads' tunable inputs.
type Options struct {
	Kernbench KernbenchParams
	// PanicSampleHz is the host profiler's sampling rate.
	PanicSampleHz float64
}

// DefaultOptions returns the defaults.
func DefaultOptions() Options {
	return Options{Kernbench: DefaultKernbench(), PanicSampleHz: 4000}
}

// Register adds the options to ps.
func (o *Options) Register(ps *sim.Params) {
	o.Kernbench.Register(ps)
	ps.Float("panic.sample_hz", "host perf sampling rate that turns the panicked CPU's time into samples (perf's default 4000 Hz)", &o.PanicSampleHz)
}

// Usage describes the workload syntax.
const Usage = `oslat[:LIST]        oslat on the CPUs of LIST (default: the isolated CPUs, or all CPUs)
cyclictest[:OPTS]   cyclictest -m -S -p99 -i1000 -h400 on every CPU; OPTS, comma-separated:
                    stress=N (SCHED_OTHER threads sleeping 0-1 ms), cpus=LIST, interval=US,
                    prio=P, hist=N; LIST may hold commas: cyclictest:cpus=1,3,stress=2
kernbench:JOBS      make -jJOBS of a kernel (compile jobs, then a serial link)
idle                nothing but the housekeeping timers
panic:CPU[:MODE]    CPU panics when the measurement starts; MODE busy (the kernel's
                    mdelay loop, default) or halt (the 2025 RFC)`

// Parse reads a workload specification (see Usage) for the machine of
// cfg.
func Parse(spec string, cfg *sim.Config, o *Options) (sim.Workload, error) {
	name, arg, hasArg := strings.Cut(spec, ":")
	switch name {
	case "oslat":
		list := arg
		var cpus cpumask.Mask
		if !hasArg {
			cpus = cfg.Isolcpus.Or(cfg.NohzFull).Or(cfg.Partition)
			if cpus.Empty() {
				cpus = cpumask.Range(0, cfg.CPUs-1)
			}
			list = cpus.String()
		} else {
			var err error
			if cpus, err = cpumask.ParseFor(arg, cfg.CPUs); err != nil {
				return nil, fmt.Errorf("workload %q: %v", spec, err)
			}
			if cpus.Empty() {
				return nil, fmt.Errorf("workload %q: the CPU list selects no CPU (write oslat alone for the default: the isolated CPUs, or all)", spec)
			}
		}
		return NewOslat(cpus, list), nil
	case "cyclictest":
		c := NewCyclictest(cpumask.Range(0, cfg.CPUs-1), 0)
		if hasArg {
			opts, err := splitOptions(arg)
			if err != nil {
				return nil, fmt.Errorf("workload %q: %v", spec, err)
			}
			for _, kv := range opts {
				k, v := kv[0], kv[1]
				if k == "cpus" {
					m, err := cpumask.ParseFor(v, cfg.CPUs)
					if err != nil {
						return nil, fmt.Errorf("workload %q: cpus: %v", spec, err)
					}
					if m.Empty() {
						return nil, fmt.Errorf("workload %q: cpus=%s selects no CPU", spec, v)
					}
					c.CPUs = m
					continue
				}
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("workload %q: %s=%q is not a non-negative integer", spec, k, v)
				}
				switch k {
				case "stress":
					c.Stress = n
				case "interval":
					if n == 0 {
						return nil, fmt.Errorf("workload %q: interval must be positive", spec)
					}
					c.IntervalUS = int64(n)
				case "prio":
					if n < 1 || n > 99 {
						return nil, fmt.Errorf("workload %q: prio %d outside 1-99", spec, n)
					}
					c.Prio = n
				case "hist":
					c.Hist = n
				default:
					return nil, fmt.Errorf("workload %q: unknown option %q (want stress, cpus, interval, prio, hist)", spec, k)
				}
			}
		}
		return c, nil
	case "kernbench":
		n, err := strconv.Atoi(arg)
		if !hasArg || err != nil || n < 1 {
			return nil, fmt.Errorf("workload %q: want kernbench:JOBS with JOBS >= 1", spec)
		}
		return NewKernbench(n, o.Kernbench), nil
	case "idle":
		if hasArg {
			return nil, fmt.Errorf("workload %q: idle takes no argument", spec)
		}
		return Idle{}, nil
	case "panic":
		cpuStr, mode, _ := strings.Cut(arg, ":")
		n, err := strconv.Atoi(cpuStr)
		if !hasArg || err != nil {
			return nil, fmt.Errorf("workload %q: want panic:CPU[:busy|halt]", spec)
		}
		if n < 0 || n >= cfg.CPUs {
			return nil, fmt.Errorf("workload %q: CPU %d out of range 0-%d", spec, n, cfg.CPUs-1)
		}
		p := &Panic{CPU: n, SampleHz: o.PanicSampleHz}
		switch mode {
		case "", "busy":
		case "halt":
			p.Halt = true
		default:
			return nil, fmt.Errorf("workload %q: unknown mode %q (want busy or halt)", spec, mode)
		}
		return p, nil
	}
	return nil, fmt.Errorf("unknown workload %q (want oslat, cyclictest, kernbench, idle or panic)", spec)
}

// splitOptions splits "k=v,k=v" into pairs. A cpulist value may itself
// hold commas ("cpus=1,3,5,stress=2"): a piece without '=' after a cpus=
// option continues its list, since no cpulist element holds an '='. Every
// other piece must be KEY=VALUE.
func splitOptions(s string) ([][2]string, error) {
	if s == "" {
		return nil, errors.New("no option after ':' (write the workload alone for its defaults)")
	}
	var out [][2]string
	for _, piece := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(piece, "=")
		if !ok {
			if n := len(out); n > 0 && out[n-1][0] == "cpus" && piece != "" {
				out[n-1][1] += "," + piece
				continue
			}
			return nil, fmt.Errorf("option %q is not KEY=VALUE", piece)
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// Busy returns the CPUs a workload keeps running a task that never
// sleeps: oslat's spinning threads, the busy loops of Loads, a panic that
// busy-waits. Such a CPU never goes idle, unless it is nohz_full and its
// tick stops; the CPUs of the other workloads (cyclictest, kernbench, the
// sleepers) come and go. A workload this package does not know keeps none.
func Busy(w sim.Workload) cpumask.Mask {
	switch w := w.(type) {
	case *Oslat:
		return w.CPUs
	case *Loads:
		return w.Busy
	case *Panic:
		if !w.Halt {
			return cpumask.Of(w.CPU)
		}
	}
	return cpumask.Mask{}
}
