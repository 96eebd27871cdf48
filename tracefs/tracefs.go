package tracefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/kernel"
)

// Options says what an instance records.
type Options struct {
	// Root is the tracefs mount point. "" finds it (/sys/kernel/tracing,
	// then /sys/kernel/debug/tracing) and mounts tracefs at
	// /sys/kernel/tracing when neither is one; Close unmounts it then.
	Root string
	// HRTimers also records the hrtimer_* events of group "timer".
	HRTimers bool
	// CPUs are the CPUs recorded (the instance's tracing_cpumask); empty
	// records all.
	CPUs cpumask.Mask
	// BufferKB is the per-CPU ring buffer (buffer_size_kb); 0 is
	// DefaultBufferKB for the machine's CPUs.
	BufferKB int

	// mkdir creates an instance and rmdir removes one (tracefs: a mkdir
	// and an rmdir); tests on a fake root lay the instance out instead.
	mkdir, rmdir func(string) error
}

// Mount points, in the order Open looks at them.
const (
	DefaultRoot = "/sys/kernel/tracing"
	debugRoot   = "/sys/kernel/debug/tracing"
)

// mountSource is the source of a tracefs mount that Open makes: the mount
// table (/proc/self/mountinfo) names it, so that a later run knows a mount
// a killed recorder left and takes it down with its instances.
const mountSource = "tmigr"

// instancePrefix starts the name of our instances: tmigr-<pid>, and
// tmigr-<pid>-<n> for a process's later ones.
const instancePrefix = "tmigr-"

// ErrPermission is wrapped by the errors of a process that may not create
// an instance (or mount tracefs).
var ErrPermission = os.ErrPermission

// wheelEvents are the timer wheel's events of group "timer"; the ones a
// kernel lacks (timer_base_idle came with 6.9) are left out.
var wheelEvents = []string{"timer_init", "timer_start", "timer_expire_entry", "timer_expire_exit", "timer_cancel", "timer_base_idle"}

// Instance is a tracefs instance of our own. Its methods may be called from
// several goroutines: Close from a signal handler's goroutine unblocks a
// Read of the pipe in another.
type Instance struct {
	root    string // the tracefs mount
	dir     string // the instance's directory, "" before it exists
	mounted bool   // Open mounted root
	rmdir   func(string) error
	events  []string
	notes   []string
	bufKB   int

	mu     sync.Mutex
	pipes  map[*pipe]bool
	closed bool
}

// seq numbers a process's instances after its first.
var seq atomic.Int64

// Open creates and sets up an instance: it checks the root and the
// permissions, sweeps stale instances, creates instances/tmigr-<pid>,
// stops it (a new instance starts switched on), sets its clock, buffer and
// CPUs, and enables the events. It does not start recording: Start does.
// On error nothing is left behind.
func Open(o Options) (*Instance, error) {
	if o.BufferKB < 0 {
		return nil, fmt.Errorf("buffer size %d KiB: want a positive size, or 0 for the default", o.BufferKB)
	}
	mkdir, rmdir := o.mkdir, o.rmdir
	if mkdir == nil {
		mkdir = func(p string) error { return os.Mkdir(p, 0o755) }
	}
	if rmdir == nil {
		rmdir = syscall.Rmdir
	}
	root, mounted, err := findRoot(o.Root)
	if err != nil {
		return nil, err
	}
	left := !mounted && o.Root == "" && leftMount(root)
	in := &Instance{root: root, mounted: mounted, rmdir: rmdir, pipes: map[*pipe]bool{}}
	fail := func(err error) (*Instance, error) {
		in.Close()
		return nil, err
	}
	instances := filepath.Join(root, "instances")
	st, err := os.Stat(instances)
	if err == nil && st.IsDir() {
		err = unix.Access(instances, unix.W_OK)
	}
	switch {
	case errors.Is(err, os.ErrPermission):
		return fail(fmt.Errorf("needs root to create a tracefs instance: no write access to %s (%w)", instances, ErrPermission))
	case err != nil || !st.IsDir():
		return fail(fmt.Errorf("%s has no instances directory: is it a tracefs mount?", root))
	}
	if _, err := os.Stat(filepath.Join(root, "events", "timer")); err != nil {
		return fail(fmt.Errorf("Linux %s has no timer trace events (%s is missing)", release(), filepath.Join(root, "events", "timer")))
	}
	if err := sweep(root, rmdir); err != nil {
		in.notes = append(in.notes, fmt.Sprintf("stale instances left: %v", err))
	}
	if left && !liveInstances(root) {
		// A recorder killed before its Close mounted it: nobody
		// else uses it, and it goes with ours.
		in.mounted = true
	}
	dir := filepath.Join(instances, instanceName(os.Getpid(), seq.Add(1)))
	if err := mkdir(dir); errors.Is(err, os.ErrExist) {
		// Left by a dead process that had our pid: ours now.
		if err := rmdir(dir); err != nil {
			return fail(fmt.Errorf("removing the stale instance %s: %v", dir, err))
		}
		err = mkdir(dir)
		if err != nil {
			return fail(fmt.Errorf("creating the instance: %v", err))
		}
	} else if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return fail(fmt.Errorf("needs root to create a tracefs instance: %v (%w)", err, ErrPermission))
		}
		return fail(fmt.Errorf("creating the instance: %v", err))
	}
	in.dir = dir
	if err := in.setup(o); err != nil {
		return fail(err)
	}
	return in, nil
}

// setup stops the new instance and sets its clock, buffer, CPUs and events.
func (in *Instance) setup(o Options) error {
	if err := in.write("tracing_on", "0"); err != nil {
		return err
	}
	if err := in.write("trace_clock", "global"); err != nil {
		return err
	}
	in.bufKB = o.BufferKB
	if in.bufKB == 0 {
		n := o.CPUs.Weight()
		if n == 0 {
			n = in.cpus()
		}
		in.bufKB = DefaultBufferKB(n)
	}
	if err := in.write("buffer_size_kb", strconv.Itoa(in.bufKB)); err != nil {
		return err
	}
	if !o.CPUs.Empty() {
		if err := in.write("tracing_cpumask", HexMask(o.CPUs)); err != nil {
			return err
		}
	}
	ev := filepath.Join(in.dir, "events")
	var names []string
	for _, e := range wheelEvents {
		names = append(names, "timer/"+e)
	}
	if o.HRTimers {
		hr, _ := filepath.Glob(filepath.Join(ev, "timer", "hrtimer_*"))
		if len(hr) == 0 {
			return fmt.Errorf("Linux %s has no hrtimer trace events (%s)", release(), filepath.Join(ev, "timer", "hrtimer_*"))
		}
		for _, p := range hr {
			names = append(names, "timer/"+filepath.Base(p))
		}
	}
	names = append(names, "timer/tick_stop", "timer_migration")
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(ev, n)); err != nil {
			switch n {
			case "timer_migration":
				in.notes = append(in.notes, noHierarchy(release()))
			case "timer/timer_base_idle", "timer/tick_stop":
				// Optional: 6.9 added timer_base_idle; tick_stop
				// needs CONFIG_NO_HZ_COMMON.
			default:
				return fmt.Errorf("Linux %s has no %s trace event (%s)", release(), n, filepath.Join(ev, n))
			}
			continue
		}
		if err := in.write(filepath.Join("events", n, "enable"), "1"); err != nil {
			return err
		}
		in.events = append(in.events, n)
	}
	return nil
}

// noHierarchy says what a kernel without the timer_migration events does.
func noHierarchy(rel string) string {
	r, err := kernel.ParseRelease(rel)
	if err == nil && !kernel.For(r.Version).Has(kernel.PullHierarchy) {
		return fmt.Sprintf("Linux %s has no timer_migration events: before 6.9 there is no timer migration hierarchy, "+
			"a wheel timer is pushed to a busy CPU when queued (get_nohz_timer_target); the recording holds the timer events alone", rel)
	}
	return fmt.Sprintf("Linux %s has no timer_migration events: built without CONFIG_SMP or CONFIG_NO_HZ_COMMON it has no timer migration hierarchy; "+
		"the recording holds the timer events alone", rel)
}

// DefaultBufferKB is the per-CPU buffer for n CPUs: 2 MiB, which holds
// about 40,000 events, a fifth of a second of a CPU that arms and expires
// 100,000 timers a second and half a minute of an idle one, so that the
// reader may fall that far behind; above 64 CPUs the total stays at 128
// MiB, down to 256 KiB a CPU.
func DefaultBufferKB(n int) int {
	const perCPU, total, least = 2048, 128 << 10, 256
	if n <= 0 || n*perCPU <= total {
		return perCPU
	}
	return max(least, total/n)
}

// HexMask prints m as tracing_cpumask takes it: hex words of 32 CPUs,
// the highest first, separated by commas.
func HexMask(m cpumask.Mask) string {
	last := m.Last()
	if last < 0 {
		return "0"
	}
	words := make([]string, last/32+1)
	for i := range words {
		var w uint32
		for b := 0; b < 32; b++ {
			if c := i*32 + b; c <= last && m.Test(c) {
				w |= 1 << b
			}
		}
		words[len(words)-1-i] = fmt.Sprintf("%08x", w)
	}
	return strings.Join(words, ",")
}

// findRoot returns the tracefs mount: root when given (checked by Open), or
// the first of the usual mount points that is one, mounting tracefs at
// DefaultRoot when none is.
func findRoot(root string) (string, bool, error) {
	if root != "" {
		st, err := os.Stat(root)
		if err != nil {
			return "", false, fmt.Errorf("no tracefs at %s: %v", root, err)
		}
		if !st.IsDir() {
			return "", false, fmt.Errorf("no tracefs at %s: not a directory", root)
		}
		return root, false, nil
	}
	for _, p := range []string{DefaultRoot, debugRoot} {
		var st unix.Statfs_t
		if unix.Statfs(p, &st) == nil && st.Type == unix.TRACEFS_MAGIC {
			return p, false, nil
		}
	}
	if os.Geteuid() != 0 {
		return "", false, fmt.Errorf("needs root to mount tracefs at %s: no tracefs is mounted (%w)", DefaultRoot, ErrPermission)
	}
	if err := unix.Mount(mountSource, DefaultRoot, "tracefs", 0, ""); err != nil {
		switch {
		case errors.Is(err, unix.ENODEV):
			return "", false, fmt.Errorf("no tracefs: Linux %s was built without it (CONFIG_TRACING)", release())
		case errors.Is(err, unix.ENOENT):
			return "", false, fmt.Errorf("no tracefs: %s is missing (Linux %s built without CONFIG_TRACING?)", DefaultRoot, release())
		}
		return "", false, fmt.Errorf("mounting tracefs at %s: %v", DefaultRoot, err)
	}
	return DefaultRoot, true, nil
}

// release is the running kernel's release.
func release() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "(unknown release)"
	}
	return unix.ByteSliceToString(u.Release[:])
}

// cpus counts the instance's per_cpu directories, the possible CPUs.
func (in *Instance) cpus() int {
	d, _ := filepath.Glob(filepath.Join(in.dir, "per_cpu", "cpu*"))
	return len(d)
}

// write writes a control file of the instance, naming it on error.
func (in *Instance) write(name, value string) error {
	p := filepath.Join(in.dir, name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("tracefs: %v", err)
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("tracefs: writing %q to %s: %v", value, p, err)
	}
	return nil
}

// Dir returns the instance's directory.
func (in *Instance) Dir() string { return in.dir }

// Events returns the events enabled, "timer/timer_start" or a whole group
// ("timer_migration").
func (in *Instance) Events() []string { return in.events }

// Notes says what the recording will lack and why (a kernel without the
// timer_migration events), and stale instances Open could not remove.
func (in *Instance) Notes() []string { return in.notes }

// BufferKB returns the per-CPU buffer size set.
func (in *Instance) BufferKB() int { return in.bufKB }

// Start switches the instance on.
func (in *Instance) Start() error { return in.onOff("1") }

// Stop switches it off: the events recorded stay in its buffer for the
// pipe to drain, and a read of an empty pipe that has read something
// returns io.EOF.
func (in *Instance) Stop() error { return in.onOff("0") }

func (in *Instance) onOff(v string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return errors.New("tracefs: instance closed")
	}
	return in.write("tracing_on", v)
}

// pipe is an open trace_pipe. Its file is pollable (tracefs implements
// poll), so a Close from another goroutine unblocks its Read, and
// SetReadDeadline works.
type pipe struct {
	*os.File
	in *Instance
}

func (p *pipe) Close() error {
	p.in.mu.Lock()
	delete(p.in.pipes, p)
	p.in.mu.Unlock()
	return p.File.Close()
}

// Pipe opens the instance's trace_pipe: text lines as the events come,
// each event once (reading consumes them). Close unblocks a blocked Read.
// The reader has SetReadDeadline.
func (in *Instance) Pipe() (io.ReadCloser, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return nil, errors.New("tracefs: instance closed")
	}
	f, err := os.Open(filepath.Join(in.dir, "trace_pipe"))
	if err != nil {
		return nil, fmt.Errorf("tracefs: %v", err)
	}
	p := &pipe{File: f, in: in}
	in.pipes[p] = true
	return p, nil
}

// Lost returns the events the instance lost so far: per CPU, those
// overwritten before they were read (overrun), those a nested write could
// not commit (commit overrun) and those dropped (dropped events).
func (in *Instance) Lost() (uint64, error) {
	files, err := filepath.Glob(filepath.Join(in.dir, "per_cpu", "cpu*", "stats"))
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return n, fmt.Errorf("tracefs: %v", err)
		}
		s, err := ParseStats(b)
		if err != nil {
			return n, fmt.Errorf("tracefs: %s: %v", f, err)
		}
		n += s.Lost()
	}
	return n, nil
}

// Close stops the instance, closes its pipes, removes it and unmounts
// tracefs if Open mounted it. It may be called more than once, and from
// another goroutine than the pipe's reader.
func (in *Instance) Close() error {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return nil
	}
	in.closed = true
	var pipes []*pipe
	for p := range in.pipes {
		pipes = append(pipes, p)
	}
	in.pipes = nil
	in.mu.Unlock()
	var errs []error
	if in.dir != "" {
		in.write("tracing_on", "0") // best effort: removing it stops it too
	}
	for _, p := range pipes {
		p.File.Close()
	}
	if in.dir != "" {
		if err := removeInstance(in.dir, in.rmdir); err != nil {
			errs = append(errs, err)
		}
	}
	if in.mounted {
		if err := unix.Unmount(in.root, 0); err != nil {
			errs = append(errs, fmt.Errorf("unmounting tracefs at %s: %v", in.root, err))
		}
	}
	return errors.Join(errs...)
}

// removeInstance removes an instance. tracefs refuses (EBUSY) while a file
// of it is open: a reader that has not yet seen its pipe closed; it is
// given a moment.
func removeInstance(dir string, rmdir func(string) error) error {
	var err error
	for range 50 {
		if err = rmdir(dir); err == nil || !errors.Is(err, unix.EBUSY) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the tracefs instance %s: %v", dir, err)
	}
	return nil
}

// Sweep removes the instances (instances/tmigr-<pid>) of processes that no
// longer run: a recorder killed by SIGKILL cannot remove its own. An
// instance in use (a file of it open) is left.
func Sweep(root string) error {
	if root == "" {
		r, mounted, err := findRoot("")
		if err != nil {
			return err
		}
		if mounted {
			// Nothing can be left in a tracefs nobody had mounted.
			return unix.Unmount(r, 0)
		}
		left := leftMount(r)
		if err := sweep(r, syscall.Rmdir); err != nil {
			return err
		}
		if left && !liveInstances(r) {
			// Mounted by a recorder killed before its Close.
			return unix.Unmount(r, 0)
		}
		return nil
	}
	return sweep(root, syscall.Rmdir)
}

// leftMount reports whether the tracefs mounted at root is one that Open
// made (its source is mountSource): a run that finds it mounted so, with
// no instance of a running tmigr in it, was killed before its Close.
func leftMount(root string) bool {
	ms, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(root))
	if err != nil || len(ms) == 0 {
		return false
	}
	m := ms[len(ms)-1] // the one on top
	return m.FSType == "tracefs" && m.Source == mountSource
}

// liveInstances reports whether root holds an instance of a running tmigr
// (whose mount is then still in use).
func liveInstances(root string) bool {
	ents, err := os.ReadDir(filepath.Join(root, "instances"))
	if err != nil {
		return true // unknown: leave the mount
	}
	for _, e := range ents {
		if pid, ok := instancePID(e.Name()); ok && running(pid) {
			return true
		}
	}
	return false
}

func sweep(root string, rmdir func(string) error) error {
	ents, err := os.ReadDir(filepath.Join(root, "instances"))
	if err != nil {
		return fmt.Errorf("tracefs: %v", err)
	}
	var stale []string
	for _, e := range ents {
		pid, ok := instancePID(e.Name())
		if ok && !running(pid) {
			stale = append(stale, e.Name())
		}
	}
	sort.Strings(stale)
	var errs []error
	for _, name := range stale {
		err := rmdir(filepath.Join(root, "instances", name))
		if err != nil && !errors.Is(err, unix.EBUSY) && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %v", name, err))
		}
	}
	return errors.Join(errs...)
}

// instanceName names a process's n-th instance (from 1).
func instanceName(pid int, n int64) string {
	name := instancePrefix + strconv.Itoa(pid)
	if n > 1 {
		name += "-" + strconv.FormatInt(n, 10)
	}
	return name
}

// instancePID returns the pid in an instance name of ours, tmigr-<pid> or
// tmigr-<pid>-<n>.
func instancePID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, instancePrefix)
	if !ok {
		return 0, false
	}
	p, n, two := strings.Cut(rest, "-")
	if two {
		if _, err := strconv.ParseUint(n, 10, 31); err != nil {
			return 0, false
		}
	}
	pid, err := strconv.ParseUint(p, 10, 31)
	if err != nil || pid == 0 || p[0] == '0' {
		return 0, false
	}
	return int(pid), true
}

// running reports whether process pid exists (a process of another user
// answers EPERM: it exists).
func running(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// pollPeriod bounds how long Record takes to notice that its context is
// done, and is the quiet time after Stop that ends the drain.
const pollPeriod = 100 * time.Millisecond

// Record starts the instance and copies its trace_pipe to w until ctx is
// done, then stops it and copies what the buffer still holds. It returns
// the bytes copied. trace_pipe never says it is drained (a reader that
// polls gets no end of file), so the drain ends at the first read begun
// after the stop that finds nothing for pollPeriod: the kernel writes
// nothing after tracing_on is 0, and a buffer that holds events answers a
// read at once.
func (in *Instance) Record(ctx context.Context, w io.Writer) (int64, error) {
	r, err := in.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	p := r.(*pipe)
	if err := p.SetReadDeadline(time.Now().Add(pollPeriod)); err != nil {
		return 0, fmt.Errorf("tracefs: %s cannot be polled: %v", p.Name(), err)
	}
	if err := in.Start(); err != nil {
		return 0, err
	}
	buf := make([]byte, 256<<10)
	var n int64
	var stopAt time.Time
	for {
		if stopAt.IsZero() && ctx.Err() != nil {
			if err := in.Stop(); err != nil {
				return n, err
			}
			stopAt = time.Now()
		}
		begun := time.Now()
		if err := p.SetReadDeadline(begun.Add(pollPeriod)); err != nil {
			return n, fmt.Errorf("tracefs: %v", err)
		}
		k, err := p.Read(buf)
		if k > 0 {
			if _, werr := w.Write(buf[:k]); werr != nil {
				in.Stop()
				return n, werr
			}
			n += int64(k)
		}
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			if !stopAt.IsZero() && !begun.Before(stopAt) {
				return n, nil
			}
		case errors.Is(err, io.EOF) && !stopAt.IsZero():
			return n, nil
		case errors.Is(err, io.EOF):
			// A blocking reader's end of file while tracing is on:
			// not ours (the pipe polls), but harmless.
		default:
			return n, fmt.Errorf("tracefs: %v", err)
		}
	}
}
