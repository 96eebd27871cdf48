// Package bench compares the cost of re-arming a timer on tmigr's timer
// wheel with the Go runtime's timers and two timer-wheel libraries. It is a
// module of its own so that the libraries it measures against never become
// dependencies of tmigr. The benchmarks are in bench_test.go; README.md
// says how to run and read them.
package bench
