package tracefs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/cpumask"
)

// fake is a directory laid out like tracefs. Creating an instance is a
// mkdir that also lays out the instance's files, as tracefs does.
type fake struct {
	root   string
	groups map[string][]string // events/GROUP/EVENT
	cpus   int
	stats  string // each CPU's per_cpu/cpuN/stats
	// omit is an instance file the fake lacks, to make a step fail.
	omit string
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := &fake{root: t.TempDir(), cpus: 2, groups: map[string][]string{
		"timer":           {"timer_init", "timer_start", "timer_expire_entry", "timer_expire_exit", "timer_cancel", "timer_base_idle", "tick_stop", "hrtimer_setup", "hrtimer_start", "itimer_state"},
		"timer_migration": {"tmigr_cpu_idle", "tmigr_cpu_active"},
	}, stats: "entries: 0\noverrun: 0\ncommit overrun: 0\nbytes: 0\noldest event ts:     0.000000\nnow ts: 13746.997496\ndropped events: 0\nread events: 0\n"}
	must(t, os.MkdirAll(filepath.Join(f.root, "instances"), 0o755))
	f.layEvents(t, f.root)
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fake) layEvents(t *testing.T, dir string) {
	for g, evs := range f.groups {
		for _, e := range evs {
			must(t, os.MkdirAll(filepath.Join(dir, "events", g, e), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "events", g, e, "enable"), []byte("0\n"), 0o644))
		}
		must(t, os.WriteFile(filepath.Join(dir, "events", g, "enable"), []byte("0\n"), 0o644))
	}
}

func (f *fake) options(t *testing.T, o Options) Options {
	o.Root = f.root
	o.mkdir = func(dir string) error {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		files := map[string]string{"tracing_on": "1\n", "trace_clock": "[local] global counter\n", "buffer_size_kb": "7\n",
			"tracing_cpumask": "3\n", "trace_pipe": ""}
		for c := 0; c < f.cpus; c++ {
			files[fmt.Sprintf("per_cpu/cpu%d/stats", c)] = f.stats
		}
		for name, v := range files {
			if name == f.omit {
				continue
			}
			must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644))
		}
		f.layEvents(t, dir)
		return nil
	}
	o.rmdir = os.RemoveAll
	return o
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, err)
	return strings.TrimSpace(string(b))
}

func instances(t *testing.T, root string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(root, "instances"))
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestOpenSetsUpAndCloseRemoves(t *testing.T) {
	f := newFake(t)
	in, err := Open(f.options(t, Options{CPUs: cpumask.MustParse("1,33")}))
	if err != nil {
		t.Fatal(err)
	}
	dir := in.Dir()
	if want := filepath.Join(f.root, "instances", fmt.Sprintf("tmigr-%d", os.Getpid())); !strings.HasPrefix(dir, want) {
		t.Errorf("instance %s, want %s", dir, want)
	}
	for file, want := range map[string]string{
		"tracing_on": "0", "trace_clock": "global", "buffer_size_kb": "2048", "tracing_cpumask": "00000002,00000002",
		"events/timer/timer_start/enable": "1", "events/timer/timer_base_idle/enable": "1", "events/timer/tick_stop/enable": "1",
		"events/timer_migration/enable": "1", "events/timer/hrtimer_start/enable": "0", "events/timer/itimer_state/enable": "0",
	} {
		if got := read(t, filepath.Join(dir, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	if got := strings.Join(in.Events(), " "); got != "timer/timer_init timer/timer_start timer/timer_expire_entry timer/timer_expire_exit timer/timer_cancel timer/timer_base_idle timer/tick_stop timer_migration" {
		t.Errorf("events %s", got)
	}
	if len(in.Notes()) != 0 {
		t.Errorf("notes %q", in.Notes())
	}
	// The top level is left alone.
	if got := read(t, filepath.Join(f.root, "events/timer/timer_start/enable")); got != "0" {
		t.Errorf("the top-level timer_start enable became %q", got)
	}
	must(t, in.Start())
	if got := read(t, filepath.Join(dir, "tracing_on")); got != "1" {
		t.Errorf("tracing_on after Start: %q", got)
	}
	p, err := in.Pipe()
	must(t, err)
	must(t, in.Close())
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the instance is still there after Close: %v", err)
	}
	if _, err := p.Read(make([]byte, 1)); err == nil {
		t.Errorf("the pipe reads after Close")
	}
	if err := in.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := in.Start(); err == nil {
		t.Errorf("Start after Close succeeded")
	}
	if got := instances(t, f.root); len(got) != 0 {
		t.Errorf("instances left: %q", got)
	}
}

func TestOpenHRTimersAndBuffer(t *testing.T) {
	f := newFake(t)
	in, err := Open(f.options(t, Options{HRTimers: true, BufferKB: 512}))
	must(t, err)
	defer in.Close()
	for file, want := range map[string]string{
		"buffer_size_kb": "512", "tracing_cpumask": "3", // untouched: all CPUs
		"events/timer/hrtimer_start/enable": "1", "events/timer/hrtimer_setup/enable": "1", "events/timer/itimer_state/enable": "0",
	} {
		if got := read(t, filepath.Join(in.Dir(), file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	if in.BufferKB() != 512 {
		t.Errorf("BufferKB %d", in.BufferKB())
	}
	// A second instance of the same process has a name of its own.
	in2, err := Open(f.options(t, Options{}))
	must(t, err)
	if in2.Dir() == in.Dir() {
		t.Errorf("two instances share %s", in.Dir())
	}
	must(t, in2.Close())
}

func TestOpenWithoutHierarchyEvents(t *testing.T) {
	f := newFake(t)
	delete(f.groups, "timer_migration")
	f.groups["timer"] = []string{"timer_init", "timer_start", "timer_expire_entry", "timer_expire_exit", "timer_cancel"}
	f.root = t.TempDir()
	must(t, os.MkdirAll(filepath.Join(f.root, "instances"), 0o755))
	f.layEvents(t, f.root)
	in, err := Open(f.options(t, Options{}))
	must(t, err)
	defer in.Close()
	if len(in.Notes()) != 1 || !strings.Contains(in.Notes()[0], "no timer_migration events") || !strings.Contains(in.Notes()[0], release()) {
		t.Errorf("notes %q: want one naming the missing group and the release", in.Notes())
	}
	if got := strings.Join(in.Events(), " "); strings.Contains(got, "timer_migration") || strings.Contains(got, "base_idle") || !strings.Contains(got, "timer/timer_start") {
		t.Errorf("events %s", got)
	}
	if _, err := Open(f.options(t, Options{HRTimers: true})); err == nil || !strings.Contains(err.Error(), "no hrtimer trace events") {
		t.Errorf("--hrtimers without hrtimer events: %v", err)
	}
	if got := instances(t, f.root); len(got) != 1 {
		t.Errorf("a failed Open left instances: %q", got)
	}
}

func TestNoHierarchyNote(t *testing.T) {
	if n := noHierarchy("6.8.12"); !strings.Contains(n, "before 6.9 there is no timer migration hierarchy") || !strings.Contains(n, "get_nohz_timer_target") {
		t.Errorf("6.8: %s", n)
	}
	if n := noHierarchy("6.12.1"); !strings.Contains(n, "CONFIG_NO_HZ_COMMON") {
		t.Errorf("6.12: %s", n)
	}
}

func TestOpenErrors(t *testing.T) {
	f := newFake(t)
	for _, c := range []struct {
		name string
		prep func(o *Options)
		want string
	}{
		{"no root", func(o *Options) { o.Root = filepath.Join(f.root, "nothing") }, "no tracefs at"},
		{"root is a file", func(o *Options) { o.Root = filepath.Join(f.root, "events/timer/enable") }, "not a directory"},
		{"no instances", func(o *Options) { o.Root = filepath.Join(f.root, "events") }, "no instances directory"},
		{"no timer events", func(o *Options) {
			r := t.TempDir()
			must(t, os.Mkdir(filepath.Join(r, "instances"), 0o755))
			o.Root = r
		}, "has no timer trace events"},
		{"negative buffer", func(o *Options) { o.BufferKB = -1 }, "buffer size -1"},
		{"mkdir refused", func(o *Options) {
			o.mkdir = func(string) error { return &os.PathError{Op: "mkdir", Path: "x", Err: os.ErrPermission} }
		}, "needs root"},
	} {
		o := f.options(t, Options{})
		c.prep(&o)
		in, err := Open(o)
		if err == nil {
			in.Close()
			t.Errorf("%s: Open succeeded", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if err := errors.Unwrap(errors.Unwrap(fmt.Errorf("%w", ErrPermission))); err != nil {
		t.Errorf("ErrPermission wraps %v", err)
	}
	// A step that fails leaves no instance behind.
	for _, omit := range []string{"trace_clock", "buffer_size_kb", "tracing_on"} {
		f.omit = omit
		_, err := Open(f.options(t, Options{}))
		if err == nil || !strings.Contains(err.Error(), omit) {
			t.Errorf("without %s: %v", omit, err)
		}
		if got := instances(t, f.root); len(got) != 0 {
			t.Errorf("without %s: instances left: %q", omit, got)
		}
	}
}

func TestOpenNeedsWriteAccess(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may write anywhere: the check cannot fail")
	}
	f := newFake(t)
	must(t, os.Chmod(filepath.Join(f.root, "instances"), 0o555))
	_, err := Open(f.options(t, Options{}))
	if !errors.Is(err, ErrPermission) || !strings.Contains(err.Error(), "needs root") {
		t.Errorf("Open without write access: %v", err)
	}
}

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	must(t, cmd.Run())
	return cmd.Process.Pid
}

func TestSweep(t *testing.T) {
	f := newFake(t)
	dead := deadPID(t)
	keep := []string{fmt.Sprintf("tmigr-%d", os.Getpid()), "tmigr-1", "rtla-5", "tmigr-abc", "tmigr-0", fmt.Sprintf("tmigr-%d-x", dead), "other"}
	gone := []string{fmt.Sprintf("tmigr-%d", dead), fmt.Sprintf("tmigr-%d-3", dead)}
	for _, n := range append(keep, gone...) {
		must(t, os.MkdirAll(filepath.Join(f.root, "instances", n, "events"), 0o755))
	}
	must(t, sweep(f.root, os.RemoveAll))
	got := strings.Join(instances(t, f.root), " ")
	for _, n := range keep {
		if !strings.Contains(" "+got+" ", " "+n+" ") {
			t.Errorf("Sweep removed %s (left %s)", n, got)
		}
	}
	for _, n := range gone {
		if strings.Contains(" "+got+" ", " "+n+" ") {
			t.Errorf("Sweep left the stale %s", n)
		}
	}
	// Open sweeps too, and reclaims a stale instance of its own pid (left
	// by a dead process that had it).
	stale := fmt.Sprintf("tmigr-%d", dead)
	must(t, os.MkdirAll(filepath.Join(f.root, "instances", stale), 0o755))
	mine := filepath.Join(f.root, "instances", instanceName(os.Getpid(), seq.Load()+1))
	must(t, os.MkdirAll(filepath.Join(mine, "stale-file"), 0o755))
	in, err := Open(f.options(t, Options{}))
	must(t, err)
	if in.Dir() != mine {
		t.Errorf("instance %s, want %s", in.Dir(), mine)
	}
	if _, err := os.Stat(filepath.Join(mine, "stale-file")); err == nil {
		t.Errorf("Open kept the stale instance's files")
	}
	in.Close()
	for _, n := range instances(t, f.root) {
		if n == stale || filepath.Join(f.root, "instances", n) == mine {
			t.Errorf("%s left", n)
		}
	}
	if err := sweep(filepath.Join(f.root, "nothing"), os.RemoveAll); err == nil {
		t.Errorf("Sweep of a missing root succeeded")
	}
	failing := func(string) error { return errors.New("refused") }
	must(t, os.MkdirAll(filepath.Join(f.root, "instances", fmt.Sprintf("tmigr-%d", dead)), 0o755))
	if err := sweep(f.root, failing); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("Sweep with a failing rmdir: %v", err)
	}
}

func TestInstancePID(t *testing.T) {
	for name, want := range map[string]int{"tmigr-12": 12, "tmigr-12-2": 12, "tmigr-": 0, "tmigr-012": 0, "tmigr-0": 0,
		"tmigr-12-": 0, "tmigr-12-a": 0, "tmigr--1": 0, "tmigr-99999999999": 0, "tmigrx-12": 0, "tmigr-+12": 0} {
		got, ok := instancePID(name)
		if got != want || ok != (want > 0) {
			t.Errorf("instancePID(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
}

func TestLost(t *testing.T) {
	f := newFake(t)
	f.cpus = 3
	f.stats = "entries: 5\noverrun: 7\ncommit overrun: 1\nbytes: 100\noldest event ts:  1.000000\nnow ts: 2.000000\ndropped events: 2\nread events: 9\n"
	in, err := Open(f.options(t, Options{}))
	must(t, err)
	defer in.Close()
	n, err := in.Lost()
	if err != nil || n != 3*(7+1+2) {
		t.Errorf("Lost = %d, %v; want %d", n, err, 3*(7+1+2))
	}
	must(t, os.WriteFile(filepath.Join(in.Dir(), "per_cpu/cpu1/stats"), []byte("overrun: lots\n"), 0o644))
	if _, err := in.Lost(); err == nil || !strings.Contains(err.Error(), "cpu1") {
		t.Errorf("Lost of a bad stats file: %v", err)
	}
}

func TestDefaultBufferKB(t *testing.T) {
	for n, want := range map[int]int{0: 2048, 1: 2048, 64: 2048, 128: 1024, 512: 256, 8192: 256} {
		if got := DefaultBufferKB(n); got != want {
			t.Errorf("DefaultBufferKB(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestHexMask(t *testing.T) {
	for list, want := range map[string]string{"": "0", "0": "00000001", "0-3": "0000000f", "31": "80000000", "32": "00000001,00000000", "0,64-65": "00000003,00000000,00000001"} {
		if got := HexMask(cpumask.MustParse(list)); got != want {
			t.Errorf("HexMask(%q) = %s, want %s", list, got, want)
		}
	}
}
