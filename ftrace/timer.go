package ftrace

import (
	"math"
	"strconv"
)

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

// Name and AppendPayload implement Payload: the tracepoint's name, and its
// TP_printk text.

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

const (
	timerCPUMask  = 1<<18 - 1 // TIMER_CPUMASK
	timerIdxLimit = 1<<10 - 1 // flags >> TIMER_ARRAYSHIFT
)

func (e TimerInit) AppendPayload(b []byte) ([]byte, error) {
	return appendPtrOnly(b, e.Name(), "timer", e.Timer)
}

func (e TimerExpireExit) AppendPayload(b []byte) ([]byte, error) {
	return appendPtrOnly(b, e.Name(), "timer", e.Timer)
}

func (e TimerCancel) AppendPayload(b []byte) ([]byte, error) {
	return appendPtrOnly(b, e.Name(), "timer", e.Timer)
}

func (e HrtimerExpireExit) AppendPayload(b []byte) ([]byte, error) {
	return appendPtrOnly(b, e.Name(), "hrtimer", e.Hrtimer)
}

func (e HrtimerCancel) AppendPayload(b []byte) ([]byte, error) {
	return appendPtrOnly(b, e.Name(), "hrtimer", e.Hrtimer)
}

func (e HrtimerStartExpired) AppendPayload(b []byte) ([]byte, error) {
	return appendPtrOnly(b, e.Name(), "hrtimer", e.Hrtimer)
}

func (t HrtimerRearm) AppendPayload(b []byte) ([]byte, error) {
	e := newEnc(t.Name(), b)
	e.s64("next_event", t.NextEvent)
	e.d32("deferred", boolInt(t.Deferred))
	return e.done()
}

func appendPtrOnly(b []byte, event, key string, v uint64) ([]byte, error) {
	e := newEnc(event, b)
	e.ptr(key, v)
	return e.done()
}

func (t TimerStart) AppendPayload(b []byte) ([]byte, error) {
	e := newEnc(t.Name(), b)
	e.ptr("timer", t.Timer)
	e.sym("function", t.Function)
	e.u64("expires", t.Expires)
	e.b = append(e.b, " [timeout="...)
	e.b = appendInt(e.b, t.Timeout)
	e.b = append(e.b, ']')
	if !t.NoBucketExpiry {
		e.u64("bucket_expiry", t.BucketExpiry)
	} else if t.BucketExpiry != 0 {
		e.fail("bucket_expiry", strconv.FormatUint(t.BucketExpiry, 10), "is set but NoBucketExpiry is true")
	}
	e.u32("cpu", t.CPU, timerCPUMask)
	e.u32("idx", t.Idx, timerIdxLimit)
	if t.Flags&^timerFlagMask != 0 {
		e.fail("flags", t.Flags.String(), "holds bits other than M|D|P|I")
	}
	e.key("flags")
	e.b = t.Flags.appendTo(e.b)
	return e.done()
}

func (t TimerExpireEntry) AppendPayload(b []byte) ([]byte, error) {
	e := newEnc(t.Name(), b)
	e.ptr("timer", t.Timer)
	e.sym("function", t.Function)
	e.u64("now", t.Now)
	e.u64("baseclk", t.BaseClk)
	return e.done()
}

func (t TimerBaseIdle) AppendPayload(b []byte) ([]byte, error) {
	e := newEnc(t.Name(), b)
	e.d32("is_idle", boolInt(t.IsIdle))
	e.d32("cpu", t.CPU)
	return e.done()
}

func (t HrtimerInit) AppendPayload(b []byte) ([]byte, error) {
	return appendHrtimerInit(b, t.Name(), HrtimerSetup(t))
}

func (t HrtimerSetup) AppendPayload(b []byte) ([]byte, error) {
	return appendHrtimerInit(b, t.Name(), t)
}

func appendHrtimerInit(b []byte, event string, t HrtimerSetup) ([]byte, error) {
	e := newEnc(event, b)
	e.ptr("hrtimer", t.Hrtimer)
	e.key("clockid")
	e.b = appendSymbolic(e.b, uint64(int64(t.ClockID)), clockIDs)
	e.key("mode")
	e.b = appendSymbolic(e.b, uint64(t.Mode), hrtimerModes)
	return e.done()
}

func (t HrtimerStart) AppendPayload(b []byte) ([]byte, error) {
	e := newEnc(t.Name(), b)
	e.ptr("hrtimer", t.Hrtimer)
	e.sym("function", t.Function)
	e.s64("expires", t.Expires)
	e.s64("softexpires", t.SoftExpires)
	e.key("mode")
	e.b = appendSymbolic(e.b, uint64(t.Mode), hrtimerModes)
	if t.HasWasArmed {
		e.d32("was_armed", boolInt(t.WasArmed))
	} else if t.WasArmed {
		e.fail("was_armed", "1", "is set but HasWasArmed is false")
	}
	return e.done()
}

func (t HrtimerExpireEntry) AppendPayload(b []byte) ([]byte, error) {
	e := newEnc(t.Name(), b)
	e.ptr("hrtimer", t.Hrtimer)
	e.sym("function", t.Function)
	e.s64("now", t.Now)
	return e.done()
}

func (t ItimerState) AppendPayload(b []byte) ([]byte, error) {
	e := newEnc(t.Name(), b)
	e.d32("which", t.Which)
	e.u64("expires", t.Expires)
	e.secUsec("it_value", t.ValueSec, t.ValueUsec)
	e.secUsec("it_interval", t.IntervalSec, t.IntervalUsec)
	return e.done()
}

// secUsec prints "%ld.%06ld".
func (e *enc) secUsec(k string, sec, usec int64) {
	if usec < 0 {
		e.fail(k, appendString(sec, usec), "has negative microseconds")
	}
	e.key(k)
	e.b = appendInt(e.b, sec)
	e.b = append(e.b, '.')
	e.b = appendPadded(e.b, usec, 6)
}

func appendString(sec, usec int64) string {
	b := appendInt(nil, sec)
	b = append(b, '.')
	return string(appendInt(b, usec))
}

func (t ItimerExpire) AppendPayload(b []byte) ([]byte, error) {
	e := newEnc(t.Name(), b)
	e.d32("which", t.Which)
	e.d32("pid", t.PID)
	e.u64("now", t.Now)
	return e.done()
}

func (t TickStop) AppendPayload(b []byte) ([]byte, error) {
	e := newEnc(t.Name(), b)
	e.d32("success", boolInt(t.Success))
	e.key("dependency")
	e.b = appendSymbolic(e.b, uint64(t.Dependency), tickDeps)
	return e.done()
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

// Decoders.

func (d *dec) flag(key string) bool {
	s, ok := d.get(key)
	if !ok {
		return false
	}
	switch s {
	case "0":
		return false
	case "1":
		return true
	}
	d.fail(key, s, "is not 0 or 1")
	return false
}

func (d *dec) symbolic(key string, table []symbol, hi uint64) uint64 {
	s, ok := d.get(key)
	if !ok {
		return 0
	}
	v, why := parseSymbolic(s, table, hi)
	if why != "" {
		d.fail(key, s, why)
	}
	return v
}

func (d *dec) timerFlags(key string) TimerFlags {
	s, ok := d.get(key)
	if !ok {
		return 0
	}
	f, why := parseTimerFlags(s)
	if why != "" {
		d.fail(key, s, why)
	}
	return f
}

// secUsec reads "%ld.%06ld".
func (d *dec) secUsec(key string) (sec, usec int64) {
	s, ok := d.get(key)
	if !ok {
		return 0, 0
	}
	dot := indexByte(s, '.')
	if dot < 0 {
		d.fail(key, s, "is not seconds.microseconds")
		return 0, 0
	}
	sec, why := parseInt(s[:dot], math.MinInt64, math.MaxInt64)
	if why == "" {
		var u uint64
		u, why = parseUint(s[dot+1:], math.MaxInt64)
		usec = int64(u)
	}
	if why != "" {
		d.fail(key, s, "is not seconds.microseconds")
		return 0, 0
	}
	return sec, usec
}

func (d *dec) clockID(key string) ClockID {
	s, ok := d.get(key)
	if !ok {
		return 0
	}
	v, why := parseSymbolic(s, clockIDs, math.MaxUint64)
	if why == "" && (int64(v) < math.MinInt32 || int64(v) > math.MaxInt32) {
		why = "is out of range"
	}
	if why != "" {
		d.fail(key, s, why)
	}
	return ClockID(int64(v))
}

func decTimerInit(d *dec) Payload       { return TimerInit{Timer: d.ptr("timer")} }
func decTimerExpireExit(d *dec) Payload { return TimerExpireExit{Timer: d.ptr("timer")} }
func decTimerCancel(d *dec) Payload     { return TimerCancel{Timer: d.ptr("timer")} }

func decTimerStart(d *dec) Payload {
	t := TimerStart{
		Timer:    d.ptr("timer"),
		Function: d.sym("function"),
		Expires:  d.u64("expires"),
		Timeout:  d.i64("timeout"),
	}
	if d.has("bucket_expiry") {
		t.BucketExpiry = d.u64("bucket_expiry")
	} else {
		t.NoBucketExpiry = true
	}
	t.CPU = d.u32("cpu", timerCPUMask)
	t.Idx = d.u32("idx", timerIdxLimit)
	t.Flags = d.timerFlags("flags")
	return t
}

func decTimerExpireEntry(d *dec) Payload {
	return TimerExpireEntry{
		Timer:    d.ptr("timer"),
		Function: d.sym("function"),
		Now:      d.u64("now"),
		BaseClk:  d.u64("baseclk"),
	}
}

func decTimerBaseIdle(d *dec) Payload {
	return TimerBaseIdle{IsIdle: d.flag("is_idle"), CPU: d.d32("cpu")}
}

func decHrtimerSetupFields(d *dec) HrtimerSetup {
	return HrtimerSetup{
		Hrtimer: d.ptr("hrtimer"),
		ClockID: d.clockID("clockid"),
		Mode:    HrtimerMode(d.symbolic("mode", hrtimerModes, math.MaxUint32)),
	}
}

func decHrtimerInit(d *dec) Payload  { return HrtimerInit(decHrtimerSetupFields(d)) }
func decHrtimerSetup(d *dec) Payload { return decHrtimerSetupFields(d) }

func decHrtimerStart(d *dec) Payload {
	t := HrtimerStart{
		Hrtimer:     d.ptr("hrtimer"),
		Function:    d.sym("function"),
		Expires:     d.s64("expires"),
		SoftExpires: d.s64("softexpires"),
		Mode:        HrtimerMode(d.symbolic("mode", hrtimerModes, math.MaxUint32)),
	}
	if d.has("was_armed") {
		t.HasWasArmed = true
		t.WasArmed = d.flag("was_armed")
	}
	return t
}

func decHrtimerExpireEntry(d *dec) Payload {
	return HrtimerExpireEntry{
		Hrtimer:  d.ptr("hrtimer"),
		Function: d.sym("function"),
		Now:      d.s64("now"),
	}
}

func decHrtimerExpireExit(d *dec) Payload { return HrtimerExpireExit{Hrtimer: d.ptr("hrtimer")} }
func decHrtimerStartExpired(d *dec) Payload {
	return HrtimerStartExpired{Hrtimer: d.ptr("hrtimer")}
}

func decHrtimerRearm(d *dec) Payload {
	return HrtimerRearm{NextEvent: d.s64("next_event"), Deferred: d.flag("deferred")}
}
func decHrtimerCancel(d *dec) Payload { return HrtimerCancel{Hrtimer: d.ptr("hrtimer")} }

func decItimerState(d *dec) Payload {
	t := ItimerState{Which: d.d32("which"), Expires: d.u64("expires")}
	t.ValueSec, t.ValueUsec = d.secUsec("it_value")
	t.IntervalSec, t.IntervalUsec = d.secUsec("it_interval")
	return t
}

func decItimerExpire(d *dec) Payload {
	return ItimerExpire{Which: d.d32("which"), PID: d.d32("pid"), Now: d.u64("now")}
}

func decTickStop(d *dec) Payload {
	return TickStop{
		Success:    d.flag("success"),
		Dependency: TickDep(d.symbolic("dependency", tickDeps, math.MaxUint32)),
	}
}
