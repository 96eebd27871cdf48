package hier

import (
	"testing"
	"unsafe"
)

// TestTmcpuLayout: what RequiresHandleRemote reads of a busy CPU's tmcpu
// (available, idle, groupmask, tmgroup) lies in one cache line for every
// CPU of Hierarchy.cpus (from a slice that starts on a line).
func TestTmcpuLayout(t *testing.T) {
	var c tmcpu
	size := unsafe.Sizeof(c)
	hot := []uintptr{unsafe.Offsetof(c.available), unsafe.Offsetof(c.idle), unsafe.Offsetof(c.groupmask),
		unsafe.Offsetof(c.tmgroup) + unsafe.Sizeof(c.tmgroup) - 1}
	for i := uintptr(0); i < 64; i++ {
		first := (i*size + hot[0]) / 64
		for _, o := range hot[1:] {
			if (i*size+o)/64 != first {
				t.Fatalf("tmcpu %d (size %d): byte %d of it is on another cache line than byte %d", i, size, o, hot[0])
			}
		}
	}
}
