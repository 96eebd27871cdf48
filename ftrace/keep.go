package ftrace

import (
	"hash/maphash"
	"strings"
)

// keeper copies the strings of events that are kept (ReadAll), so that
// they do not hold the Reader's buffers.
type keeper struct {
	payloads bool // keep the events' Payload (ReadAll), or drop it (ReadAllData)
	syms     interner
	share    sharing
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

// sharing gives the events a keeping Reader decodes one copy of each
// payload of a tracepoint whose payloads repeat, as the interner does
// their strings, and decodes such a payload's text once: an event holds
// its payload through a pointer, and a recording's group transitions are
// few texts (a group, its active and migrator masks, a child) that every
// CPU going idle or waking prints again. Decoding is a function of the
// tracepoint and the text alone, so that a text read before is the value
// decoded then. A tracepoint whose texts seldom repeat (most hold a
// time) stops being looked up once its first ones show it.
type sharing struct {
	rows []*shared // by tracepoint.id
}

// shared is one tracepoint's copies: a table of them by the hash of
// their text, each slot the last text that hashed there (a text whose
// slot another took is decoded again: the table bounds what sharing
// holds).
type shared struct {
	slots       []shareSlot
	looks, hits int
	off         bool
}

type shareSlot struct {
	// text is a copy (the Reader's buffer is read into again), written
	// over by the next text of the slot.
	text []byte
	p    Payload
}

const (
	// shareProbe is how many payloads of a tracepoint are looked up
	// before it is found to repeat (half of them found) or not.
	shareProbe = 1 << 12
	// shareSlots is the size of a tracepoint's table.
	shareSlots = 1 << 12
)

// shareSeed hashes the texts (any seed: the hash only spreads them).
var shareSeed = maphash.MakeSeed()

// lookup returns the payload decoded from text before, if its slot in
// t's table holds it; else the slot to keep it in once decoded, nil where
// t's texts are not shared.
func (sh *sharing) lookup(t *tracepoint, text string) (Payload, *shareSlot) {
	for t.id >= len(sh.rows) {
		sh.rows = append(sh.rows, nil)
	}
	s := sh.rows[t.id]
	if s == nil {
		s = &shared{slots: make([]shareSlot, shareSlots)}
		sh.rows[t.id] = s
	}
	if s.off {
		return nil, nil
	}
	if s.looks++; s.looks == shareProbe && 2*s.hits < s.looks {
		s.off, s.slots = true, nil
		return nil, nil
	}
	sl := &s.slots[maphash.String(shareSeed, text)&(shareSlots-1)]
	if sl.p != nil && string(sl.text) == text {
		s.hits++
		return sl.p, nil
	}
	return nil, sl
}

// put keeps p, decoded from text, in the slot.
func (sl *shareSlot) put(text string, p Payload) { sl.text, sl.p = append(sl.text[:0], text...), p }
