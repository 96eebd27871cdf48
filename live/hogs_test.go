package live

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestHogs: hogs are processes pinned one CPU each, as many per CPU as
// asked, and stop reaps them; a bad count is an error.
func TestHogs(t *testing.T) {
	cpus, err := Machine{}.cpuList(1, 2)
	if err != nil {
		t.Skip(err)
	}
	h, err := startHogs(cpus, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.cmds) != 2*len(cpus) {
		t.Fatalf("%d hogs for %d CPUs, want 2 each", len(h.cmds), len(cpus))
	}
	for i, cmd := range h.cmds {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
		if err != nil {
			t.Fatal(err)
		}
		want := "Cpus_allowed_list:\t" + strconv.Itoa(cpus[i/2]) + "\n"
		if !strings.Contains(string(b), want) {
			t.Errorf("hog %d not pinned to CPU %d:\n%s", i, cpus[i/2], b)
		}
	}
	pids := []int{}
	for _, cmd := range h.cmds {
		pids = append(pids, cmd.Process.Pid)
	}
	h.stop()
	for _, pid := range pids {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			t.Errorf("hog %d still there after stop", pid)
		}
	}
	for _, n := range []int{-1, maxHogs + 1} {
		if _, err := startHogs(cpus, n); err == nil {
			t.Errorf("%d hogs per CPU accepted", n)
		}
	}
	if _, err := Lateness(context.Background(), LatenessOptions{Timers: 1, Hogs: -1}); err == nil {
		t.Error("Lateness with -1 hogs accepted")
	}
}

// TestLatenessWithHogs: the run says its load, in JSON and text.
func TestLatenessWithHogs(t *testing.T) {
	r, err := Lateness(context.Background(), LatenessOptions{Machine: Machine{HZ: 1000}, Timers: 5, Hogs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Hogs != 1 || r.Idle == "" {
		t.Fatalf("hogs %d, idle %q", r.Hogs, r.Idle)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "1 CPU hog(s) per CPU") {
		t.Errorf("the report does not say its load:\n%s", b.String())
	}
}
