package replay

import (
	"fmt"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
)

// New first timers of idle CPUs (tmigr_cpu_new_timer).

// runNewTimer replays tmigr_cpu_new_timer: an idle CPU's first global
// timer may have changed.
func (r *replayer) runNewTimer(o *op) {
	c := o.cpu
	resynced := known
	if ci := r.m.h.CPU(c); !ci.Idle {
		// The kernel calls it only on an idle CPU: its deactivation is
		// missing from the trace (the model's CPU follows the CPU's own
		// operations, so this is no model error).
		why := first(*r.gk.at(r.topo.CPUGroup[c]), reasonMissing)
		st := r.m.states()
		g0 := r.topo.CPUGroup[c]
		s := st[g0]
		s.active &^= r.topo.CPUBit[c]
		if s.active == 0 {
			s.migrator = hier.MigratorNone
		} else if s.migrator == r.topo.CPUBit[c] {
			s.migrator = lowest(s.active)
			*r.gk.at(g0) = why
		}
		r.resyncTo(map[hier.GroupID]gstate{g0: s}, why)
		resynced = why
	}
	evWhy, wWhy := r.ek[c], r.wk[c]
	st := r.m.states()
	// The walk, if any, goes up to the first active group.
	pathWhy := resynced
	top := true
	for _, g := range r.topo.Path[c] {
		pathWhy = first(pathWhy, *r.gk.at(g))
		if st[g].active != 0 {
			top = false
			break
		}
	}
	if o.nextevt != hier.KtimeMax {
		r.ek[c] = known
	}
	var ret int64
	ml := r.collect(func() { ret = r.m.h.NewTimer(c, o.nextevt) })
	walked := len(only(ml, hier.EvCPUNewTimer)) > 0
	switch {
	case o.walked:
		r.qpos[c] = false // queued again, the kernel's walk printed
	case walked && evWhy != known:
		r.qpos[c] = true
	}
	if nt := only(ml, hier.EvCPUNewTimer); o.walked && walked {
		r.checkNS(r.ev[o.first()].Line, "tmigr_cpu_new_timer wakeup", first(resynced, wWhy), o.oldWakeup, nt[0].wakeup)
	}
	// With no new expiry nothing is walked whatever the event was.
	why := resynced
	if o.nextevt != hier.KtimeMax {
		why = first(why, evWhy)
		// While another CPU expires c's timers, the kernel walks nothing
		// (that CPU walks afterwards). Replayed inside that round, the
		// model does the same; next to it, the order is unknown.
		if !r.inRemoteOf(c) && r.remoteNear(c, r.ev[o.last()].TS) {
			why = first(why, reasonRace)
		}
	}
	if walked || o.walked {
		why = first(why, pathWhy)
		if top {
			why = first(why, r.qIdle(r.topo.Top))
		}
	} else {
		why = first(why, wWhy)
	}
	lw := why
	if walked == o.walked {
		lw = r.lateWhy(why, o.wakeup, ret)
	}
	r.check(r.ev[o.last()].Line, "tmigr_cpu_new_timer_idle", lw,
		fmt.Sprintf("walk=%v wakeup=%s", o.walked, fmtNS(o.wakeup)),
		fmt.Sprintf("walk=%v wakeup=%s", walked, fmtNS(ret)))
	r.wk[c] = known
	if ret != o.wakeup {
		r.wk[c] = first(why, reasonDiverged)
	}
	r.volatile()
}

// inRemoteOf reports whether a round being replayed is expiring cpu.
func (r *replayer) inRemoteOf(cpu int) bool {
	for _, rd := range r.rounds {
		if rd.cur >= 0 && r.ev[rd.o.targets()[rd.cur]].Data.(ftrace.TmigrHandleRemoteCPU).CPU == cpu {
			return true
		}
	}
	return false
}

// remoteNear reports whether the trace shows another CPU expiring cpu's
// timers around trace time ts: from its tmigr_handle_remote_cpu line to the
// last line of the walk that follows, give or take skewNS.
func (r *replayer) remoteNear(cpu int, ts int64) bool {
	if r.spans == nil {
		r.spans = map[int][][2]int64{}
		for _, o := range r.ops {
			for _, ti := range o.targets() {
				x := r.ev[ti].Data.(ftrace.TmigrHandleRemoteCPU).CPU
				end := r.ev[ti].TS
			walk:
				for _, i := range o.lines {
					if i <= ti {
						continue
					}
					switch r.ev[i].Data.(type) {
					case ftrace.TmigrUpdateEvents:
						end = r.ev[i].TS
					default:
						break walk
					}
				}
				r.spans[x] = append(r.spans[x], [2]int64{r.ev[ti].TS, end})
			}
		}
		r.roundsFromBefore()
	}
	for _, sp := range r.spans[cpu] {
		if ts >= sp[0]-skewNS && ts <= sp[1]+skewNS {
			return true
		}
	}
	return false
}

// roundsFromBefore adds to r.spans the remote expiries in progress when
// the recording began: a CPU whose first tmigr line is a claim
// (tmigr_handle_remote_cpu) or, in its timer softirq, an event update
// (the walk that follows an expiry) was in a round that began before the
// recording, and timers it expired before that line were another CPU's,
// which the trace does not name. Until that line any other CPU may have
// been the target, its remote flag set (tmigr_new_timer then walks
// nothing).
func (r *replayer) roundsFromBefore() {
	first := map[int]int{} // CPU -> index of its first tmigr line
	for _, o := range r.ops {
		if len(o.lines) == 0 {
			continue
		}
		if f, ok := first[o.cpu]; !ok || o.lines[0] < f {
			first[o.cpu] = o.lines[0]
		}
	}
	for h, f := range first {
		switch r.ev[f].Data.(type) {
		case ftrace.TmigrHandleRemoteCPU:
		case ftrace.TmigrUpdateEvents:
			// The walk after the expiry of the target, in the
			// softirq that runs the round.
			if !r.ev[f].Flags.SoftIRQ() {
				continue
			}
		default:
			continue
		}
		expired := false
		for i := 0; i < f && !expired; i++ {
			_, expired = r.ev[i].Data.(ftrace.TimerExpireEntry)
			expired = expired && r.ev[i].CPU == h
		}
		if !expired {
			continue
		}
		for c := range r.topo.NCPUs {
			if c != h {
				r.spans[c] = append(r.spans[c], [2]int64{r.ev[0].TS, r.ev[f].TS})
			}
		}
	}
}
