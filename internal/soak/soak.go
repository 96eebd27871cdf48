// Package soak is the knob that runs the model and property tests for
// longer than their defaults: with TMIGR_SOAK set to a number of
// operations (TMIGR_SOAK=1e7, or 10000000), each of the tests that honour it
// (the wheel's, the hierarchy's and the hrtimers' model and stress tests,
// and the runtime's stress test) runs batch after batch until it has checked
// at least that many operations, then logs how many it checked and how long
// it took. What an operation is, each test says (a generated step of a
// model test, an arm or cancel of a stress test). Unset, every test runs its
// usual single batch.
//
//	TMIGR_SOAK=1e7 nice -n 19 go test -run 'Model|Stress' -v -timeout 0 ./wheel
//
// It is for tests only: it reads the environment and logs through testing.
package soak

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"
	"time"
)

// Env is the environment variable that sets the number of operations.
const Env = "TMIGR_SOAK"

// Ops returns the number of operations a soaked test must check, 0 when
// TMIGR_SOAK is unset or empty. A value that is not a whole number of at
// least 1 (in decimal or e notation) fails the test.
func Ops(tb testing.TB) int64 {
	tb.Helper()
	n, err := parse(os.Getenv(Env))
	if err != nil {
		tb.Fatalf("%s: %v", Env, err)
	}
	return n
}

func parse(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a number of operations", s)
	case math.IsNaN(f) || f < 1 || f > 1e15 || f != math.Trunc(f):
		return 0, fmt.Errorf("%q: want a whole number of operations from 1 to 1e15", s)
	}
	return int64(f), nil
}

// Run runs batch once, or, under TMIGR_SOAK, again and again until ops
// reports at least the number asked for (or the test fails), and logs the
// operations checked, the batches and the wall time. ops is the running
// total of operations the batches checked.
func Run(t *testing.T, ops func() int64, batch func(t *testing.T)) {
	t.Helper()
	want := Ops(t)
	start := time.Now()
	batches := 0
	for {
		batch(t)
		batches++
		if want == 0 || t.Failed() || ops() >= want {
			break
		}
	}
	if want > 0 {
		t.Logf("soak: %d operations (asked %d) in %d batches, %v", ops(), want, batches, time.Since(start).Round(time.Millisecond))
	}
}
