package lab

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/kernel/cmdline"
)

// Flavour is the kind of Debian kernel a guest boots.
type Flavour string

const (
	// Generic is Debian's cloud-amd64 kernel: PREEMPT_DYNAMIC, HZ=250,
	// everything a QEMU guest without disks needs built in (serial
	// console, ACPI, NUMA, initramfs, tracing).
	Generic Flavour = "generic"
	// RT is Debian's rt-amd64 kernel, PREEMPT_RT: hrtimers of tasks that
	// are not real-time expire in softirq context.
	RT Flavour = "rt"
)

// Limits on what a guest may be. MaxCPUs is the most vCPUs QEMU 7.2's q35
// machine accepts.
const (
	MaxCPUs       = 288
	MaxDuration   = 10 * time.Minute
	MinPeriod     = 10 * time.Microsecond
	MaxPeriod     = 10 * time.Second
	maxCmdlineLen = 1024 // of the user's part; the kernel's limit is 2048 in all
	defaultRecord = 3 * time.Second
	defaultFIFO   = 50
	defaultBufKB  = 2048
	minBufKB      = 64
	maxBufKB      = 256 << 10
	// defaultSeries is the series recorded when no version is asked
	// for: the one the first recordings in testdata/traces are of.
	defaultSeries  = "6.12"
	defaultMirror  = "http://deb.debian.org"
	consoleDevice  = "ttyS0"
	guestBinary    = "/bin/tmigr-guest"
	guestReadyFile = "/run/tmigr-guest.ready"
)

// DefaultPeriod is the sleepers' period when a Spec gives none, and the
// period of the recordings made before the machine line's note said it.
const DefaultPeriod = 3 * time.Millisecond

// Spec is one recording: the shape of the guest, its kernel command line,
// the load it runs and for how long. The zero value of a field means its
// default; CPUs is the only field that must be set.
type Spec struct {
	CPUs  int // vCPUs, 1..MaxCPUs
	Nodes int // NUMA nodes, 1..CPUs; 0 means 1, or len(NodeCPUs)
	// NodeCPUs, when set, gives each node's CPUs (a partition of
	// 0..CPUs-1, no node empty). Otherwise the CPUs are spread over the
	// nodes in contiguous blocks, as SpreadNodes does.
	NodeCPUs []cpumask.Mask

	// Cmdline is appended to the kernel command line the recorder sets up
	// (console, panic, quiet): isolcpus=, nohz_full=, and the like. It
	// goes into the recording's machine line.
	Cmdline string

	Busy       cpumask.Mask  // CPUs that run a busy loop
	Sleepers   cpumask.Mask  // CPUs that run a periodic SCHED_OTHER sleeper
	RTSleepers cpumask.Mask  // CPUs that run a periodic SCHED_FIFO sleeper
	Period     time.Duration // the sleepers' period; default 3ms
	// Absolute makes the sleepers sleep until absolute deadlines
	// (TIMER_ABSTIME, a drift-free period) instead of for Period.
	Absolute bool
	FIFOPrio int // SCHED_FIFO priority of the RT sleepers, 1..99; default 50

	// Timer loads beyond the sleepers, each a periodic worker alone on
	// its CPU with Period (see cmd/tmigr-guest/loads_linux.go). The
	// machine line's note names each ("timerfd=2-3"); its sleepers= does
	// not hold them.
	TimerFD     cpumask.Mask // a periodic timerfd, read in a loop
	PosixTimers cpumask.Mask // a periodic POSIX timer whose signal the worker waits for
	Epoll       cpumask.Mask // epoll_wait on an empty set with Period (in ms) as its timeout
	TCP         cpumask.Mask // a TCP connection over loopback, a byte each way every Period, keepalive on
	Storm       cpumask.Mask // a child process that arms 32 timerfds and 32 POSIX timers and exits, every 10 Periods

	Duration time.Duration // how long to record; default 3s
	// At are changes the guest makes while it is recorded, each at its
	// time from the start of the recording (before Duration): an
	// isolated cpuset partition made or removed, kernel.timer_migration
	// written, a CPU taken offline or online. The machine line's at=
	// field lists them; see ftrace.Change.
	At     []ftrace.Change
	Kernel Flavour // default Generic
	// KernelVersion is the Debian kernel to boot: a series ("6.1",
	// "6.12", "6.19", "7.0", "7.2", "7.3") means its newest release in
	// the cache, or else the newest the Debian archive has; an upstream
	// release ("6.19.14", "6.1.192") pins it. Empty means the series
	// 6.12.
	KernelVersion string
	// HRTimers records the timer/hrtimer_* events too; always on for RT.
	HRTimers bool
	BufferKB int // per-CPU trace buffer in KiB; default 2048
	MemoryMB int // guest memory; default from CPUs and BufferKB
	// Timeout bounds each QEMU run (boot, recording, dump). Default:
	// DefaultTimeout for this host.
	Timeout time.Duration
	// Retries is how many times a guest that crashed before its /init ran
	// is booted again (multi-threaded TCG has races a kernel can hit while
	// it patches its own code); default 2, negative for none.
	Retries int

	Host Host // where the tools come from

	// ToolsDir, when set, makes the guest run tmigr itself too (record,
	// top --json, exporter, host --verify: see tools.go) before the
	// recording, and names the directory their outputs are written to.
	ToolsDir string

	// Progress receives one line per step (fetching, building, booting,
	// recording, events written); nil discards them.
	Progress io.Writer
	// Console, when set, receives the guest's whole serial console log.
	Console io.Writer
}

// Host says where the recorder finds or puts what it needs on the host.
// The zero value fetches everything into the default cache.
type Host struct {
	// CacheDir holds the kernels, busybox, the guest program and the
	// private apt state; default $XDG_CACHE_HOME/tmigr/lab or
	// ~/.cache/tmigr/lab.
	CacheDir string
	// Mirror is the Debian archive's base URL; "/debian" and
	// "/debian-security" are appended. Default http://deb.debian.org.
	Mirror string
	// NoInstall forbids "apt-get install" of a missing QEMU: the recorder
	// then fails naming the package instead.
	NoInstall bool

	// Paths that replace the fetched or built files, for offline use and
	// tests. KernelImage needs KernelConfig (the recording's HZ is read
	// from it).
	QEMU, Busybox, Guest, KernelImage, KernelConfig string
	// SourceDir is the tmigr module's root, from which the guest program
	// is built; default: the module of the working directory.
	SourceDir string
}

// withDefaults returns s with its defaults filled in; it does not validate.
func (s Spec) withDefaults() Spec {
	if s.Nodes == 0 {
		s.Nodes = max(len(s.NodeCPUs), 1)
	}
	if s.Period == 0 {
		s.Period = DefaultPeriod
	}
	if s.FIFOPrio == 0 {
		s.FIFOPrio = defaultFIFO
	}
	if s.Duration == 0 {
		s.Duration = defaultRecord
	}
	if s.Kernel == "" {
		s.Kernel = Generic
	}
	if s.Kernel == RT {
		s.HRTimers = true
	}
	if s.BufferKB == 0 {
		s.BufferKB = defaultBufKB
	}
	if s.MemoryMB == 0 {
		s.MemoryMB = defaultMemoryMB(s.CPUs, s.BufferKB, s.Nodes)
	}
	if s.Timeout == 0 {
		d := s.Duration
		if s.ToolsDir != "" {
			d += toolsDuration * time.Second
		}
		s.Timeout = min(DefaultTimeout(s.CPUs, d, hostNow())+DumpTime(s.CPUs, s.BufferKB), maxTimeout)
	}
	switch {
	case s.Retries == 0:
		s.Retries = 2
	case s.Retries < 0:
		s.Retries = 0
	}
	if s.Host.Mirror == "" {
		s.Host.Mirror = defaultMirror
	}
	if s.NodeCPUs == nil && s.CPUs >= 1 && s.Nodes >= 1 && s.Nodes <= s.CPUs {
		s.NodeCPUs = SpreadNodes(s.CPUs, s.Nodes)
	}
	return s
}

// defaultMemoryMB sizes the guest: 256 MiB for the kernel and the initramfs,
// 8 MiB per vCPU (per-CPU areas, stacks, slabs), and twice the trace buffer
// per vCPU; rounded up so that each node gets a multiple of 64 MiB.
// HostLoad is what DefaultTimeout knows of the host: its CPUs and its load.
type HostLoad struct {
	CPUs int     // logical CPUs (runtime.NumCPU)
	Load float64 // the 1-minute load average; 0 when unknown
}

// hostNow reads the host's CPUs and load average.
func hostNow() HostLoad {
	h := HostLoad{CPUs: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			h.Load, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return h
}

// DefaultTimeout is the limit on one QEMU run of a guest of cpus vCPUs
// recording for d on host h. Under TCG every vCPU is a host thread, and a
// guest's boot does work on every vCPU (bring-up, per-CPU setup, code
// patching that waits for all of them), so the boot time grows with the
// vCPUs times the vCPUs that share each free host core (about vCPUs²/25 s
// on a 2-core host; docs/performance.md has the boot times). The limit is
// a minute, twice the recording, and 1 s per vCPU times the vCPUs per free
// core (at least 1), the free cores being the host's CPUs less half its
// load (at least a quarter of them): about twice what the slowest guests
// measured needed; 45 minutes at most. A limit is only reached
// when a guest hangs or the host is starved, so it errs long.
func DefaultTimeout(cpus int, d time.Duration, h HostLoad) time.Duration {
	hostCPUs := float64(max(h.CPUs, 1))
	free := max(hostCPUs-h.Load/2, hostCPUs/4)
	share := max(float64(cpus)/free, 1)
	t := time.Minute + 2*d + time.Duration(float64(cpus)*share*float64(time.Second))
	return min(t, maxTimeout).Round(time.Second)
}

// maxTimeout bounds the limit on one QEMU run.
const maxTimeout = 45 * time.Minute

// DumpTime is what the limit on a QEMU run allows, beside DefaultTimeout,
// for the guest to dump its trace: the whole of its buffers (cpus ×
// bufKB KiB, their most) through the console at dumpRate, after the
// kernel formats it and gzip packs it on one vCPU. A guest of 4 vCPUs
// under a timer storm, PREEMPT_RT, took more than 70 s to dump on the
// loaded 2-core VM (campaign 20261229, draw 36).
func DumpTime(cpus, bufKB int) time.Duration {
	return time.Duration(cpus*bufKB/dumpRate) * time.Second
}

// dumpRate is the KiB of trace buffer a guest dumps per second, at the
// least, on a loaded 2-core host: erring long.
const dumpRate = 64

func defaultMemoryMB(cpus, bufKB, nodes int) int {
	mb := max(256+cpus*8+cpus*2*bufKB/1024, 512)
	nodes = max(nodes, 1)
	per := (mb + nodes - 1) / nodes
	per = (per + 63) / 64 * 64
	return per * nodes
}

// SpreadNodes spreads cpus CPUs over nodes NUMA nodes in contiguous blocks
// whose sizes differ by at most one, as "tmigr topo" does: CPU c goes to
// node c*nodes/cpus (rounded down), so the first nodes get the larger
// blocks (9 CPUs on 2 nodes: 0-4 and 5-8). It needs 1 <= nodes <= cpus.
func SpreadNodes(cpus, nodes int) []cpumask.Mask {
	out := make([]cpumask.Mask, nodes)
	for c := range cpus {
		out[c*nodes/cpus].Set(c)
	}
	return out
}

// Validate checks the spec, with its defaults applied, and names the first
// problem it finds.
func (s Spec) Validate() error {
	s = s.withDefaults()
	return s.validate()
}

func (s *Spec) validate() error {
	switch {
	case s.CPUs < 1:
		return fmt.Errorf("cpus: %d; a guest needs at least 1 CPU", s.CPUs)
	case s.CPUs > MaxCPUs:
		return fmt.Errorf("cpus: %d; QEMU's q35 machine takes at most %d", s.CPUs, MaxCPUs)
	case s.Nodes < 1:
		return fmt.Errorf("nodes: %d; a guest needs at least 1 node", s.Nodes)
	case s.Nodes > s.CPUs:
		return fmt.Errorf("nodes: %d nodes for %d CPUs; every node needs a CPU", s.Nodes, s.CPUs)
	case len(s.NodeCPUs) != s.Nodes:
		return fmt.Errorf("node-cpus: %d lists for %d nodes", len(s.NodeCPUs), s.Nodes)
	}
	all := cpumask.Range(0, s.CPUs-1)
	var seen cpumask.Mask
	for i := range s.NodeCPUs {
		n := &s.NodeCPUs[i]
		if n.Empty() {
			return fmt.Errorf("node-cpus: node %d has no CPUs", i)
		}
		if !n.Subset(&all) {
			return fmt.Errorf("node-cpus: node %d holds CPUs %s, beyond the %d CPUs (0-%d)", i, n.AndNot(all), s.CPUs, s.CPUs-1)
		}
		if n.Intersects(&seen) {
			return fmt.Errorf("node-cpus: CPUs %s are on node %d and on an earlier node", n.And(seen), i)
		}
		seen = seen.Or(*n)
	}
	if missing := all.AndNot(seen); !missing.Empty() {
		return fmt.Errorf("node-cpus: CPUs %s are on no node (the lists must partition 0-%d)", missing, s.CPUs-1)
	}
	loads := []struct {
		name string
		m    *cpumask.Mask
	}{{"busy", &s.Busy}, {"sleepers", &s.Sleepers}, {"rt-sleepers", &s.RTSleepers}}
	for _, t := range s.timerLoads() {
		loads = append(loads, struct {
			name string
			m    *cpumask.Mask
		}{t.name, t.m})
	}
	for i, l := range loads {
		if !l.m.Subset(&all) {
			return fmt.Errorf("%s: CPUs %s are beyond the %d CPUs (0-%d)", l.name, l.m.AndNot(all), s.CPUs, s.CPUs-1)
		}
		for _, o := range loads[:i] {
			if l.m.Intersects(o.m) {
				return fmt.Errorf("%s and %s overlap on CPUs %s: a CPU runs one load", o.name, l.name, l.m.And(*o.m))
			}
		}
	}
	switch {
	case s.Period < MinPeriod || s.Period > MaxPeriod:
		return fmt.Errorf("period: %v is outside %v..%v", s.Period, MinPeriod, MaxPeriod)
	case s.FIFOPrio < 1 || s.FIFOPrio > 99:
		return fmt.Errorf("fifo priority: %d is outside 1..99", s.FIFOPrio)
	case s.Duration <= 0 || s.Duration > MaxDuration:
		return fmt.Errorf("duration: %v is outside (0, %v]", s.Duration, MaxDuration)
	case s.Duration%time.Millisecond != 0:
		return fmt.Errorf("duration: %v is not a whole number of milliseconds", s.Duration)
	case s.Kernel != Generic && s.Kernel != RT:
		return fmt.Errorf("kernel: %q is neither %q nor %q", s.Kernel, Generic, RT)
	case s.BufferKB < minBufKB || s.BufferKB > maxBufKB:
		return fmt.Errorf("buffer: %d KiB per CPU is outside %d..%d", s.BufferKB, minBufKB, maxBufKB)
	case s.MemoryMB < 128:
		return fmt.Errorf("memory: %d MiB is too little for a guest (at least 128)", s.MemoryMB)
	case s.MemoryMB%s.Nodes != 0:
		return fmt.Errorf("memory: %d MiB does not divide evenly over %d nodes", s.MemoryMB, s.Nodes)
	case s.Timeout <= s.Duration:
		return fmt.Errorf("timeout: %v leaves no time to boot before recording %v", s.Timeout, s.Duration)
	case (s.Host.KernelImage == "") != (s.Host.KernelConfig == ""):
		return errors.New("a kernel image needs its config (for HZ) and the other way round")
	}
	if s.KernelVersion != "" && !isUpstreamVersion(s.KernelVersion) {
		return fmt.Errorf("kernel version: %q is neither a series (6.1, 6.12, 6.19, 7.3) nor a release (6.19.14)", s.KernelVersion)
	}
	if err := checkCmdline(s.Cmdline); err != nil {
		return err
	}
	if err := s.validateAt(); err != nil {
		return err
	}
	iso, err := cmdline.ParseIsolation(s.Cmdline, s.CPUs)
	if err != nil {
		return fmt.Errorf("cmdline: %v", err)
	}
	if len(iso.Warnings) > 0 {
		// The kernel would boot, ignoring part of the line: the
		// recording would not be of the machine the user asked for.
		return fmt.Errorf("cmdline: the kernel would ignore part of it: %s", strings.Join(iso.Warnings, "; "))
	}
	return nil
}

// validateAt checks the run-time changes: what ftrace.Machine accepts,
// each before the recording ends, and loads the guest can carry along: a
// partition's busy or sleeping CPUs keep their loads (the guest moves their
// threads into it), so a load may not straddle it.
func (s *Spec) validateAt() error {
	m := ftrace.Machine{CPUs: s.CPUs, Nodes: 1, NodeCPUs: []cpumask.Mask{cpumask.Range(0, s.CPUs-1)}, Kernel: "x", HZ: 1, At: s.At}
	if err := m.Validate(); err != nil {
		return err
	}
	for i, c := range s.At {
		if c.At >= s.Duration {
			return fmt.Errorf("at: change %d (%s) comes at or after the end of the %v recording", i+1, c, s.Duration)
		}
		if c.Kind == ftrace.ChangeOffline && c.CPU == 0 {
			return fmt.Errorf("at: change %d (%s): CPU 0 cannot go offline on x86", i+1, c)
		}
		if c.Kind == ftrace.ChangePartition && !c.CPUs.Empty() {
			if hk := s.housekeeping(); hk.Subset(&c.CPUs) {
				return fmt.Errorf("at: change %d (%s) would take every housekeeping CPU (%s)", i+1, c, hk)
			}
		}
	}
	return nil
}

// ownedParams are the kernel parameters the recorder sets itself.
var ownedParams = []string{"console", "init", "rdinit", "panic", "loglevel", "quiet", "tsc", "no_timer_check", "trace_buf_size", "trace_event", "ftrace", "tp_printk"}

// checkCmdline rejects what would break the -append string or the
// recording: control and non-ASCII characters, quotes (the kernel's own
// quoting would swallow our parameters), "--" (it hands the rest to init),
// and the parameters the recorder owns.
func checkCmdline(c string) error {
	if len(c) > maxCmdlineLen {
		return fmt.Errorf("cmdline: %d bytes, at most %d", len(c), maxCmdlineLen)
	}
	for i := 0; i < len(c); i++ {
		switch b := c[i]; {
		case b < 0x20 || b >= 0x7f:
			return fmt.Errorf("cmdline: byte %#02x at offset %d: only printable ASCII may go on the kernel command line", b, i)
		case b == '"' || b == '\'' || b == '\\':
			return fmt.Errorf("cmdline: %q at offset %d: quotes and backslashes would change how the kernel splits the line", b, i)
		}
	}
	for _, p := range strings.Fields(c) {
		if p == "--" {
			return errors.New("cmdline: \"--\" would hand the rest of the line to init")
		}
		name, _, _ := strings.Cut(p, "=")
		for _, o := range ownedParams {
			if cmdline.NameEq(name, o) {
				return fmt.Errorf("cmdline: %q is set by the recorder itself", p)
			}
		}
	}
	return nil
}

// isUpstreamVersion reports whether v is a series "A.B" or a release
// "A.B.C", decimal numbers.
func isUpstreamVersion(v string) bool {
	parts := strings.Split(v, ".")
	if len(parts) != 2 && len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 4 || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// housekeeping returns the CPUs the guest program's own threads (the Go
// runtime's, not the loads') may run on: the CPUs without a load that the
// command line does not isolate, else those without a load, else CPU 0.
func (s *Spec) housekeeping() cpumask.Mask {
	all := cpumask.Range(0, s.CPUs-1)
	free := all.AndNot(s.Busy).AndNot(s.Sleepers).AndNot(s.RTSleepers).AndNot(s.timerLoadCPUs())
	if iso, err := cmdline.ParseIsolation(s.Cmdline, s.CPUs); err == nil {
		if hk := free.AndNot(iso.Domain).AndNot(iso.NohzFull); !hk.Empty() {
			return hk
		}
	}
	if !free.Empty() {
		return free
	}
	return cpumask.Of(0)
}

// machine returns the "# machine:" line's content for a recording of s on
// a kernel of the given release and HZ; configFrom names the release
// whose config the recorder read, when the archive had none of the
// kernel's own.
func (s *Spec) machine(release string, hz int, configFrom string) ftrace.Machine {
	note := []string{"QEMU TCG"}
	if configFrom != "" {
		note = append(note, "config of "+configFrom+": Debian has none of "+release)
	}
	if s.Kernel == RT {
		note = append(note, "PREEMPT_RT")
	}
	if !s.RTSleepers.Empty() {
		note = append(note, "fifo-sleepers="+s.RTSleepers.String())
	}
	for _, t := range s.timerLoads() {
		if !t.m.Empty() {
			note = append(note, t.name+"="+t.m.String())
		}
	}
	if s.periodic() {
		p := "period=" + s.Period.String()
		if s.Absolute {
			p += " absolute"
		}
		note = append(note, p)
	}
	return ftrace.Machine{
		At:       s.At,
		CPUs:     s.CPUs,
		Nodes:    s.Nodes,
		NodeCPUs: s.NodeCPUs,
		Kernel:   release,
		HZ:       hz,
		Cmdline:  s.Cmdline,
		Busy:     s.Busy,
		Sleepers: s.Sleepers.Or(s.RTSleepers),
		Note:     strings.Join(note, "; "),
	}
}

// timerLoad is one of the timer loads beyond the sleepers: its name (the
// flag of "tmigr lab record" and of the guest program, and the note's
// word) and its CPUs.
type timerLoad struct {
	name string
	m    *cpumask.Mask
}

// timerLoads returns the spec's timer loads, in a fixed order.
func (s *Spec) timerLoads() []timerLoad {
	return []timerLoad{{"timerfd", &s.TimerFD}, {"posix-timers", &s.PosixTimers}, {"epoll", &s.Epoll}, {"tcp", &s.TCP}, {"storm", &s.Storm}}
}

// timerLoadCPUs returns the CPUs that run a timer load.
func (s *Spec) timerLoadCPUs() cpumask.Mask {
	var m cpumask.Mask
	for _, t := range s.timerLoads() {
		m = m.Or(*t.m)
	}
	return m
}

// periodic reports whether a load of s uses Period.
func (s *Spec) periodic() bool {
	m := s.timerLoadCPUs()
	return !s.Sleepers.Empty() || !s.RTSleepers.Empty() || !m.Empty()
}
