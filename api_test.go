package tmigr

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestClosedAndNilRefused: the low-level calls refuse a nil function with
// an error, and after Close return ErrClosed (they used to return a timer
// that never ran, and a nil error); the constructors without an error
// result panic at the call site, naming the call.
func TestClosedAndNilRefused(t *testing.T) {
	t.Parallel()
	rt, err := Start(Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := rt.CPUs()[0]
	if _, err := rt.AfterFuncOn(c, time.Hour, nil); !errors.Is(err, errNilFunc) {
		t.Errorf("AfterFuncOn(nil): %v", err)
	}
	if _, err := rt.HRAfterFunc(c, time.Hour, nil, Hard); !errors.Is(err, errNilFunc) {
		t.Errorf("HRAfterFunc(nil): %v", err)
	}
	if err := rt.Go(c, nil); !errors.Is(err, errNilFunc) {
		t.Errorf("Go(nil): %v", err)
	}
	for name, f := range map[string]func(){
		"AfterFunc":         func() { rt.AfterFunc(time.Hour, nil) },
		"NewTicker":         func() { rt.NewTicker(0) },
		"Ticker.Reset":      func() { rt.NewTicker(time.Hour).Reset(-1) },
		"Precise(7)":        func() { rt.NewTimer(time.Hour, Precise(7)) },
		"Coarse(option 64)": func() { rt.AfterFunc(time.Hour, func() {}, Coarse(64)) },
	} {
		if msg := panicOf(f); !strings.HasPrefix(msg, "tmigr: ") {
			t.Errorf("%s: panic %q, want one naming tmigr", name, msg)
		}
	}
	if err := rt.Sleep(context.Background(), time.Millisecond, Precise(9)); err == nil {
		t.Error("Sleep with Precise(9) accepted")
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	f := func() {}
	if tm, err := rt.AfterFuncOn(c, time.Millisecond, f); !errors.Is(err, ErrClosed) || tm != nil {
		t.Errorf("AfterFuncOn after Close: %v, %v", tm, err)
	}
	if tm, err := rt.HRAfterFunc(c, time.Millisecond, f, Soft); !errors.Is(err, ErrClosed) || tm != nil {
		t.Errorf("HRAfterFunc after Close: %v, %v", tm, err)
	}
	if rt.AfterFunc(time.Millisecond, f).Stop() || rt.NewTimer(time.Millisecond).Stop() {
		t.Error("a timer made after Close is armed")
	}
	if err := rt.Sleep(context.Background(), time.Millisecond, Coarse()); !errors.Is(err, ErrClosed) {
		t.Errorf("coarse Sleep after Close: %v", err)
	}
}

func panicOf(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg, _ = r.(string)
			if msg == "" {
				msg = "non-string panic"
			}
		}
	}()
	f()
	return ""
}

// TestZeroRuntimeAPI: the time-like calls on a Runtime not made by Start
// do not panic: their timers are never armed, Sleep returns ErrNotStarted
// (as the lower-level calls do, see edges_test.go).
func TestZeroRuntimeAPI(t *testing.T) {
	t.Parallel()
	var rt Runtime
	if rt.AfterFunc(time.Millisecond, func() {}).Stop() || rt.NewTimer(0).Reset(time.Second) {
		t.Error("a timer of a zero Runtime is armed")
	}
	rt.NewTicker(time.Millisecond).Stop()
	if err := rt.Sleep(context.Background(), time.Millisecond); !errors.Is(err, ErrNotStarted) {
		t.Errorf("Sleep on a zero Runtime: %v", err)
	}
}
