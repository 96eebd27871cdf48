// Package conformance holds real kernels to the model: it reads the
// recordings that package lab makes and checks them, shape by shape and
// kernel by kernel.
//
//   - BootLine: the kernel's "Timer migration:" boot line against the
//     hierarchy package hier builds for the recording's machine (what
//     "tmigr topo" prints); kernels before 6.9 have none.
//   - Compare (compare.go, "tmigr lab compare"): simulates the machine a
//     recording describes and sets the structure of its remote expiries,
//     who pulled whose timers at which level of the hierarchy, beside the
//     kernel's, with an agreement figure; both sides are read from their
//     traces by the same code.
//   - The conformance matrix (matrix.go, "tmigr lab matrix"): shapes from 2
//     to 64 CPUs, 1 to 4 nodes, isolcpus, nohz_full, a run-time isolated
//     partition, the timer_migration sysctl, PREEMPT_RT, on Linux 6.1,
//     6.12, 6.19, 7.2 and 7.3. RunMatrix records them with lab.RecordFile
//     (or takes the recordings in testdata/traces), checks each one's boot
//     line, replays it through the model's checks (package replay) and the
//     compare, and WriteConformance writes the table docs/conformance.md
//     holds, one row per shape and kernel.
//
// Recording is package lab's; nothing here boots a guest except through
// it.
package conformance
