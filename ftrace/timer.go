package ftrace

// The timer system (include/trace/events/timer.h): timer_list wheel timers,
// hrtimers, itimers and the nohz tick. Times: wheel timers count jiffies
// (unsigned long); hrtimers count nanoseconds of their clock (s64, printed
// with %llu).

// TimerInit is timer_init: a timer_list was initialised. "timer=%p"
type TimerInit struct {
	Timer uint64
}

// TimerStart is timer_start: a timer_list was queued on a CPU's wheel.
//
//	timer=%p function=%ps expires=%lu [timeout=%ld] bucket_expiry=%lu cpu=%u idx=%u flags=%s
//
// Linux 6.1 prints no bucket_expiry (it came with 6.2's timer_start).
type TimerStart struct {
	Timer        uint64
	Function     string // %ps: "process_timeout", "fn [module]" or "0x..."
	Expires      uint64 // jiffies
	Timeout      int64  // expires - jiffies when it was queued
	BucketExpiry uint64 // jiffies at which its wheel bucket expires; 0 without the field
	// NoBucketExpiry is set when the kernel printed no bucket_expiry
	// (6.1): BucketExpiry is then unknown, not 0.
	NoBucketExpiry bool
	CPU            int        // the base's CPU (flags & TIMER_CPUMASK), < 1<<18
	Idx            int        // the wheel bucket (flags >> TIMER_ARRAYSHIFT), < 1024
	Flags          TimerFlags // TimerMigrating|TimerDeferrable|TimerPinned|TimerIrqsafe
	// FlagsUnknown is set when the text's flags are known to be wrong:
	// trace-cmd report (libtraceevent) prints D|P|I for every timer (see
	// report.go); only TimerMigrating in Flags is then the kernel's.
	FlagsUnknown bool
}

// Now is the jiffies value when the timer was queued (expires - timeout).
func (e TimerStart) Now() uint64 { return e.Expires - uint64(e.Timeout) }

// TimerExpireEntry is timer_expire_entry: a timer's callback is about to run.
//
//	timer=%p function=%ps now=%lu baseclk=%lu
type TimerExpireEntry struct {
	Timer    uint64
	Function string
	Now      uint64 // jiffies
	BaseClk  uint64 // the base's clk when it expired the timer
}

// TimerExpireExit is timer_expire_exit: the callback returned. "timer=%p"
type TimerExpireExit struct {
	Timer uint64
}

// TimerCancel is timer_cancel: a pending timer was removed from its wheel
// (also just before its expiry). "timer=%p"
type TimerCancel struct {
	Timer uint64
}

// TimerBaseIdle is timer_base_idle: a CPU's timer base entered or left idle.
//
//	is_idle=%d cpu=%d
type TimerBaseIdle struct {
	IsIdle bool
	CPU    int
}

// HrtimerInit is hrtimer_init, the name of hrtimer_setup before Linux 6.15.
//
//	hrtimer=%p clockid=%s mode=%s
type HrtimerInit struct {
	Hrtimer uint64
	ClockID ClockID
	Mode    HrtimerMode
}

// HrtimerSetup is hrtimer_setup (Linux 6.15+; hrtimer_init before).
//
//	hrtimer=%p clockid=%s mode=%s
type HrtimerSetup struct {
	Hrtimer uint64
	ClockID ClockID
	Mode    HrtimerMode
}

// HrtimerStart is hrtimer_start: an hrtimer was queued.
//
//	hrtimer=%p function=%ps expires=%llu softexpires=%llu mode=%s [was_armed=%d]
//
// was_armed is printed by kernels from 2026 on.
type HrtimerStart struct {
	Hrtimer     uint64
	Function    string
	Expires     int64 // ns of the timer's clock, hard expiry
	SoftExpires int64 // ns, the earliest it may expire (expires - slack)
	Mode        HrtimerMode
	WasArmed    bool // it was queued already and is being moved
	HasWasArmed bool // the kernel printed was_armed
	// NoMode is set when the text held no mode (trace-cmd report's
	// hrtimer plugin prints none); Mode is then 0 and means nothing.
	NoMode bool
}

// HrtimerStartExpired is hrtimer_start_expired (2026 on): an hrtimer was
// started with an expiry already past, and instead of being queued it
// runs at once from the interrupt that was being reprogrammed.
// "hrtimer=%p"
type HrtimerStartExpired struct {
	Hrtimer uint64
}

// HrtimerRearm is hrtimer_rearm (2026 on): the CPU's clock event device
// was programmed for its next hrtimer event, at the end of the hrtimer
// interrupt (Deferred: the reprogramming was left to the interrupt's exit,
// after the callbacks ran) or when a new first timer was started. It
// carries no CPU: the event line's CPU is the one programmed.
//
//	next_event=%llu deferred=%d
type HrtimerRearm struct {
	NextEvent int64 // ns of CLOCK_MONOTONIC (ktime_t printed with %llu); KtimeMax for none
	Deferred  bool
}

// HrtimerExpireEntry is hrtimer_expire_entry: an hrtimer's callback is about
// to run.
//
//	hrtimer=%p function=%ps now=%llu
type HrtimerExpireEntry struct {
	Hrtimer  uint64
	Function string
	Now      int64 // ns of the timer's clock
}

// HrtimerExpireExit is hrtimer_expire_exit. "hrtimer=%p"
type HrtimerExpireExit struct {
	Hrtimer uint64
}

// HrtimerCancel is hrtimer_cancel. "hrtimer=%p"
type HrtimerCancel struct {
	Hrtimer uint64
}

// ItimerState is itimer_state: an interval timer was set or cancelled.
//
//	which=%d expires=%llu it_value=%ld.%06ld it_interval=%ld.%06ld
type ItimerState struct {
	Which        int
	Expires      uint64
	ValueSec     int64
	ValueUsec    int64
	IntervalSec  int64
	IntervalUsec int64
}

// ItimerExpire is itimer_expire. "which=%d pid=%d now=%llu"
type ItimerExpire struct {
	Which int
	PID   int
	Now   uint64
}

// TickStop is tick_stop: a nohz CPU tried to stop its tick.
//
//	success=%d dependency=%s
type TickStop struct {
	Success    bool
	Dependency TickDep
}

// Name implements Payload: the tracepoint's name.

func (TimerInit) Name() string           { return "timer_init" }
func (TimerStart) Name() string          { return "timer_start" }
func (TimerExpireEntry) Name() string    { return "timer_expire_entry" }
func (TimerExpireExit) Name() string     { return "timer_expire_exit" }
func (TimerCancel) Name() string         { return "timer_cancel" }
func (TimerBaseIdle) Name() string       { return "timer_base_idle" }
func (HrtimerInit) Name() string         { return "hrtimer_init" }
func (HrtimerSetup) Name() string        { return "hrtimer_setup" }
func (HrtimerStart) Name() string        { return "hrtimer_start" }
func (HrtimerStartExpired) Name() string { return "hrtimer_start_expired" }
func (HrtimerRearm) Name() string        { return "hrtimer_rearm" }
func (HrtimerExpireEntry) Name() string  { return "hrtimer_expire_entry" }
func (HrtimerExpireExit) Name() string   { return "hrtimer_expire_exit" }
func (HrtimerCancel) Name() string       { return "hrtimer_cancel" }
func (ItimerState) Name() string         { return "itimer_state" }
func (ItimerExpire) Name() string        { return "itimer_expire" }
func (TickStop) Name() string            { return "tick_stop" }
