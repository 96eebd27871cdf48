package host

import (
	"fmt"

	"github.com/tmigr/tmigr/ftrace"
)

// RecordingMachine returns the "# machine:" line of a recording made on h
// now by recorder ("tmigr record"), and the report it comes from: the line
// tmigr host prints (Analyze's, so that the two cannot disagree: release,
// CPUs and nodes, HZ, the command line's isolation), with three
// differences. It declares no load (busy= and sleepers= empty: a recorder
// runs none). Its note names the recorder. And the state that the machine
// line otherwise carries only as changes made while recording is written as
// changes at 0s: an isolated cpuset partition in effect ("0s partition
// 9-15"), kernel.timer_migration=0, and the possible CPUs that are offline,
// so that a replay models the machine as it was from the first event (the
// availability events those changes caused lie before the recording, and
// count undetermined).
func RecordingMachine(h *Host, recorder string) (ftrace.Machine, *Report, error) {
	r, err := Analyze(h, Options{NoPredict: true, Workload: "idle", recorder: recorder})
	if err != nil {
		return ftrace.Machine{}, nil, err
	}
	m := r.Machine
	off := r.Possible.AndNot(r.Online)
	for c := off.First(); c >= 0; c = off.Next(c) {
		m.At = append(m.At, ftrace.Change{Kind: ftrace.ChangeOffline, CPU: c})
	}
	if !r.Partition.Empty() {
		m.At = append(m.At, ftrace.Change{Kind: ftrace.ChangePartition, CPUs: r.Partition})
	}
	if r.TimerMigration == 0 {
		m.At = append(m.At, ftrace.Change{Kind: ftrace.ChangeTimerMigration})
	}
	if err := m.Validate(); err != nil {
		return ftrace.Machine{}, nil, fmt.Errorf("the machine read does not validate: %v", err)
	}
	return m, r, nil
}
