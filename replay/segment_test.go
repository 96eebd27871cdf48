package replay

import (
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/tmigr/tmigr/ftrace"
)

var allChecks = Options{Wheel: true, Tmigr: true, Hrtimer: true, Placement: true}

// TestSegmentsTile: the lines the segments own tile the recording, so that
// segments that each replay the whole recording count every decision
// exactly once: their sum is the whole recording's outcome. A decision
// counted at a line no segment owns, or at one that two segments own,
// would make them differ.
func TestSegmentsTile(t *testing.T) {
	for _, f := range traceFiles(t) {
		tr, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		whole, err := Run(tr, allChecks)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		n := len(tr.Events)
		seg := max(n/3, 1)
		var parts []*Result
		for from := 0; from < n; from += seg {
			to := min(from+seg, n)
			last := to+seg > n
			if last {
				to = n
			}
			st := *tr
			st.own = ownedSpan(tr.Events, from, to, from == 0, last)
			r, err := Run(&st, allChecks)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			parts = append(parts, r)
			if last {
				break
			}
		}
		sum := mergeSegments(tr.File, parts, allChecks, seg, 0)
		if len(sum.Checks) != len(whole.Checks) {
			t.Errorf("%s: segments ran %d checks, the whole %d", filepath.Base(f), len(sum.Checks), len(whole.Checks))
			continue
		}
		for i, c := range whole.Checks {
			s := sum.Checks[i]
			if !sameCounts(*s.Counts, *c.Counts) {
				t.Errorf("%s: %s: segments counted %d checked, %d matched, %d undetermined %v, %d mismatches; the whole %d, %d, %d %v, %d",
					filepath.Base(f), c.Name, s.Checked, s.Matched, s.Undetermined, s.UndeterminedReasons, len(s.Mismatches),
					c.Checked, c.Matched, c.Undetermined, c.UndeterminedReasons, len(c.Mismatches))
			}
		}
	}
}

func sameCounts(a, b Counts) bool {
	return a.Checked == b.Checked && a.Matched == b.Matched && a.Undetermined == b.Undetermined &&
		maps.Equal(a.UndeterminedReasons, b.UndeterminedReasons) &&
		slices.Equal(a.Mismatches, b.Mismatches) && slices.EqualFunc(a.Inferred, b.Inferred, func(x, y Inference) bool {
		return x.Line == y.Line && x.CPU == y.CPU && x.Event == y.Event && slices.Equal(x.Causes, y.Causes)
	})
}

// TestOwnedSpanOutOfOrder: where the Reader put lines out of order, the
// owned lines are listed, and no margin's line is owned.
func TestOwnedSpanOutOfOrder(t *testing.T) {
	evs := []ftrace.Event{{Line: 10}, {Line: 12}, {Line: 11}, {Line: 14}, {Line: 13}, {Line: 15}}
	s := ownedSpan(evs, 2, 4, false, false)
	for line, want := range map[int]bool{0: false, 10: false, 11: true, 12: false, 13: false, 14: true, 15: false} {
		if s.has(line) != want {
			t.Errorf("line %d owned: %v, want %v", line, !want, want)
		}
	}
	if s := ownedSpan(evs, 0, 2, true, false); !s.has(0) || !s.has(12) || s.has(11) {
		t.Errorf("first segment: owns 0 %v, 12 %v, 11 %v; want true, true, false", s.has(0), s.has(12), s.has(11))
	}
	in := []ftrace.Event{{Line: 10}, {Line: 11}, {Line: 13}, {Line: 14}}
	if s := ownedSpan(in, 1, 3, false, false); s.listed != nil || !s.has(11) || !s.has(12) || !s.has(13) || s.has(14) || s.has(10) {
		t.Errorf("in order: %+v", s)
	}
	if s := ownedSpan(in, 2, 4, false, true); !s.has(1<<40) || s.has(11) {
		t.Errorf("last segment: %+v", s)
	}
}

// TestRunStreamSegments: runStream hands each segment the events of its own
// and of the margins around it, in the recording's order, and the owned
// spans follow one another.
func TestRunStreamSegments(t *testing.T) {
	f := traceFiles(t)[0]
	whole, err := ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	n := len(whole.Events)
	for _, sz := range []struct{ seg, margin int }{{n / 4, n / 10}, {n / 3, 1}, {n / 2, n}, {n, 1}, {7, 3}} {
		rd, c, err := ftrace.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		var got []*Trace
		_, err = runStream(rd, f, Options{Segment: sz.seg, Margin: sz.margin}, func(tr *Trace, _ Options) (*Result, error) {
			cp := *tr
			cp.Events = append([]ftrace.Event(nil), tr.Events...)
			got = append(got, &cp)
			return &Result{}, nil
		})
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if sz.seg+sz.margin >= n {
			if len(got) != 1 || len(got[0].Events) != n || !reflect.DeepEqual(got[0].own, lineSpan{}) {
				t.Errorf("seg %d margin %d: a recording of %d events not checked whole", sz.seg, sz.margin, n)
			}
			continue
		}
		want := (n - sz.margin + sz.seg - 1) / sz.seg
		if len(got) != want {
			t.Errorf("seg %d margin %d: %d segments of %d events, want %d", sz.seg, sz.margin, len(got), n, want)
		}
		for k, tr := range got {
			from := k * sz.seg
			lo := max(from-sz.margin, 0)
			to := min(from+sz.seg, n)
			if k == len(got)-1 {
				to = n
			}
			hi := min(to+sz.margin, n)
			if len(tr.Events) != hi-lo || tr.Events[0].Line != whole.Events[lo].Line || tr.Events[len(tr.Events)-1].Line != whole.Events[hi-1].Line {
				t.Errorf("seg %d margin %d: segment %d holds lines %d-%d (%d events), want %d-%d (%d)", sz.seg, sz.margin, k,
					tr.Events[0].Line, tr.Events[len(tr.Events)-1].Line, len(tr.Events), whole.Events[lo].Line, whole.Events[hi-1].Line, hi-lo)
				continue
			}
			for i := lo; i < hi; i++ {
				if owned := tr.own.has(whole.Events[i].Line); owned != (i >= from && i < to) {
					t.Errorf("seg %d margin %d: segment %d owns line %d (event %d): %v", sz.seg, sz.margin, k, whole.Events[i].Line, i, owned)
					break
				}
			}
			if tr.own.has(0) != (k == 0) {
				t.Errorf("seg %d margin %d: segment %d owns line 0: %v", sz.seg, sz.margin, k, k != 0)
			}
		}
	}
}

// TestSegmentedTraces: every recording of testdata/traces checked in
// segments of a few thousand events, with margins of a thousand events and
// of a hundred, shows no mismatch: a segment's start is a recording's
// start, and its cut end a recording's end, to every check.
func TestSegmentedTraces(t *testing.T) {
	for _, sz := range []struct{ seg, margin int }{{4000, 1000}, {1500, 100}} {
		for _, f := range traceFiles(t) {
			o := allChecks
			o.Segment, o.Margin = sz.seg, sz.margin
			r, err := RunFile(f, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range r.Checks {
				for i, m := range c.Mismatches {
					if i < 3 {
						t.Errorf("%s (segments of %d, margin %d) line %d: %s: %s: kernel %s, model %s",
							filepath.Base(f), sz.seg, sz.margin, m.Line, c.Name, m.Event, m.Kernel, m.Model)
					}
				}
			}
		}
	}
}
