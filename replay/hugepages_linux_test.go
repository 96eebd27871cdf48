package replay

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/tmigr/tmigr/ftrace"
)

// TestAdviseHugePages: a segment's buffer is advised (the kernel lists the
// "hg" flag for the memory in /proc/self/smaps) where the kernel has
// transparent huge pages, and a buffer too small for a whole huge page is
// left alone.
func TestAdviseHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("this kernel has no transparent huge pages")
	}
	buf := make([]ftrace.Event, 0, 8*hugePage/int(unsafe.Sizeof(ftrace.Event{})))
	adviseHugePages(buf)
	mid := uintptr(unsafe.Pointer(unsafe.SliceData(buf[:1]))) + 4*hugePage
	if !advisedAt(t, mid) {
		t.Errorf("the middle of a buffer of %d MiB is not advised", 8*hugePage>>20)
	}
	adviseHugePages(nil)
	small := make([]ftrace.Event, 0, 16)
	adviseHugePages(small)
	if advisedAt(t, uintptr(unsafe.Pointer(unsafe.SliceData(small[:1])))) {
		t.Errorf("a buffer of %d events is advised", cap(small))
	}
	runtime.KeepAlive(buf)
}

// advisedAt reports whether the mapping that holds addr has the "hg" flag.
func advisedAt(t *testing.T, addr uintptr) bool {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		fs := strings.Fields(l)
		if len(fs) == 0 {
			continue
		}
		// A mapping's line begins with its range, "lo-hi"; its fields'
		// with their names, "Size:".
		if lo, hi, ok := strings.Cut(fs[0], "-"); ok && !strings.HasSuffix(fs[0], ":") {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(addr) >= a && uint64(addr) < b
			continue
		}
		if in && strings.HasPrefix(l, "VmFlags:") {
			return strings.Contains(" "+l+" ", " hg ")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("no mapping in /proc/self/smaps holds %#x", addr)
	return false
}
