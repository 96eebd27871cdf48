// Package live runs experiments with the runtime (package tmigr) on the
// machine it runs on, and reports what they measured: the runtime's
// counterpart of sim/repro, which runs the published experiments on the
// simulator. Each experiment compares, in one run, what the issue behind
// it is about, and returns a result that marshals to JSON and prints as a
// table (WriteText):
//
//   - Lateness: timers of random 1-50 ms on idle workers, tmigr wheel
//     timers, tmigr hrtimers and time.AfterFunc side by side, reported as
//     rt-tests' cyclictest reports (its "T:" lines and histogram block, one
//     "thread" per kind of timer) and, when cyclictest is installed and
//     asked for, beside cyclictest itself run over the same span: the
//     operating system's floor for the same scheduling class.
//   - Isolation: a busy isolated worker beside a housekeeping worker with
//     global timers, under pull and pull-isolated.
//   - Idle: the CPU time and wake-up lateness of idle workers, halting,
//     polling and haltpolling.
//   - SoftHard: a hard periodic hrtimer beside sleepers, hard then soft.
//   - Wakeups: OS wake-ups of idle workers without and with the
//     hierarchy.
//
// Every experiment takes a Machine: the CPUs, tick rate and scheduling
// class of the workers. Timing figures depend on the machine and its load;
// the tests check the shape of the results (counts, orderings), never a
// time.
package live
