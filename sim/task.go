package sim

import (
	"io"
	"math"

	"github.com/tmigr/tmigr/hrtimer"
)

// Forever is a step that never ends by itself (a busy loop).
const Forever int64 = math.MaxInt64

// ActionKind of a task's step: what the task does when the CPU time of a
// step has been spent.
type StepAction uint8

const (
	// Continue runs the behaviour again at once, on the same CPU.
	Continue StepAction = iota
	// SleepUntil sleeps on the task's hrtimer sleeper until the absolute
	// time At (clock_nanosleep TIMER_ABSTIME).
	SleepUntil
	// SleepFor sleeps on the sleeper for For ns from the end of the step
	// (a relative clock_nanosleep).
	SleepFor
	// BlockFor waits For ns for something that is not a timer (I/O); the
	// task is woken as by an I/O completion.
	BlockFor
	// Exit ends the task.
	Exit
	// Park leaves the task off the run queue until something wakes it
	// (Machine.Wake).
	Park
)

// Step is a stretch of CPU time a task needs, and what it does afterwards.
// Interrupts and higher-priority tasks make the step take longer in wall
// time than Run.
type Step struct {
	Run  int64 // CPU time, ns; Forever for a busy loop
	Then StepAction
	At   int64 // SleepUntil
	For  int64 // SleepFor, BlockFor
}

// Behavior is what a task does each time it gets the CPU after a wake-up
// or a Continue: it returns the next step. x.Now is the time the task
// resumes in user space.
type Behavior interface {
	Run(x *Exec, t *Task) Step
}

// BehaviorFunc adapts a function to Behavior.
type BehaviorFunc func(x *Exec, t *Task) Step

// Run implements Behavior.
func (f BehaviorFunc) Run(x *Exec, t *Task) Step { return f(x, t) }

type taskState uint8

const (
	taskNew taskState = iota
	taskRunnable
	taskRunning
	taskSleeping
	taskBlocked
	taskParked
	taskExited
)

// Task is a thread of the simulated machine.
type Task struct {
	Name string
	// Policy and Prio: SCHED_FIFO/RR tasks with Prio 1..99 preempt
	// SCHED_OTHER ones (Prio 0) and lower priorities; equal priorities
	// run in FIFO order.
	Policy hrtimer.Policy
	Prio   int
	// CPU is where the task runs (pinned), or for an unpinned task the CPU
	// it last ran on (-1 before it first ran).
	CPU    int
	Pinned bool
	// Slack is the task's timer_slack_ns for its sleeps (the default 50 µs
	// for SCHED_OTHER, 0 for real-time tasks).
	Slack    int64
	Behavior Behavior
	// OnGap, if set, makes the task a measuring busy loop (oslat): it is
	// called for every stretch of time the task was kept from running
	// (interrupts, softirqs, preemption), with the stretch's start and
	// length. It is the TaskSpec's, read once by NewTask; it may run on a
	// helper goroutine, beside other CPUs' OnGap (see TaskSpec).
	OnGap func(start, length int64)
	// OnExit, if set, is called when the task exits.
	OnExit func(x *Exec, t *Task)

	state     taskState
	remaining int64 // CPU time left of a preempted step; 0 for none
	then      Step  // the running step
	sleeper   hrtimer.Timer
	setup     bool
	seq       uint64 // FIFO order in run queues
}

func (t *Task) key() int {
	if t.Policy.RTOrDL() {
		return t.Prio
	}
	return 0
}

// Workload is something that runs on the simulated machine: it places
// tasks and arms timers when the machine has booted, and reports what it
// measured at the end.
type Workload interface {
	// Name names the workload ("oslat", "cyclictest", ...).
	Name() string
	// Start is called once the machine has booted (time 0), before the
	// first tick.
	Start(m *Machine) error
	// Result is called after the run and returns the workload's results,
	// or nil if it has nothing to report.
	Result(m *Machine) WorkloadResult
}

// WorkloadResult is what a workload reports.
type WorkloadResult interface {
	// WriteText prints the report the real tool would print.
	WriteText(w io.Writer) error
	// JSON returns the workload section of the run's JSON.
	JSON() any
	// Latency returns a measuring workload's per-CPU latency summary in
	// µs (min, avg, max), or nil.
	Latency() map[int][3]float64
}

// runqueue holds a CPU's runnable tasks: highest priority first, FIFO
// within a priority.
type runqueue struct {
	q []*Task
}

func (r *runqueue) len() int { return len(r.q) }

func (r *runqueue) peek() *Task {
	if len(r.q) == 0 {
		return nil
	}
	return r.q[0]
}

// push queues t behind the tasks of its priority, or in front of them if
// front (a preempted task resumes first).
func (r *runqueue) push(t *Task, front bool) {
	k := t.key()
	i := 0
	for i < len(r.q) {
		qk := r.q[i].key()
		if qk < k || (front && qk == k) {
			break
		}
		i++
	}
	r.q = append(r.q, nil)
	copy(r.q[i+1:], r.q[i:])
	r.q[i] = t
}

func (r *runqueue) pop() *Task {
	t := r.q[0]
	copy(r.q, r.q[1:])
	r.q[len(r.q)-1] = nil
	r.q = r.q[:len(r.q)-1]
	return t
}

func (r *runqueue) remove(t *Task) bool {
	for i, x := range r.q {
		if x == t {
			copy(r.q[i:], r.q[i+1:])
			r.q[len(r.q)-1] = nil
			r.q = r.q[:len(r.q)-1]
			return true
		}
	}
	return false
}
