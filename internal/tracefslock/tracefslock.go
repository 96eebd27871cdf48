// Package tracefslock serialises the tests that record this machine
// through its tracefs. go test runs the test binaries of several packages
// at once, and a test that checks tracefs is as it found it (mounted or
// not, no instance of ours left) must not see another binary's recorder
// mount, unmount or hold an instance in between.
package tracefslock

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Hold takes the machine-wide lock until the test ends: an exclusive
// flock on a file in the temporary directory, which the kernel releases
// when the holder exits, however it ends.
func Hold(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "tmigr-tracefs-test.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("the tracefs tests' lock: %v", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		t.Fatalf("the tracefs tests' lock: %v", err)
	}
	t.Cleanup(func() {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	})
}
