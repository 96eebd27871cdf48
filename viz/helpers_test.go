package viz

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/sim"
	"github.com/tmigr/tmigr/sim/workload"
)

// recordings are the kernel recordings the tests picture.
var recordings = []string{
	"vm16-2node-isol-busy-sleepers.txt", // isolated CPU 1 runs CPU 0's timers (6.12)
	"vm40-1node-isol-busy.txt",          // 38 busy isolated CPUs that print nothing
	"vm16-2node-mixed.txt",              // 175 remote expiries
	"vm64-4node-mixed.txt",              // three levels
	"vm8-1node-rt-fifo-other-sleepers.txt",
	"cpu0-busy-3s.txt", // no per-CPU tmigr events at all
}

func tracePath(name string) string { return filepath.Join("..", "testdata", "traces", name) }

func readTrace(t testing.TB, name string) (ftrace.Header, []ftrace.Event) {
	t.Helper()
	f, err := os.Open(tracePath(name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// As tmigr reads it: a recording of trace_pipe may hold an event
	// that came late, which this puts in its place.
	r, _, err := ftrace.OpenReader(f, name)
	if err != nil {
		t.Fatal(err)
	}
	var evs []ftrace.Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		evs = append(evs, ev)
	}
	return r.Header(), evs
}

// simRun is a simulated run with its trace: 16 CPUs on 2 nodes, CPUs 1-7
// and 9-15 isolated and running oslat, under the pull policy of 6.9-6.18,
// so that the isolated migrators run the housekeeping CPUs' timers.
type simRun struct {
	cfg   sim.Config
	res   *sim.Result
	trace []byte
}

var (
	simOnce sync.Once
	simOut  simRun
	simErr  error
)

func simulated(t testing.TB) simRun {
	t.Helper()
	simOnce.Do(func() { simOut, simErr = runSim(cpu.Pull, 16, 2, "1-7,9-15") })
	if simErr != nil {
		t.Fatal(simErr)
	}
	return simOut
}

func runSim(policy cpu.Policy, cpus, nodes int, isolated string) (simRun, error) {
	p, err := sim.PlatformByName("server")
	if err != nil {
		return simRun{}, err
	}
	var trace bytes.Buffer
	cfg := sim.Config{CPUs: cpus, Nodes: nodes, HZ: 250, Seed: 3, Policy: policy, Platform: "server", Costs: p.Costs,
		Duration: time.Second, Warmup: 500 * time.Millisecond, Trace: &trace}
	if cfg.Isolcpus, err = cpumask.ParseFor(isolated, cpus); err != nil {
		return simRun{}, err
	}
	if err := cfg.Validate(); err != nil {
		return simRun{}, err
	}
	wopts := workload.DefaultOptions()
	w, err := workload.Parse("oslat:"+isolated, &cfg, &wopts)
	if err != nil {
		return simRun{}, err
	}
	res, err := sim.Run(cfg, workload.NewHousekeeping(), w)
	if err != nil {
		return simRun{}, err
	}
	return simRun{cfg: cfg, res: res, trace: trace.Bytes()}, nil
}
