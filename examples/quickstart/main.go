// Command quickstart is the example of docs/runtime.md: a runtime with a pinned worker
// per CPU, an hrtimer that fires with microsecond precision, and a wheel
// timer queued on the first housekeeping worker (while that worker is idle,
// the hierarchy's migrator may run it).
package main

import (
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/tmigr/tmigr"
)

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer) error {
	rt, err := tmigr.Start(tmigr.Config{}) // one pinned worker per CPU
	if err != nil {
		return err
	}
	defer rt.Close()

	start := time.Now()
	done := make(chan string, 2)
	if _, err := rt.HRAfterFunc(rt.CPUs()[0], 300*time.Microsecond, func() {
		done <- fmt.Sprintf("hrtimer (300µs) ran on worker %d after %v", rt.CPU(), time.Since(start))
	}, tmigr.Hard); err != nil {
		return err
	}
	rt.AfterFunc(5*time.Millisecond, func() {
		done <- fmt.Sprintf("wheel timer (5ms) ran on worker %d after %v", rt.CPU(), time.Since(start))
	}, tmigr.Coarse())
	fmt.Fprintln(w, <-done)
	fmt.Fprintln(w, <-done)
	return nil
}
