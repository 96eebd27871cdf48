package viz

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/sim"
)

// WriteFile writes a file atomically: into a temporary file beside it,
// renamed over path only once write returned without error and the data
// is on disk. A failed write leaves what was at path untouched.
func WriteFile(path string, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 256<<10)
	if err = write(bw); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Pictures are the files a command writes from a timeline.
type Pictures struct {
	Perfetto string // --perfetto FILE, "" for none
	HTML     string // --html FILE, "" for none
}

// Any reports whether a picture is asked for.
func (p Pictures) Any() bool { return p.Perfetto != "" || p.HTML != "" }

// Check makes sure, before a command's long work, that each picture asked
// for can be written: its directory exists and takes a new file, and the
// path is not a directory. It writes nothing that stays. Without it a run
// of minutes ended in an error naming WriteFile's temporary file.
func (p Pictures) Check() error {
	for _, f := range []struct{ flag, path string }{{"--perfetto", p.Perfetto}, {"--html", p.HTML}} {
		if f.path == "" {
			continue
		}
		if err := checkWritable(f.path); err != nil {
			return fmt.Errorf("%s: %w", f.flag, err)
		}
	}
	return nil
}

// checkWritable reports whether a file can be written at path the way
// WriteFile writes it.
func checkWritable(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: directory %s does not exist", path, dir)
	case err != nil:
		return fmt.Errorf("%s: %w", path, err)
	case !st.IsDir():
		return fmt.Errorf("%s: %s is not a directory", path, dir)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("%s: cannot write in %s: %w", path, dir, errors.Unwrap(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

// Write writes the pictures asked for.
func (p Pictures) Write(tl *Timeline, x Extras) error {
	if p.Perfetto != "" {
		if err := WriteFile(p.Perfetto, func(w io.Writer) error { return WritePerfetto(w, tl) }); err != nil {
			return fmt.Errorf("--perfetto: %w", err)
		}
	}
	if p.HTML != "" {
		if err := WriteFile(p.HTML, func(w io.Writer) error { return WriteHTML(w, tl, x) }); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	return nil
}

// FromTrace writes the pictures of a recording (replay, explain).
func (p Pictures) FromTrace(hdr ftrace.Header, events []ftrace.Event, title string) error {
	tl, err := FromEvents(hdr, events)
	if err != nil {
		return err
	}
	return p.Write(tl, Extras{Title: title})
}

// FromSim writes the pictures of a simulated run from the trace it wrote
// (Config.Trace): its timeline, with the isolated partition the trace's
// machine line leaves out, the measured window and the latency the run
// recorded.
func (p Pictures) FromSim(res *sim.Result, trace []byte, title string) error {
	// The simulator prints the events of one CPU's interrupt as a block,
	// out of time order with the other CPUs'; each CPU's are in order, so
	// sorting by time is exact and not worth a warning.
	tl, err := read(bytes.NewReader(trace), false)
	if err != nil {
		return fmt.Errorf("the run's trace: %w", err)
	}
	tl.SetPartition(res.Config.Partition)
	return p.Write(tl, SimExtras(res, title))
}
