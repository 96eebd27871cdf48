package sim

// evKind is what an event does when its time comes.
type evKind uint8

const (
	evStep     evKind = iota // the running task's step ends (cpu, gen)
	evHrDevice               // the CPU's clock event device fires for hrtimers (cpu, gen)
	evNohzWake               // a CPU with its tick stopped wakes for its next timer event (cpu, gen)
	evKick                   // a wake-up IPI arrives: re-evaluate the idle sleep (cpu)
	evResched                // a reschedule IPI arrives: a task was queued here (cpu)
	evWake                   // a blocked task's wait ends (task)
	evFunc                   // a scheduled function (actions, workloads)
)

// event is one entry of the event queue. Events of a CPU that can be
// re-armed (the step end, the clock event device, the NOHZ wakeup) carry
// the generation they were armed with; a newer arming makes them stale and
// they are skipped when they come up (lazy deletion).
type event struct {
	t    int64
	seq  uint64
	kind evKind
	cpu  int32
	gen  uint64
	task *Task
	fn   func()
}

func (a *event) before(b *event) bool {
	return a.t < b.t || (a.t == b.t && a.seq < b.seq)
}

// eventHeap is a binary min-heap ordered by (time, insertion order): ties
// are broken by the order the events were scheduled in, which keeps a run
// deterministic.
type eventHeap []event

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	q := *h
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q[i].before(&q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	q := *h
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q[n] = event{}
	q = q[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && q[r].before(&q[l]) {
			m = r
		}
		if !q[m].before(&q[i]) {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}
