package ftrace

import "strconv"

// FormatTS prints a trace time as the kernel prints its timestamps
// ("%5lu.%06lu" without the padding): seconds with six decimals, the
// nanoseconds below the microsecond dropped, not rounded, so that a time
// reads as the line it came from. A negative time (a difference, or a time
// before the trace clock's zero) gets a leading "-". Every tool prints
// trace times through it so that one moment reads the same everywhere.
func FormatTS(ns int64) string {
	var b []byte
	u := uint64(ns)
	if ns < 0 {
		b = append(b, '-')
		u = -u // two's complement: also right for math.MinInt64
	}
	b = strconv.AppendUint(b, u/1e9, 10)
	b = append(b, '.')
	frac := u % 1e9 / 1e3
	for d := uint64(100000); d > 1 && frac < d; d /= 10 {
		b = append(b, '0')
	}
	b = strconv.AppendUint(b, frac, 10)
	return string(b)
}
