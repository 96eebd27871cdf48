// Package report formats what the simulator measured the way the real
// tools print it, and the JSON of a run.
//
//   - Oslat and WriteOslat: oslat's histogram and summary (rt-tests 2.7 or
//     later: samples rounded down to µs, one column per thread, a tab after
//     each label, the average's use of thread 0's overflow sum included).
//   - Cyclictest and WriteCyclictest: cyclictest's "T:" lines and the
//     histogram block with "# Max Latencies:".
//   - Run and WriteMigrationSummary: the JSON object of a simulation run
//     and the per-CPU migration summary printed after a tool's report.
//   - Summary, Summarize and WriteSummary: the answer printed before a
//     tool's report — who ran whose timers, the isolated CPUs that ran
//     other CPUs' timers, the worst latency — and the run's "summary".
//
// The formats are those of rt-tests' src/oslat/oslat.c,
// src/cyclictest/cyclictest.c and src/lib/histogram.c, read from source
// (see latency-anchors.md §1-2); the golden files in testdata pin them.
package report
