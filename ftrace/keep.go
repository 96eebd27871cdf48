package ftrace

import "strings"

// keeper copies the strings of events that are kept (ReadAll), so that
// they do not hold the Reader's buffers.
type keeper struct {
	payloads bool // keep the events' Payload (ReadAll), or drop it (ReadAllData)
	syms     interner
	texts    arena
	// last holds, per CPU, the task name and flags of its last event, as
	// interned: a CPU's events mostly repeat its last task and flags, and
	// comparing with them costs less than the interner's hashing.
	last []lastOfCPU
}

type lastOfCPU struct{ task, flags string }

// detach replaces ev's strings by copies where they are slices of the text
// read (text); a trace.dat's are copies already. The tracepoint's name
// needs none: it is the payload type's.
func (k *keeper) detach(ev *Event, text bool) {
	if !k.payloads {
		ev.Payload = ""
	}
	if !text {
		return
	}
	if c := ev.CPU; c >= 0 && c < 1<<16 {
		for c >= len(k.last) {
			k.last = append(k.last, lastOfCPU{})
		}
		l := &k.last[c]
		if ev.Task != l.task {
			l.task = k.syms.intern(ev.Task)
		}
		if string(ev.Flags) != l.flags {
			l.flags = k.syms.intern(string(ev.Flags))
		}
		ev.Task, ev.Flags = l.task, Flags(l.flags)
	} else {
		ev.Task = k.syms.intern(ev.Task)
		ev.Flags = Flags(k.syms.intern(string(ev.Flags)))
	}
	ev.Payload = k.texts.clone(ev.Payload)
	if m, ok := ev.Data.(TracingMark); ok {
		// The marker's text is its payload.
		m.Text = k.texts.clone(m.Text)
		ev.Data = m
	}
}

// interner shares one copy of each string among all its uses: the task
// names, flags and functions of a recording, few distinct values repeated
// in every event.
type interner map[string]string

func (in *interner) intern(s string) string {
	if c, ok := (*in)[s]; ok {
		return c
	}
	if *in == nil {
		*in = map[string]string{}
	}
	c := strings.Clone(s)
	(*in)[c] = c
	return c
}

// arena copies strings into blocks shared by many: one allocation for a
// block rather than one for each string. A strings.Builder only appends,
// so the strings taken from it stay as they were while it grows within
// its capacity; a string that does not fit starts a new block.
type arena struct{ b strings.Builder }

// arenaBlock is the size of an arena's block (a longer string has one of
// its own).
const arenaBlock = 64 << 10

func (a *arena) clone(s string) string {
	if s == "" {
		return ""
	}
	if a.b.Cap()-a.b.Len() < len(s) {
		a.b.Reset()
		a.b.Grow(max(arenaBlock, len(s)))
	}
	start := a.b.Len()
	a.b.WriteString(s)
	return a.b.String()[start:]
}
