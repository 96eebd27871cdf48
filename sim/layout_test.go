package sim

import (
	"testing"
	"unsafe"
)

// TestCPUStateLayout: what a quiet tick touches of a CPU's state lies in
// its first four cache lines (the tick core's hot first 64 bytes
// included), and the CPUs' states are a whole number of lines apart, so
// that those four lines stay aligned in Machine.cpus.
func TestCPUStateLayout(t *testing.T) {
	var c cpuState
	if s := unsafe.Sizeof(c); s != cpuStateSize || s%64 != 0 {
		t.Errorf("cpuState is %d bytes, want %d (adjust cpuStatePad)", s, cpuStateSize)
	}
	if end := unsafe.Offsetof(c.tk) + 64; end > 256 {
		t.Errorf("tk's first line ends at byte %d of cpuState, want <= 256", end)
	}
	if a := unsafe.Alignof(c); a > 64 {
		t.Errorf("cpuState alignment %d", a)
	}
}
