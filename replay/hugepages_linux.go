package replay

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tmigr/tmigr/ftrace"
)

// hugePage is the size of a transparent huge page on the architectures Go
// runs Linux on with them (x86-64, arm64 with 4 KiB pages).
const hugePage = 2 << 20

// adviseHugePages asks the kernel to back the array of buf (its capacity)
// by transparent huge pages, madvise(MADV_HUGEPAGE), as it does on request
// where /sys/kernel/mm/transparent_hugepage/enabled is "madvise" (as on
// the CI VM; "always" backs it so unasked). A segment's buffer (runStream) is a
// hundred megabytes and more, written from start to end and read back and
// forth by the checks: 2 MiB pages take a 512th of the page faults and of
// the TLB entries that 4 KiB ones do (docs/performance.md). Only the whole
// huge pages inside the array are advised, so no other memory is; where
// the kernel has no THP the advice fails and the memory is as it was.
func adviseHugePages(buf []ftrace.Event) {
	n := uintptr(cap(buf)) * unsafe.Sizeof(ftrace.Event{})
	if n < 2*hugePage {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(buf[:1])))
	from := (start + hugePage - 1) &^ (hugePage - 1)
	to := (start + n) &^ (hugePage - 1)
	if to <= from {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(buf[:1])), from-start)), to-from)
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
}
