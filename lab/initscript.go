package lab

import (
	"fmt"
	"strings"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
)

// The guest reports on its serial console in sections between marker lines
// that carry a nonce fresh for every run, so that no kernel message and no
// trace line can be taken for one:
//
//	@@tmigr-lab 5f0c9a1e2b7d4c3a begin uname
//	6.12.117+deb13-cloud-amd64
//	@@tmigr-lab 5f0c9a1e2b7d4c3a end uname
//	...
//	@@tmigr-lab 5f0c9a1e2b7d4c3a begin trace.gz.b64
//	H4sIAAAAAAAAA+y9W3PbRpYw+j6/AqWHr...
//	@@tmigr-lab 5f0c9a1e2b7d4c3a end trace.gz.b64
//	@@tmigr-lab 5f0c9a1e2b7d4c3a done
//
// or, when something in the guest fails, "@@tmigr-lab NONCE error WHAT".
// Lines "@@tmigr-lab NONCE stage WHAT" outside the sections tell the host
// how far the guest got (booted, recording, dumping).
// The trace travels gzip-compressed and base64-encoded: a tenth of the
// bytes through the emulated UART, immune to the tty's line-end
// translation, and checked end to end by gzip's CRC.
const markerPrefix = "@@tmigr-lab"

// Section names, in the order the guest prints them.
const (
	secUname   = "uname"
	secVersion = "version"
	secCmdline = "cmdline"
	secNodes   = "nodes"
	secOnline  = "online"
	secDmesg   = "dmesg"
	secTrace   = "trace.gz.b64"
)

// settle is how long the loads run before the recording starts, so that
// the trace shows them in their steady state rather than starting up.
const settle = 500 * time.Millisecond

// guestPlan is everything /init needs to know.
type guestPlan struct {
	Nonce    string
	BufferKB int
	Events   []string // under events/: "timer/timer_start", "timer_migration", "timer/hrtimer_*"
	Duration time.Duration

	// The load, run by one guest program; none when all three are empty.
	Busy, Sleepers, RTSleepers cpumask.Mask
	// TimerLoads are the other loads by the guest program's flag
	// ("timerfd"), the empty ones left out.
	TimerLoads   []planLoad
	Period       time.Duration
	Absolute     bool
	FIFOPrio     int
	Housekeeping cpumask.Mask

	// At are the run-time changes, made by the guest program's "at"
	// command from the start of the recording.
	At []ftrace.Change

	// Tools runs tmigr itself before the recording (tools.go).
	Tools bool
}

// optionalGroup is the event group that a kernel may lack.
const optionalGroup = "timer_migration"

// wheelEvents are the timer wheel's events of the "timer" group, the set the
// first recordings in testdata/traces hold.
var wheelEvents = []string{"timer_init", "timer_start", "timer_expire_entry", "timer_expire_exit", "timer_cancel"}

// events returns the trace events a recording of s enables.
func (s *Spec) events() []string {
	var ev []string
	for _, e := range wheelEvents {
		ev = append(ev, "timer/"+e)
	}
	if s.HRTimers {
		// A glob, expanded in the guest: the hrtimer events differ
		// between kernel versions (hrtimer_init became hrtimer_setup).
		ev = append(ev, "timer/hrtimer_*")
	}
	return append(ev, "timer_migration")
}

func (s *Spec) plan(nonce string) guestPlan {
	return guestPlan{
		Nonce:        nonce,
		BufferKB:     s.BufferKB,
		Events:       s.events(),
		Duration:     s.Duration,
		Busy:         s.Busy,
		Sleepers:     s.Sleepers,
		RTSleepers:   s.RTSleepers,
		TimerLoads:   s.planLoads(),
		Period:       s.Period,
		Absolute:     s.Absolute,
		FIFOPrio:     s.FIFOPrio,
		Housekeeping: s.housekeeping(),
		At:           s.At,
		Tools:        s.ToolsDir != "",
	}
}

func (p *guestPlan) hasPartition() bool {
	for _, c := range p.At {
		if c.Kind == ftrace.ChangePartition {
			return true
		}
	}
	return false
}

// planLoad is one timer load of a plan.
type planLoad struct {
	Flag string
	CPUs cpumask.Mask
}

func (s *Spec) planLoads() []planLoad {
	var out []planLoad
	for _, t := range s.timerLoads() {
		if !t.m.Empty() {
			out = append(out, planLoad{t.name, *t.m})
		}
	}
	return out
}

func (p *guestPlan) hasLoad() bool {
	return !p.Busy.Empty() || !p.Sleepers.Empty() || !p.RTSleepers.Empty() || len(p.TimerLoads) > 0
}

// guestArgs is the guest program's command line (after its path).
func (p *guestPlan) guestArgs() []string {
	args := []string{"run"}
	for _, l := range []struct {
		flag string
		m    cpumask.Mask
	}{{"-busy", p.Busy}, {"-sleepers", p.Sleepers}, {"-rt-sleepers", p.RTSleepers}} {
		if !l.m.Empty() {
			args = append(args, l.flag, l.m.String())
		}
	}
	for _, l := range p.TimerLoads {
		args = append(args, "-"+l.Flag, l.CPUs.String())
	}
	if !p.Sleepers.Empty() || !p.RTSleepers.Empty() || len(p.TimerLoads) > 0 {
		args = append(args, "-period", p.Period.String())
		if p.Absolute {
			args = append(args, "-abs")
		}
	}
	if !p.RTSleepers.Empty() {
		args = append(args, "-fifo-prio", fmt.Sprint(p.FIFOPrio))
	}
	return append(args, "-housekeeping", p.Housekeeping.String(), "-ready", guestReadyFile)
}

// seconds prints d for busybox sleep, which takes fractions.
func seconds(d time.Duration) string {
	ms := d.Milliseconds()
	return fmt.Sprintf("%d.%03d", ms/1000, ms%1000)
}

// initScript returns /init: a busybox shell script that mounts what the
// recording needs, enables the events, starts the load pinned to its CPUs,
// records, prints its sections on the console and powers the guest off.
// Every failure is reported as an error line, then the guest powers off:
// a guest never hangs waiting for the host's timeout.
func initScript(p guestPlan) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("#!/bin/sh")
	w("# /init of a tmigr lab guest, written by lab.initScript: record the timer")
	w("# and timer_migration trace events while a load runs, print them on the")
	w("# console, power off.")
	w("export PATH=/bin")
	// The Go runtime would otherwise signal the busy loops every 10ms to
	// preempt them: an interrupt on every loaded CPU that the load
	// itself does not cause.
	w("export GODEBUG=asyncpreemptoff=1")
	w("M='%s %s'", markerPrefix, p.Nonce)
	w("export T=/sys/kernel/tracing")
	// A guest that powers off while the console still holds output
	// loses it: poweroff does not wait for the serial port to drain, and
	// on a starved host the end of the trace was cut off so (an 18-vCPU
	// 7.3 guest at load 20). "tmigr-guest drain" waits until the console
	// has sent everything (tcdrain).
	w(`off() { %s drain; poweroff -f; }`, guestBinary)
	w(`fail() { dmesg -n 1; echo "$M error $*"; off; }`)
	w(`put() { n=$1; shift; echo "$M begin $n"; "$@"; echo "$M end $n"; }`)
	w("mount -t proc proc /proc || fail mount /proc")
	w("mount -t sysfs sysfs /sys || fail mount /sys")
	w("mount -t devtmpfs devtmpfs /dev || fail mount /dev")
	w("mount -t tracefs tracefs $T || fail mount tracefs")
	if p.hasPartition() {
		w("mount -t cgroup2 cgroup2 /sys/fs/cgroup || fail mount cgroup2")
	}
	w("mkdir -p /run")
	w(`echo "$M stage booted"`)
	// From here on the kernel's messages stay in its log (the dmesg
	// section) instead of cutting into our lines on the console.
	w("dmesg -n 1")
	w("echo 0 > $T/tracing_on || fail tracing_on")
	w("echo nop > $T/current_tracer || fail current_tracer")
	w("echo %d > $T/buffer_size_kb || fail buffer_size_kb %d", p.BufferKB, p.BufferKB)
	for _, e := range p.Events {
		switch {
		case strings.Contains(e, "*"):
			w("for e in $T/events/%s/enable; do echo 1 > \"$e\" || fail enable event $e; done", e)
		case e == optionalGroup:
			// Kernels before 6.9 have no timer migration hierarchy
			// and so no such events: the recording then holds the
			// wheel's alone.
			w("[ ! -d $T/events/%s ] || echo 1 > $T/events/%s/enable || fail enable event %s", e, e, e)
		default:
			w("echo 1 > $T/events/%s/enable || fail enable event %s", e, e)
		}
	}
	for _, l := range p.TimerLoads {
		if l.Flag == "tcp" {
			// The TCP load talks over loopback, which comes up down.
			w("ip link set lo up || ifconfig lo 127.0.0.1 up || fail bringing up the loopback interface")
		}
	}
	if p.hasLoad() {
		w("taskset -c %s %s %s &", p.Housekeeping, guestBinary, strings.Join(p.guestArgs(), " "))
		w("G=$!")
		w("i=0")
		w("while [ ! -e %s ]; do", guestReadyFile)
		w("\tkill -0 $G 2>/dev/null || fail the load exited before it was ready")
		w("\ti=$((i+1)); [ $i -le 400 ] || fail the load was not ready after 20 s")
		w("\tsleep 0.05")
		w("done")
		w("sleep %s", seconds(settle))
	}
	if p.Tools {
		toolsPhase(w, p)
	}
	w("echo > $T/trace")
	w("echo 1 > $T/tracing_on || fail tracing_on")
	if len(p.At) > 0 {
		// Right after tracing_on: the changes' times count from here.
		pid := ""
		if p.hasLoad() {
			pid = " -pid $G"
		}
		w("taskset -c %s %s at%s -for %v -say \"$M stage\" -changes '%s' &", p.Housekeeping, guestBinary, pid, p.Duration, ftrace.FormatChanges(p.At))
		w("A=$!")
	}
	w(`echo "$M stage recording %v"`, p.Duration)
	if len(p.At) > 0 {
		// It ends at the recording's end, later when a change took
		// longer than planned.
		w("wait $A || fail the run-time changes failed")
	} else {
		w("sleep %s", seconds(p.Duration))
	}
	w("echo 0 > $T/tracing_on")
	w(`echo "$M stage dumping"`)
	if p.hasLoad() {
		w("kill -0 $G 2>/dev/null || fail the load exited during the recording")
		w("kill $G; wait $G")
	}
	w("put %s uname -r", secUname)
	w("put %s cat /proc/version", secVersion)
	w("put %s cat /proc/cmdline", secCmdline)
	w(`put %s sh -c 'for n in /sys/devices/system/node/node[0-9]*; do echo "${n##*node} $(cat $n/cpulist)"; done'`, secNodes)
	w("put %s cat /sys/devices/system/cpu/online", secOnline)
	w("put %s dmesg", secDmesg)
	w("put %s sh -c 'gzip -c $T/trace | base64'", secTrace)
	if p.Tools {
		toolsDump(w)
	}
	w(`echo "$M done"`)
	w("off")
	return b.String()
}
