package sim

import (
	"testing"
	"unsafe"
)

// TestCPUStateLayout: what a quiet tick touches of a CPU's state lies in
// its first four cache lines, the tick core's hot first 64 bytes the
// fourth, cpuState.touch reads a field of each, and the CPUs' states are
// a whole number of lines apart, so that those four lines stay aligned
// in Machine.cpus.
func TestCPUStateLayout(t *testing.T) {
	var c cpuState
	if s := unsafe.Sizeof(c); s != cpuStateSize || s%64 != 0 {
		t.Errorf("cpuState is %d bytes, want %d (adjust cpuStatePad)", s, cpuStateSize)
	}
	if off := unsafe.Offsetof(c.tk); off%64 != 0 || off+64 > 256 {
		t.Errorf("tk starts at byte %d of cpuState, want a line boundary below 256", off)
	}
	touched := []uintptr{unsafe.Offsetof(c.online), unsafe.Offsetof(c.stepEnd), unsafe.Offsetof(c.tickFrom), unsafe.Offsetof(c.tk)}
	for line, off := range touched {
		if int(off/64) != line {
			t.Errorf("cpuState.touch reads byte %d for line %d", off, line)
		}
	}
	if a := unsafe.Alignof(c); a > 64 {
		t.Errorf("cpuState alignment %d", a)
	}
}
