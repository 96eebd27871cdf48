package ftrace

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/tmigr/tmigr/ftrace/tracedat"
)

// Format is the form a trace came in.
type Format int

const (
	FormatUnknown Format = iota
	// FormatTracefs is the kernel's text: /sys/kernel/tracing/trace,
	// trace_pipe, per_cpu/cpuN/trace, and our simulator's traces.
	FormatTracefs
	// FormatReport is the text of trace-cmd report, in any of the forms
	// report.go lists.
	FormatReport
	// FormatTraceDat is trace-cmd's binary trace.dat (versions 6 and 7),
	// read by package tracedat.
	FormatTraceDat
)

func (f Format) String() string {
	switch f {
	case FormatTracefs:
		return "tracefs text"
	case FormatReport:
		return "trace-cmd report text"
	case FormatTraceDat:
		return "trace.dat"
	}
	return "unknown"
}

// Source describes what Open found.
type Source struct {
	Name   string // the path given; "-" for standard input
	Format Format
	Gzip   bool // the input was gzip-compressed
	// For a trace.dat: its version (6 or 7), its compression ("none",
	// "zstd", "zlib"), the instance read ("" for the top one), its trace
	// clock, the recording machine's uname line, and the options of the
	// file this reader does not apply.
	DatVersion  int
	Compression string
	Buffer      string
	Clock       string
	Uname       string
	Ignored     []string
	// Warnings name what the input holds wrong or not at all, as far as
	// the Reader can tell ("timer_start flags: ...").
	Warnings []string
}

func (s Source) String() string {
	var b strings.Builder
	b.WriteString(s.Format.String())
	if s.Format == FormatTraceDat {
		fmt.Fprintf(&b, " v%d", s.DatVersion)
		if s.Compression != "" && s.Compression != "none" {
			fmt.Fprintf(&b, " (%s)", s.Compression)
		}
		if s.Buffer != "" {
			fmt.Fprintf(&b, ", buffer %s", strconv.Quote(s.Buffer))
		}
		if s.Clock != "" {
			fmt.Fprintf(&b, ", clock %s", s.Clock)
		}
	}
	if s.Gzip {
		b.WriteString(", gzip-compressed")
	}
	return b.String()
}

// Source returns what the Reader reads; for text, the format as far as the
// lines read so far tell (trace-cmd report's forms may appear late).
func (r *Reader) Source() Source {
	s := r.source
	if r.format != FormatUnknown {
		s.Format = r.format
	}
	return s
}

// Open opens a trace for reading, whatever its form: the kernel's text,
// trace-cmd report's text, or a trace.dat (see Format), any of them
// gzip-compressed (told by the data, not the name); "-" reads standard
// input. Input that is none of these fails at once, naming what it looks
// like (a perf.data, JSON, an image, ...).
//
// The Reader it returns delivers the events in time order: text out of
// order (per-CPU files concatenated) is sorted within a window of
// DefaultWindow events (see orderCheck); a trace.dat's CPUs are merged by
// time as trace-cmd report merges them. It streams: what it holds is
// bounded by the window, not by the input's length. Unlike NewReader's,
// this Reader stops at the first error, and the events it held back then
// are not returned.
//
// The Closer releases the file and what reading it took (a temporary copy
// of a compressed or piped trace.dat); call it when done with the Reader.
func Open(path string) (*Reader, io.Closer, error) {
	return OpenWith(path, OpenOptions{})
}

// OpenWith is Open with a choice of what to do with events out of time
// order, and of the window that sorts them.
func OpenWith(path string, o OpenOptions) (*Reader, io.Closer, error) {
	if path == "-" {
		return OpenReaderWith(os.Stdin, "-", o)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	r, c, err := OpenReaderWith(f, path, o)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return r, closers{c, f}, nil
}

// OpenReader is Open of an already open input; name is what Source reports.
func OpenReader(src io.Reader, name string) (*Reader, io.Closer, error) {
	return OpenReaderWith(src, name, OpenOptions{})
}

// OpenReaderWith is OpenWith of an already open input.
func OpenReaderWith(src io.Reader, name string, o OpenOptions) (*Reader, io.Closer, error) {
	br := bufio.NewReaderSize(src, fillSize)
	head, err := br.Peek(len(tracedat.Magic))
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, nil, err
	}
	source := Source{Name: name}
	var c closers
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		c = append(c, zr)
		source.Gzip = true
		br = bufio.NewReaderSize(zr, fillSize)
		if head, err = br.Peek(len(tracedat.Magic)); err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
	}
	if string(head) == tracedat.Magic {
		ra, size, tmp, err := randomAccess(src, br, source.Gzip)
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		if tmp != nil {
			c = append(c, tmp)
		}
		f, err := tracedat.Open(ra, size)
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		r, err := openDat(f, source)
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		r.win = newWindow(o)
		return r, c, nil
	}
	r := NewReader(br)
	r.source = source
	r.win = newWindow(o)
	return r, c, nil
}

// randomAccess returns the trace.dat as an io.ReaderAt: the file itself
// when it is one, else (a pipe, gzip) a temporary copy.
func randomAccess(src io.Reader, br *bufio.Reader, gz bool) (io.ReaderAt, int64, io.Closer, error) {
	if f, ok := src.(*os.File); ok && !gz {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			return f, st.Size(), nil, nil
		}
	}
	tmp, err := os.CreateTemp("", "tmigr-trace-*.dat")
	if err != nil {
		return nil, 0, nil, fmt.Errorf("trace.dat from a pipe or gzip needs a temporary copy: %w", err)
	}
	rm := removeFile{tmp}
	n, err := io.Copy(tmp, br)
	if err != nil {
		rm.Close()
		return nil, 0, nil, fmt.Errorf("copying the trace.dat: %w", err)
	}
	return tmp, n, rm, nil
}

type removeFile struct{ f *os.File }

func (r removeFile) Close() error {
	err := r.f.Close()
	if e := os.Remove(r.f.Name()); err == nil {
		err = e
	}
	return err
}

// closers closes each in turn.
type closers []io.Closer

func (cs closers) Close() error {
	var first error
	for _, c := range cs {
		if c == nil {
			continue
		}
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// ReadAll reads the rest of r's events into memory, for a check that needs
// a whole recording at once; it stops at the first error.
//
// The events hold no part of the text they were read from: a Reader's
// event holds slices of its read buffer (see Reader), and a recording kept
// whole would keep every buffer alive, the rest of each line too. ReadAll
// copies an event's strings instead, those that repeat (task names, flags,
// functions) once for all, the payloads packed together, so that each
// buffer is freed once read.
func ReadAll(r *Reader) ([]Event, error) { return readKept(r, keeper{payloads: true}) }

// ReadAllData is ReadAll for a check that reads the events' decoded
// payloads (Data) and never their text: every event's Payload is "", and
// the memory of the recording's payloads, most of its text, is saved.
func ReadAllData(r *Reader) ([]Event, error) { return readKept(r, keeper{}) }

func readKept(r *Reader, keep keeper) ([]Event, error) {
	k := newKeeping(r, keep)
	defer k.Close()
	var evs []Event
	for {
		if evs == nil {
			// The header, complete once the first event is read, may
			// say how many events follow: one slice of that size
			// rather than a series of copies, each twice the last.
			ev, err := k.Read(nil, 1)
			if err == io.EOF {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			evs = append(make([]Event, 0, min(max(r.hdr.Entries, 64), maxPrealloc)), ev...)
		}
		var err error
		if evs, err = k.Read(evs, 1<<16); err == io.EOF {
			return evs, nil
		} else if err != nil {
			return nil, err
		}
	}
}

// A Keeping reads a Reader's events a batch at a time and keeps each as
// ReadAllData keeps it: for a check that holds a bounded window of a
// recording rather than the whole (the replay of a recording longer than
// its segment, replay.RunFile). What it shares among the events (the
// repeated strings, the repeated payloads) is bounded by the machine, not
// by the recording's length.
type Keeping struct {
	r        *Reader
	keep     *keeper
	inReader bool
}

// KeepData starts keeping r's events as ReadAllData does. Close ends it.
func KeepData(r *Reader) *Keeping { return newKeeping(r, keeper{}) }

func newKeeping(r *Reader, keep keeper) *Keeping {
	k := &Keeping{r: r, keep: &keep}
	r.dec.syms, r.dec.share = &k.keep.syms, &k.keep.share
	// A text Reader that has read no event yet copies what it keeps as it
	// reads each (and so reuses its buffers); events it holds from before
	// are copied here, as a trace.dat's are.
	k.inReader = r.dat == nil && r.stats.Events == 0
	if k.inReader {
		r.keep = k.keep
	}
	return k
}

// Read appends up to n of the next events to dst. At the end of the
// recording it returns the events it appended and io.EOF; on an error,
// dst as it was and the error.
func (k *Keeping) Read(dst []Event, n int) ([]Event, error) {
	start := len(dst)
	for range n {
		// Each event is read into its place in dst (Reader.nextTo, which
		// sets every field), where dst has room: at its capacity, into
		// one of its own, so that dst grows only for an event there is.
		var ev *Event
		var spare Event
		if len(dst) < cap(dst) {
			dst = dst[:len(dst)+1]
			ev = &dst[len(dst)-1]
		} else {
			ev = &spare
		}
		if err := k.r.nextTo(ev); err != nil {
			if ev != &spare {
				*ev = Event{} // dst's array is kept: it holds nothing it does not need
				dst = dst[:len(dst)-1]
			}
			if err == io.EOF {
				return dst, io.EOF
			}
			return dst[:start], err
		}
		if !k.inReader {
			k.keep.detach(ev, k.r.dat == nil)
		}
		if ev == &spare {
			dst = append(dst, spare)
		}
	}
	return dst, nil
}

// Close ends the keeping: the Reader reads on as before it began.
func (k *Keeping) Close() {
	k.r.dec.syms, k.r.dec.share, k.r.keep, k.r.kept = nil, nil, nil, nil
}

// maxPrealloc bounds what a header's count of entries makes ReadAll
// reserve (a header can lie).
const maxPrealloc = 1 << 22
