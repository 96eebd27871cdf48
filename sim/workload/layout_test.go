package workload

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"unsafe"

	"github.com/tmigr/tmigr/report"
)

// TestOslatThreadLayout: what a short sample touches is the first cache
// line of an oslatThread, and the threads are whole lines apart.
func TestOslatThreadLayout(t *testing.T) {
	var th oslatThread
	if s := unsafe.Sizeof(th); s != oslatThreadSize || s%64 != 0 {
		t.Errorf("oslatThread is %d bytes, want %d (adjust oslatThreadPad)", s, oslatThreadSize)
	}
	if end := unsafe.Offsetof(th.low) + unsafe.Sizeof(th.low); end > 64 {
		t.Errorf("the short samples' counts end at byte %d, want <= 64", end)
	}
}

// TestOslatThreadSample: samples recorded through sample and report give
// the same report.OslatThread as Add, one sample at a time.
func TestOslatThreadSample(t *testing.T) {
	for _, mhz := range []uint64{1, 1000, 2100, 3000, 1 << 40} {
		var lim uint64
		if mhz != 0 {
			lim = math.MaxUint64 / mhz
		}
		r := rand.New(rand.NewPCG(mhz, 7))
		want := report.NewOslatThread(3, mhz, report.OslatBuckets)
		th := oslatThread{cpu: 3, th: report.NewOslatThread(3, mhz, report.OslatBuckets)}
		for i := 0; i < 20000; i++ {
			var ns int64
			switch i % 5 {
			case 0:
				ns = r.Int64N(8000)
			case 1:
				ns = r.Int64N(100000)
			case 2:
				ns = r.Int64N(2000) - 1000
			case 3:
				ns = int64(r.Uint64() >> 1)
			default:
				ns = r.Int64N(6000)
			}
			want.Add(ns, 1)
			th.sample(ns, lim)
		}
		if got := th.report(); !reflect.DeepEqual(got, want) {
			t.Errorf("mhz %d: got %+v, want %+v", mhz, got, want)
		}
	}
}
