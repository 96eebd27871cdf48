package replay

import (
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/kernel"
)

// replayer is the state of one tmigr check: the operations of the trace
// and the model they drive, and the state of the parts that replay them,
// each a type of its own: what is known of the model's state
// (knowledge.go), who is in the hierarchy (members.go, changes.go), the
// remote rounds (remote.go) and the walks other operations interleave
// with (interleave.go). The replayer runs the operations in the order
// they take effect (run.go) and hands each to its part.
type replayer struct {
	// invariants: run hier.Check after every top-level model operation;
	// invErr is the first failure, depth the nesting of collect.
	invariants bool
	invErr     error
	depth      int
	line       int // the trace line of the operation being replayed
	pos        int // event index of the operation being replayed

	ev   []ftrace.Event
	x    *eventIndex // ev's kinds
	ties tieScratch  // orderTie's
	gm   *groupMap
	ops  []*op
	done []bool
	// spare: lists of lines given back for reuse (run.go, lineBuf);
	// sets: sets of CPUs given back (run.go, takeSet).
	spare [][]mline
	sets  []cpuSet
	// stamp and gen mark the CPUs seen by one look through a window of
	// operations (ignoredBefore): CPU c is seen when stamp[c] is gen.
	stamp []uint32
	gen   uint32
	clk   *clock
	rec   *recorder
	m     *model
	c     Counts
	boot  bool // the trace starts at the hierarchy's creation
	km    kernel.Model

	knowledge
	members
	remoteRounds
	walkState
}

// remoteRounds is the state of the remote rounds (remote.go).
type remoteRounds struct {
	rounds []*round // remote rounds in progress, innermost last
	// later: rounds replayed after the round whose expiry window they lie
	// in, with the wakeup they would have left in it and the kernel's.
	later map[int][2]int64
	// tiedBefore: rounds replayed before an activation printed just
	// ahead of them (roundBeforeTiedActivation), with that activation.
	tiedBefore map[int]int
	// wheel: targets' next global timers where the timer lines tell
	// (wheelNext).
	wheel map[int]uint64
	// witness and changes: per CPU, the rounds that show its event was
	// not due and the operations that could change it (notDueYet).
	witness, changes map[int][]int
	// spans: per CPU, the trace times of the remote expiries of its
	// timers (newtimer.go).
	spans map[int][][2]int64
	// lastRound: per CPU, its latest round replayed, with the wakeup it
	// found (claimReadBefore).
	lastRound map[int]roundWrite
	// waits: rounds waiting at a level's entry for the round whose
	// expiry they were replayed inside to end; starting: the one being
	// started (roundWait).
	waits    []*roundWait
	starting *roundWait
}

// roundWrite is a round as a later claim of its CPU may have seen it: its
// last line, and the CPU's wakeup before its final write.
type roundWrite struct {
	last   int
	before int64
}

// walkState is the state of the activations and deactivations that other
// operations interleave with (interleave.go): walks are those running in
// hier, innermost last; inWalk counts the operations replayed inside one
// of them; waiting holds the operations whose preResync is replaying
// others first; walked, per operation, that its walk was replayed.
type walkState struct {
	walks []*walkAt
	// walkBlock: the walkAts not yet taken (newWalk).
	walkBlock []walkAt
	inWalk    int
	waiting   []int // a set of a few at a time: a list, not a map written for every walk
	walked    []bool
	// splits: operations waiting in the middle of their walk for another
	// to end; pausing: the one being started.
	splits  []*split
	pausing *split
}

// members is who is in the hierarchy as the recording goes on: at its
// start (members.go), through the changes of the machine (changes.go) and
// the CPUs brought up and down (hotplug.go).
type members struct {
	busy     cpumask.Mask // the machine line's busy CPUs
	nohzFull cpumask.Mask
	avail0   []bool    // CPUs in the hierarchy when the recording starts
	at       []*change // the machine line's at= (changes.go)
	// firstTS: the trace time of the first event (not a marker), where
	// the machine line declares changes; startTS, always.
	firstTS, startTS int64
	// described: the trace has a machine line, so that an availability
	// change it does not list is the model's to explain.
	described bool
	broughtUp cpumask.Mask // boot traces: CPUs whose bring-up was seen
	// lostAtStart: CPUs whose evidence may be among lost events
	lostAtStart []bool
	exclude     bool // the kernel excludes isolated CPUs
	keyOn       bool // ... and its late initcall ran (boot traces)
	iso         hier.Isolation
}
