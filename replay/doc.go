// Package replay drives tmigr's core from a recorded kernel trace and
// compares, decision by decision, what our model computes with what the
// kernel printed.
//
// Five checks exist. The wheel check (wheel.go) recomputes the bucket of
// every timer_start with package wheel. The placement check
// (placement.go) holds the CPU every wheel timer and hrtimer was queued on
// against the kernel's rule of its version (push at enqueue up to 6.8,
// local since 6.9, hrtimers by kernel.timer_migration). The nextevt check (nextevt.go),
// run with the tmigr check, rebuilds every CPU's timer bases from the
// timer lines in a cpu.Set and holds every nextevt the kernel printed in
// tmigr_cpu_idle and tmigr_cpu_new_timer_idle (the first global timer a CPU
// hands the hierarchy, the input the tmigr check takes as given) against
// what our tick and timer code hand over: at each such line the CPU's
// tick.CPU runs a round of its idle loop (tick_nohz_idle_stop_tick), which
// must stop the tick, or re-evaluate a stopped one, and hand the hierarchy
// the kernel's value. The hrtimer check (hrtimer.go), on
// traces with hrtimer events, asks package hrtimer for the mode of every
// sleeper's hrtimer from its task's policy and compares it with the mode the
// kernel started it in and the context, hard or soft, it expired in. The
// tmigr check (tmigr.go) feeds
// the inputs of the migration hierarchy that the trace shows into package
// hier, on the topology of the machine the trace describes, and compares
// every decision:
//
//   - the wakeup every tmigr_cpu_idle prints (Deactivate's result);
//   - whether every tmigr_cpu_new_timer_idle walked (a tmigr_cpu_new_timer
//     line precedes it) and its wakeup (NewTimer's result);
//   - the active mask and migrator after every group transition
//     (tmigr_group_set_cpu_active/inactive), and that the walk went through
//     the same groups;
//   - the groups every remote round visited and the CPUs it expired, in
//     order (one tmigr_handle_remote round);
//   - the stored wakeups the per-CPU events print (tmigr_cpu_active,
//     tmigr_cpu_new_timer, tmigr_handle_remote_cpu, tmigr_cpu_available):
//     values earlier decisions left;
//   - the kernel's boot line "Timer migration: ..." when the file carries
//     it, against hier's sizing of the machine.
//
// Each check is a Check (checks.go): Run runs those Options selects over
// one Input, the trace and its machine, and Result.Checks holds what each
// counted.
//
// A recording starts in the middle of a running system: group states,
// queued events and wakeups from before it are not in it. What a decision
// depends on and the trace cannot tell makes it undetermined, counted apart
// from matched and mismatched with its reason (Counts.UndeterminedReasons);
// the replay never guesses. A difference between the model and the kernel
// on a decision whose inputs are all known is a mismatch.
//
// # Long recordings
//
// ReadFile and Run hold a whole recording. RunFile reads it as a stream and
// checks one longer than a segment (Options.Segment, a million events by
// default) a segment at a time (segment.go): each segment is replayed with
// the events of a margin before and after it (Options.Margin, 65,536, more
// than the farthest the checks read ahead), as a recording of its own, and
// counts only the decisions made on the lines it owns. The owned lines tile
// the recording, so every decision is counted once, by the segment that
// holds what it reads around it; the margin before replays the history
// from which the state is known again. A decision the margin does not
// settle is undetermined, as at the start of any recording. The machine
// line's changes count from the recording's start in every segment.
//
// # The machine
//
// The "# machine:" line (or Options) gives the possible CPUs, the nodes and
// their CPUs, HZ, the kernel release, the isolation parameters of the
// command line, the busy CPUs and the changes made while it was recorded
// (at=). The hierarchy is built by preparing CPUs 0 to N-1 in order, as the
// kernel brings them up. The release selects the kernel model (package
// kernel): the exclusion of isolated CPUs (7dec062cfcf2, 6.19) is modelled
// for 6.19 and later, with the static key on from the start unless the
// trace starts at boot; 6.9 to 6.18, and traces that name no release
// (DefaultKernel), keep isolated CPUs in the hierarchy.
//
// # Who is in the hierarchy
//
// The model says which CPUs are in: every online CPU before 6.19, all but
// the isolated ones after (nohz_full CPUs and, under nohz_full, the
// timekeeper stay). The trace says it too (members.go): a CPU is in when it
// prints tmigr lines of its own, when its bit is set in a group state, or
// when another CPU expires its timers; a busy CPU the model keeps in, not
// nohz_full, is active all the time, so a printed state of a group above
// it that leaves its branch idle shows it out. Each CPU whose membership
// the trace shows is one decision, "hierarchy membership"; where model and
// kernel differ, the model takes the kernel's membership for the rest of
// the recording. A CPU that neither is busy nor ever shows is idle without
// events or out, which no decision can tell: it is taken as out, so that
// nothing depends on it (a CPU the kernel left out is known out, not
// untraced). Replaying a 6.19+ recording with busy isolated CPUs under the
// 6.18 model, or a 6.12 one under the 6.19 model, therefore reports
// membership mismatches.
//
// The changes of the machine line's at= (changes.go) move CPUs in and out
// as the model says: offline and online, and an isolated cpuset partition
// from 6.19 on; timer_migration moves nobody. Every CPU a change moves (or
// could move: a partition's CPUs on older kernels) is one "availability"
// decision: the kernel's tmigr_cpu_available/unavailable (online/offline
// before 6.19) within the change's window, or its absence, against the
// model; an availability event no change explains is a mismatch, except in
// a trace without a machine line. A change's time counts from the guest's
// start marker (tracing_mark_write "tmigr-lab: start") and says when it was
// done; its effects lie between the previous change and it.
//
// # Groups
//
// The kernel prints groups as hashed pointers. Every walk climbs the path
// of one CPU, so the group of level l in an operation of CPU c is the l-th
// group of c's path in our topology; a trace from boot also names them by
// creation (the i-th tmigr_group_set of level l is GRPl:i) and connection.
// A pointer naming two groups, a group with two pointers, or a level, node,
// parent or child bit that differs from ours is a "topology" mismatch, and
// the check stops there: the kernel built another tree.
//
// # Operations
//
// The lines a CPU prints during one call of a hierarchy entry point form an
// operation (ops.go): an activation (tmigr_cpu_active and its group
// transitions), a deactivation (group transitions, event updates,
// tmigr_cpu_idle), a new timer (tmigr_cpu_new_timer and its updates, then
// tmigr_cpu_new_timer_idle, or that line alone when nothing was walked), a
// remote round (tmigr_handle_remote per group visited, tmigr_handle_remote_cpu
// per CPU expired with that CPU's timer lines and walk), a CPU going online
// or offline. The kernel calls them with interrupts off, so one CPU's lines
// never mix two operations. Operations are replayed one by one in the order
// they take effect: a deactivation, a new timer or a round at its first
// line, an activation at its first transition (tmigr_cpu_active comes just
// before it). Lines of different CPUs with one timestamp are printed in no
// order that tells which ran first: where a tie's printed order does not
// chain the group states its transitions print and another order does,
// each CPU's own operations kept in their order, the tie runs in that
// order (ties.go).
//
// Other CPUs do not stop meanwhile. Seven interleavings are replayed as the
// trace shows them:
//
//   - A round runs the expired CPU's timers with no lock held. Operations of
//     other CPUs that begin after the round did and before the round's next
//     line are replayed inside the model's Expirer.ExpireRemote, where that
//     window is in hier: the target may wake up meanwhile, and the walk that
//     follows then sees it. So is an operation of the round's own CPU
//     printed wholly inside a callback of the expiry: callbacks run with
//     interrupts on, and on a nohz_full CPU an interrupt's exit may stop
//     the tick and deactivate the CPU (tick_irq_exit). Another CPU's round
//     replayed there that printed a later level's line after the outer
//     round's line for its next level waits at that level's entry (no lock
//     held) until the outer round has ended: the outer round checked its
//     level's migrator before its own line, the inner one after its own
//     (roundWait).
//   - A round prints tmigr_handle_remote as it enters a group, before it
//     checks its migrator and takes the group's lock
//     (tmigr_handle_remote_up, kernel/time/timer_migration.c, 6.9+), and
//     tmigr_handle_remote_cpu prints the target's wakeup, read under the
//     target's lock, as it claims the target (and resets the wakeup). When
//     the claim's wakeup is not the model's, and operations of the target
//     itself lie wholly between the round's tmigr_handle_remote and the
//     claim, they came first: they are replayed in hier's Tracer call for
//     the group (no lock held), before the dequeue and the claim. The
//     target's own round reads its wakeup for its fast exit before it
//     prints anything and writes it at its end: a claim that printed
//     KTIME_MAX where the model still held the target's wakeup saw that
//     write. Where the claim printed the model's value, the target's
//     operation is left to the expiry's window (it ended after the claim).
//   - Per-CPU buffers are merged by timestamp, and a CPU's line trails its
//     compare-and-swap. When an operation's transition starts from another
//     state than the model's, and the next pending operation of another CPU,
//     within a millisecond, leads exactly from the model's state to that
//     one, that operation is replayed first.
//   - A deactivation's compare-and-swap and its event update are two steps
//     (__tmigr_cpu_deactivate, tmigr_inactive_up, tmigr_update_events in
//     kernel/time/timer_migration.c, 6.9+): the update reads the group's
//     state again under the lock, and at the top an idle state makes the
//     result the top's first event, an active one KTIME_MAX. The
//     tmigr_update_events line prints the state it read (group_active, and
//     child_active above level 0). When that is not the state the walk's
//     own transition left, and the next pending operation of another CPU,
//     within a millisecond, leads from the one to the other (a
//     deactivation, whose CPU event was un-ignored before its walk, or an
//     activation), that operation is replayed between the two, inside
//     hier's Tracer call that follows the compare-and-swap (no group lock
//     is held there; interleave.go). An operation whose line the merged
//     trace put first, and that the previous rule replays second, may so
//     run inside the very walk it waited for. It runs whole, its event
//     update included, unless the kernel printed its update of that group
//     after the interrupted walk's: tmigr_update_events is printed under
//     the group's lock, so the printed order of two updates of one group
//     is their lock order. Then the interrupted walk's update queued its
//     new event first, and the other CPU's update, finding the top idle,
//     may return that very event. That operation (a deactivation) is split:
//     it runs on a goroutine of its own up to its compare-and-swap, waits
//     there in hier's Tracer call while the interrupted walk ends (its
//     update was its last step: another CPU's compare-and-swap changed
//     the group only because the walk left it active, so it stops there),
//     and then goes on to its update. One goroutine runs at a time.
//   - tmigr_inactive_up reads the child group's state again before its
//     compare-and-swap of the parent, and leaves the child's bit set if
//     the child is active: another CPU activated it after the walk's
//     compare-and-swap below. Where the parent's printed state keeps the
//     bit and no event update was printed in between (a KTIME_MAX event
//     returns from tmigr_update_events unprinted), the next pending
//     operation of another CPU that makes the child active is replayed
//     there. Its own activation of the parent then finds the bit still
//     set: tmigr_active_up or-es it in, so an activation above level 0
//     may start from a state that already has it.
//   - A walk's CPU may stall between two levels (a vCPU descheduled). Each
//     transition's line is printed right after its compare-and-swap, so
//     the activations and deactivations of other CPUs printed clearly
//     before (by more than skewNS) a walk's transition above its first
//     group ran before that compare-and-swap: they are replayed at hier's
//     Point before it (catchUp), each CPU's in its order.
//   - A CPU whose transitions the trace lacks altogether (see below).
//
// # What the trace reveals, and what is unknown
//
// The replay keeps, beside the model, whether each part of the model's state
// is the kernel's: every group's state word, every CPU's event, every
// group's event in its parent, every CPU's wakeup. A decision is determined
// when everything it reads is known:
//
//   - a transition reads the states of the groups up to its level;
//   - a deactivation's result reads the same, and, when the walk leaves the
//     top group idle (no other CPU active) or its update finds it so, the
//     top group's queue: every idle CPU's event as propagated;
//   - a new timer reads the CPU's event (whether it walks; not for
//     KTIME_MAX, which never walks), its stored wakeup if it does not walk,
//     else the groups up to the first active one, and the top's queue if
//     none is;
//   - a round reads the states up its path as long as it is migrator (and
//     its wakeup if it is not the migrator of its own group: the fast exit),
//     the queues of the groups it handles, now, and the next global expiry
//     of every CPU it expires. Events of one expiry are dequeued in the
//     order they were queued in (timerqueue_add puts an event after its
//     equals); where one of them was queued before the recording (a
//     CPU's first new timer or deactivation, which may have found its
//     event queued with that very expiry and left it in place), the
//     model's queues are put in the order the round claimed them, and the
//     round is undetermined ("event from before the recording").
//
// The start of the recording is inferred where the trace reveals it. A
// group's state before its first transition follows from the state that
// transition printed (the kernel prints every compare-and-swap, so nothing
// changed it before): an activation added the CPU's bit and took the
// migrator role only if there was none; a deactivation cleared the bit and,
// if it was the migrator, handed the role to the lowest remaining bit, so
// when the printed migrator is that bit the old one may have been either
// (unknown until printed again: "migrator from before the recording").
// The first transition itself is undetermined: it is what the state was
// inferred from. A CPU that never transitions in the recording is in one
// state throughout: idle if it publishes a new timer or is expired
// remotely, else active if a task runs on it (and it is not nohz_full); a
// group none of whose CPUs transitions then has a known active mask (and
// migrator, unless several children are active). A remote round that
// visits the top group with an unknown migrator and nothing queued there
// does the same whichever child is the migrator. A CPU whose first
// operation is a deactivation was active (its event is ignored: known); a
// CPU idle when the recording began has an unknown event until it publishes
// one (tmigr_cpu_idle, a walking new timer, a remote expiry's walk, or a
// tmigr_cpu_new_timer_idle that did not walk with an expiry: its event
// already was that). Such an unknown event does not count for a round of
// its own group when a later round of that group handled it completely
// (its walk went on to the parent) without expiring the CPU, and nothing
// could change the event in between: it was not due then, so not before
// either. Wakeups are unknown until an operation sets them
// (deactivation, walking new timer, activation, round) or a line prints
// them and the model agrees. Group events follow the events they are
// computed from (hier's Tracer reports every update as it happens); an
// unknown CPU event makes the events above it unknown until they are
// computed again from known ones. A trace that starts at boot (its first
// tmigr line creates a group) holds everything: nothing is unknown.
//
// A discrepancy between the model's state and the state a transition
// implies is an interleaving (above), unknown state (the model is then set
// to the kernel's, through hier's public entry points: a new hierarchy
// whose CPUs are activated top-down along the migrator chains, then the
// idle CPUs' events published, see model.seed), or a mismatch: a CPU that
// traces its transitions cannot change unseen, so nothing else explains
// it. A CPU whose transitions the trace never shows, although other CPUs'
// lines show it change (the 6.18 recordings' CPU 1: its idle-path
// tracepoints are all missing), is untraced: its state and event are
// unknown at every moment, and so is whatever depends on them. The
// evidence of a CPU's state besides its own lines: its bit in other CPUs'
// transitions, a remote expiry of its timers (it was idle), a task running
// on it (it was active, unless it is nohz_full or the trace shows it idle
// under a task). Lost events (a "[LOST n EVENTS]" or "buffer started"
// marker, which the kernel prints before the CPU's next event, the events
// having been lost after its previous one) make that CPU untraced from its
// last line before the marker to its first after: its state, event and
// wakeup and the states of the groups on its path are unknown there, and
// stay so until the trace shows them again; every decision that reads them
// is undetermined with the reason "events lost", never a mismatch. The
// wheel, nextevt and hrtimer checks likewise leave undetermined what a lost
// timer line of that CPU could explain. A deactivation the recording's
// end (or lost events) cut after its first transitions made those
// compare-and-swaps, and other CPUs' walks may have read them: it is
// replayed as a deactivation, with the CPU event its level-0 update
// printed (or an unknown one), and what it did not print (its later
// transitions, its tmigr_cpu_idle) is undetermined. A new timer printed while
// another CPU expires that CPU's timers (the kernel then walks nothing) is
// replayed inside that round; one the merged trace puts just beside it is
// undetermined.
//
// # Time
//
// See clock.go: nanoseconds and jiffies are tied by ns(J) = J·TICK_NSEC +
// off, with off found from the CPUs' published expiries and their timers'
// buckets; a round's now is bounded by the jiffies the trace shows before
// and after it. A round where an event falls between those bounds is
// undetermined unless the kernel and the model differ on something that
// no value of now explains (a mismatch). The model replays such a round
// with the earliest now at which the events the kernel expired were due,
// to stay in step with the kernel.
//
// # Remote rounds
//
// The model's HandleRemote asks an Expirer (remote.go) to run the target's
// timers, and then for the target's next global expiry: the nextevt of the
// level-0 tmigr_update_events the kernel printed for that target. At an
// idle top, the walk after a remote expiry prints nothing (on the 6.19+
// machines whose only available CPU expires its own timers, every round);
// then the timer lines tell the expiry: in a trace from boot, which holds
// every timer, always; otherwise when no timer armed before the recording
// can still be pending on the target and due no later, and the answer lies
// within the recording. Else it is unknown.
//
// A round of another CPU that expires nothing, printed during a remote
// expiry whose walk printed nothing, read the groups' queues before or
// after that walk requeued the target's event (tmigr_handle_remote_up
// reads the group's next expiry under its lock; tmigr_update_events takes
// it for the walk): the trace does not show which. Its result, its CPU's
// wakeup, is printed by that CPU's next tmigr_cpu_active,
// tmigr_cpu_new_timer or non-walking tmigr_cpu_new_timer_idle, or by the
// next claim of it. The replay puts the round in the expiry's window
// (before the walk) unless the kernel's value is not what it would read
// there, and then after the handler's round. Where the two orders give
// different values and the kernel's is one of them, the decision that
// prints it is undetermined ("round before or after a walk, order not
// printed"); where the kernel's is neither, it is a mismatch.
//
// A printed walk leaves the same question where the round's read of a
// group falls between its tmigr_handle_remote line of that group (printed
// before it takes the group's lock) and its next line, and the walk's
// update of that group (printed under the lock) was printed in between.
// There the round is replayed in the expiry's window, before the walk;
// where its CPU's next printed wakeup is not what that gives but is what
// the round would read after the walk, the decision is undetermined with
// the same reason.
package replay
