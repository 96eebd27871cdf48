package replay

import (
	"fmt"
	"strings"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/kernel"
)

// Changes made while the trace was recorded: the machine line's at= field.
//
// A change's time counts from the guest's start marker ("tracing_mark_write:
// tmigr-lab: start"), or from the first event of a trace without one, and
// says when the change was done: its effects in the kernel lie between the
// previous change's time and its own (an isolated partition of busy vCPUs
// can take seconds under QEMU TCG). Each change moves CPUs into or out of
// the hierarchy as the kernel model says: an offline CPU leaves and an
// online one comes back (unless the model excludes it); an isolated
// partition takes its CPUs out from 6.19 on (7dec062cfcf2; nohz_full CPUs
// and the timekeeper stay) and changes nothing before; timer_migration
// moves nobody (since 6.9 it only decides where hrtimers go).
//
// Every CPU whose membership a change could alter gives one decision
// ("availability"): the kernel's tmigr_cpu_available/unavailable (before
// 6.19 tmigr_cpu_online/offline) for that CPU within the change's window,
// or none, against the model's expectation. An availability event no
// change explains is a mismatch too, unless the trace does not describe
// its machine (then nothing says what was done to it).

// changeSlack is how far past its recorded time a change's effects may
// show: the time is rounded to the millisecond, and the trace clocks of
// two CPUs are not exactly in step.
const changeSlack = int64(2 * time.Millisecond)

// begunAfter returns the earliest time change i of at may have begun,
// since the recording started: the machine line gives when each change
// was done, and one is begun only once the change before it is (0 for
// the first).
func begunAfter(at []ftrace.Change, i int) time.Duration {
	if i == 0 {
		return 0
	}
	return at[i-1].At
}

// change is one element of the machine line's at=, in trace time.
type change struct {
	ftrace.Change
	begin, done int64          // its effects lie in [begin, done]
	diff        cpumask.Mask   // CPUs whose membership it alters (model)
	leave       cpumask.Mask   // ... of which those it takes out
	iso         hier.Isolation // the isolation once it is done
	seen        cpumask.Mask   // CPUs whose availability event it explained
	applied     bool           // its isolation was given to the model
	checked     bool           // its window closed
	stays       cpumask.Mask   // partition CPUs whose membership it leaves
	why         string         // the model's reason, for a mismatch
}

// whyUndescribed is why an availability event of a trace without a
// machine line is undetermined.
const whyUndescribed = "availability change the machine line does not describe"

// whyUndeclared is why an availability event that no change of the machine
// line explains is undetermined when a rule of the kernel allows it: a
// user's recording does not declare a hotplug, nor the isolated partition
// a container runtime makes when a pod starts.
const whyUndeclared = "run-time change the machine line does not declare"

// availabilityEvents are the tracepoints by which a kernel of the model
// reports a CPU leaving and joining the hierarchy: tmigr_cpu_offline and
// tmigr_cpu_online until 6.18, tmigr_cpu_unavailable and
// tmigr_cpu_available from the exclusion of isolated CPUs on (6.19), for
// hotplug and isolation alike.
func availabilityEvents(km kernel.Model) (leave, join string) {
	if km.Has(kernel.ExcludeIsolated) {
		return "tmigr_cpu_unavailable", "tmigr_cpu_available"
	}
	return "tmigr_cpu_offline", "tmigr_cpu_online"
}

// undeclaredCauses returns the changes the model's kernel allows that
// would make CPU c leave (or join, up) the hierarchy with the event the
// trace printed, none when no rule of that kernel explains it: CPU hotplug
// on every kernel with the hierarchy; an isolated cpuset partition made
// (or removed) from 6.19 on, for a CPU such a partition moves (not a
// nohz_full CPU, nor the timekeeper under nohz_full).
func (r *replayer) undeclaredCauses(c int, up bool, event string) []string {
	leave, join := availabilityEvents(r.km)
	if want := map[bool]string{false: leave, true: join}[up]; event != want {
		return nil
	}
	causes := []string{"CPU hotplug"}
	iso := r.iso
	if up {
		iso.CpusetIsolated.Clear(c)
	} else {
		iso.CpusetIsolated.Set(c)
	}
	var one cpumask.Mask
	one.Set(c)
	after, before := r.km.Excluded(iso, one), r.km.Excluded(r.iso, one)
	if after.Test(c) != before.Test(c) {
		verb := "made"
		if up {
			verb = "removed"
		}
		causes = append(causes, "an isolated cpuset partition "+verb)
	}
	return causes
}

// labStart is the marker the lab's guest writes as its recording starts.
const labStart = "tmigr-lab: start"

// ChangesStart returns the trace time the machine line's changes (at=)
// count from: the guest's start marker, else the first event.
func ChangesStart(events []ftrace.Event) int64 {
	for ei := range events {
		ev := &events[ei]
		if m, ok := ev.Data.(ftrace.TracingMark); ok && m.Text == labStart {
			return ev.TS
		}
	}
	if len(events) > 0 {
		return events[0].TS
	}
	return 0
}

// firstEventTS is the trace time of the first event that is not a trace
// marker (a window cut from a longer recording keeps the guest's start
// marker, from before its first event).
func firstEventTS(events []ftrace.Event) int64 {
	for ei := range events {
		ev := &events[ei]
		if _, mark := ev.Data.(ftrace.TracingMark); !mark {
			return ev.TS
		}
	}
	return 0
}

// planChanges computes, change by change, what the model expects of the
// machine's membership.
func (r *replayer) planChanges(s Shape, t *Trace) error {
	r.described = t.Header.Machine != nil || len(s.At) > 0
	if len(s.At) == 0 {
		return nil
	}
	base := t.changesStart()
	r.firstTS = firstEventTS(t.Events)
	online := cpumask.Range(0, s.CPUs-1)
	var partition cpumask.Mask
	iso := r.iso
	out := r.km.Excluded(iso, online)
	for i, c := range s.At {
		k := &change{Change: c, begin: base + int64(begunAfter(s.At, i)) - changeSlack, done: base + int64(c.At) + changeSlack}
		switch c.Kind {
		case ftrace.ChangeOffline:
			online.Clear(c.CPU)
		case ftrace.ChangeOnline:
			online.Set(c.CPU)
		case ftrace.ChangePartition:
			old := partition
			partition = c.CPUs
			var err error
			if iso, err = s.isolation(r.km, partition); err != nil {
				return err
			}
			k.stays = old.Or(partition)
		}
		next := r.km.Excluded(iso, online).Or(cpumask.Range(0, s.CPUs-1).AndNot(online))
		k.diff = out.AndNot(next).Or(next.AndNot(out))
		k.leave = next.AndNot(out)
		k.stays = k.stays.AndNot(k.diff)
		k.iso = iso
		k.why = r.changeWhy(k)
		out = next
		r.at = append(r.at, k)
	}
	return nil
}

// changeWhy says why the model expects what it does of a change.
func (r *replayer) changeWhy(k *change) string {
	switch k.Kind {
	case ftrace.ChangeOffline, ftrace.ChangeOnline:
		return k.Change.String()
	case ftrace.ChangePartition:
		moved := k.diff.Or(k.stays)
		if c := moved.First(); c >= 0 {
			if w := r.km.ExcludedWhy(k.iso, c); w != "" {
				return k.Change.String() + ": " + w
			}
		}
	}
	return k.Change.String()
}

// closeChanges closes the windows of the changes done before trace time
// ts (all of them with ts = maxNS): a CPU the model expected to move that
// the kernel did not move is a mismatch, one it expected to stay that
// stayed a match.
func (r *replayer) closeChanges(ts int64, line int) {
	for _, k := range r.at {
		if k.checked || k.done >= ts {
			continue
		}
		k.checked = true
		r.applyChange(k)
		for c := k.diff.First(); c >= 0; c = k.diff.Next(c) {
			if k.seen.Test(c) {
				continue
			}
			if k.begin < r.firstTS {
				// Its window began before the recording's first
				// event (a window cut from a longer recording): the
				// availability event may lie before it.
				r.decide(line, "availability", reasonPartial, false, "", "")
				continue
			}
			if ts == maxNS && k.done > r.ev[len(r.ev)-1].TS {
				// Its window ends after the recording's last event:
				// the availability event may lie beyond it.
				r.decide(line, "availability", reasonPartial, false, "", "")
				continue
			}
			if r.lostIn(c, k.begin, k.done) {
				// Its availability event may be among them.
				r.decide(line, "availability", reasonLost, false, "", "")
				continue
			}
			verb, none := "joins", "tmigr_cpu_available"
			if k.leave.Test(c) {
				verb, none = "leaves", "tmigr_cpu_unavailable"
			}
			r.decide(line, "availability", known, false,
				fmt.Sprintf("CPU %d: no %s by %v", c, none, k.At),
				fmt.Sprintf("CPU %d %s the hierarchy (%s)", c, verb, k.why))
			// The model follows the kernel: the CPU keeps its place.
			if k.leave.Test(c) {
				r.m.forceIn(c)
			}
		}
		for c := k.stays.First(); c >= 0; c = k.stays.Next(c) {
			if !k.seen.Test(c) {
				r.decide(line, "availability", known, true, "", "")
			}
		}
	}
}

// applyChange gives the model the isolation a change leaves.
func (r *replayer) applyChange(k *change) {
	if k.applied {
		return
	}
	k.applied = true
	if k.Kind == ftrace.ChangePartition {
		r.iso = k.iso
		r.m.setIsolation(k.iso)
	}
}

// explainAvailability decides an availability event of CPU c at trace
// time ts (up: it joins the hierarchy): which change made it, and whether
// the model expected it; one no change explains is a mismatch, and the
// model follows the kernel.
func (r *replayer) explainAvailability(c int, up bool, ts int64, line int, event string) {
	for _, k := range r.at {
		if k.checked || ts < k.begin || ts > k.done || !k.diff.Test(c) || k.seen.Test(c) || k.leave.Test(c) == up {
			continue
		}
		k.seen.Set(c)
		r.applyChange(k)
		r.decide(line, "availability", known, true, "", "")
		return
	}
	verb := "left"
	if up {
		verb = "joined"
	}
	why := known
	if !r.described {
		why = reasonUndescribed
	} else if len(r.at) == 0 {
		// A machine line that lists changes (the lab's recorder) lists
		// every one it made; one that lists none (a user's recording)
		// says nothing of what was done to the machine meanwhile.
		if causes := r.undeclaredCauses(c, up, event); len(causes) > 0 {
			r.c.infer(Inference{Line: line, CPU: c, Event: event, Causes: causes})
			why = reasonUndeclared
		}
	}
	var ch []string
	for _, k := range r.at {
		if !k.checked && ts >= k.begin && ts <= k.done {
			ch = append(ch, k.Change.String())
		}
	}
	model := "no change of the machine line moves it"
	if len(ch) > 0 {
		model = "not moved by " + strings.Join(ch, "; ")
	}
	leave, join := availabilityEvents(r.km)
	switch w := r.km.ExcludedWhy(r.iso, c); {
	case event != leave && event != join:
		model += fmt.Sprintf(" (this kernel prints %s and %s)", leave, join)
	case w != "":
		model += " (" + w + ")"
	case len(ch) > 0 && !r.km.Has(kernel.ExcludeIsolated):
		model += " (before 6.19 an isolated partition leaves the hierarchy alone)"
	}
	r.decide(line, "availability", why, false, fmt.Sprintf("CPU %d %s the hierarchy (%s)", c, verb, event),
		fmt.Sprintf("CPU %d: %s", c, model))
	if up {
		r.m.forceIn(c) // the model follows the kernel
	}
}

// lostIn reports whether cpu's buffer lost events between trace times
// from and to.
func (r *replayer) lostIn(cpu int, from, to int64) bool {
	for ei := range r.ev {
		ev := &r.ev[ei]
		if ev.TS > to {
			break
		}
		switch ev.Data.(type) {
		case ftrace.Lost, ftrace.BufferStarted:
			if ev.CPU == cpu && ev.TS >= from {
				return true
			}
		}
	}
	return false
}
