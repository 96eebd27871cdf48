package explain

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
)

// The one pass gives the report of the recording read whole, on every
// recording of testdata where it finishes; and it finishes on most.
func TestStreamIsWhole(t *testing.T) {
	files := recordings(t)
	passed := 0
	for _, f := range files {
		evs, hdr, err := ReadFile(f)
		if err != nil {
			continue
		}
		want, err := Build(evs, hdr, Options{})
		if err != nil {
			continue
		}
		in, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		r, c, err := ftrace.OpenReader(in, f)
		if err != nil {
			t.Fatal(err)
		}
		got := stream(r, Options{})
		c.Close()
		in.Close()
		if got == nil {
			t.Logf("%s: read whole", filepath.Base(f))
			continue
		}
		passed++
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the stream's report differs from the whole recording's", f)
		}
	}
	if passed < len(files)/2 {
		t.Errorf("the one pass finished on %d of %d recordings", passed, len(files))
	}
}

// On vm64-4node-mixed.txt, CPU 29's chain is written before its first
// per-CPU tmigr line shows it traces its transitions: the pass says it
// cannot give the whole recording's report, and ExplainFile reads the
// recording whole, and gives that report.
func TestStreamFallsBack(t *testing.T) {
	f := filepath.Join(tracesDir, "vm64-4node-mixed.txt")
	in, err := os.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	r, c, err := ftrace.OpenReader(in, f)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if stream(r, Options{}) != nil {
		t.Fatal("the pass finished, though CPU 29 was taken as untraced before it traced")
	}
	rep, err := ExplainFile(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs, hdr, err := ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Build(evs, hdr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want.File = f
	if !reflect.DeepEqual(rep, want) {
		t.Errorf("ExplainFile differs from the whole recording's report")
	}
}

// A report that keeps only the first events (Options.Events) prints the
// text of one that keeps them all, whatever CPUs it shows.
func TestKeepFirstEvents(t *testing.T) {
	cut := 0
	for _, f := range recordings(t) {
		all, err := ExplainFile(f, Options{})
		if err != nil {
			continue
		}
		for _, o := range []TextOptions{{MaxEvents: 1}, {MaxEvents: 3}, {MaxEvents: 2, CPUs: cpumask.Range(1, 3)}} {
			var want, got bytes.Buffer
			if err := all.WriteText(&want, o); err != nil {
				t.Fatal(err)
			}
			first, err := ExplainFile(f, Options{Events: o.MaxEvents, EventCPUs: o.CPUs})
			if err != nil {
				t.Fatal(err)
			}
			if len(first.Events) > o.MaxEvents {
				t.Errorf("%s: %d events kept, want at most %d", f, len(first.Events), o.MaxEvents)
			}
			if len(first.Events) < len(all.Events) {
				cut++
			}
			if err := first.WriteText(&got, o); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("%s, %+v: the text differs:\n%s\nwant:\n%s", filepath.Base(f), o, got.String(), want.String())
			}
		}
	}
	if cut == 0 {
		t.Error("no recording had more events than were kept")
	}
}

// recordings are the recordings of testdata.
func recordings(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(tracesDir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings: %v", err)
	}
	return files
}

// Standard input, a pipe, is read again from its copy when the one pass
// cannot finish: the report is the whole recording's.
func TestStreamFallsBackOnAPipe(t *testing.T) {
	f := filepath.Join(tracesDir, "vm64-4node-mixed.txt")
	text, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		pw.Write(text)
		pw.Close()
	}()
	stdin := os.Stdin
	os.Stdin = pr
	defer func() { os.Stdin = stdin; pr.Close() }()
	rep, err := ExplainFile("-", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := ExplainText(bytes.NewReader(text), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want.File = "-"
	if !reflect.DeepEqual(rep, want) {
		t.Errorf("ExplainFile(\"-\") differs from the whole recording's report")
	}
}
