package sim

// SoftirqCounts returns, for the tests, how the late passes of m's run
// ran their softirqs: the local ones, the segments of them shared with
// the helpers, and the open ticks' softirqs kept on the machine's
// goroutine where local ones were shared (a remote walk with work).
func SoftirqCounts(m *Machine) (local, shared, serial uint64) {
	return m.softLocal, m.softShared, m.softSerial
}
