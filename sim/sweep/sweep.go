// Package sweep runs many simulations of one command line: a grid of
// parameter values crossed with a list of seeds, on N workers, with one
// JSON line per run in configuration order and a summary across the
// runs of each configuration.
//
// # The plan
//
// A Plan is axes and seeds. An axis is a name and its values, given as
// "cpus=64,128" (values split at commas outside parentheses, so
// "cost.tick=lognormal(1us,0.3),2us" has two) or "isolcpus=1-7,9-15|1-15"
// (values split at '|' when there is one, for values with commas of their
// own); axes are separated by ';'. Configuration index i enumerates the
// cross product like nested loops in the order the axes are written, the
// first axis outermost and the seeds innermost:
//
//	--grid 'cpus=64,128;policy=pull,pull-isolated' --seeds 1-3
//
//	index  0 1 2 | 3 4 5 | 6 7 8 | 9 10 11
//	cpus   64    | 64    | 128   | 128
//	policy pull  | p-iso | pull  | p-iso
//	seed   1 2 3 | 1 2 3 | 1 2 3 | 1 2  3
//
// What a name means (a machine flag, a cost parameter) is the caller's:
// package sweep only enumerates and runs.
//
// # Output
//
// Run writes one Line per configuration, {"index", "of", "seed",
// "params", "run"}, in index order whatever the number of workers and
// whichever run finishes first, then one summary line per configuration
// group (the points that differ only in the seed): each CPU's worst
// latency over the seeds (median, p99, max) and how often it pulled
// other CPUs' timers. Nothing in either depends on the workers, the
// machine or the wall clock, so a sweep's output is a pure function of
// its command line.
//
// # Spreading a sweep over machines
//
// Shard{I, N} selects the I-th of N contiguous slices of the indices (I
// from 0), and a sharded run writes its run lines only. The shards'
// outputs, concatenated in any order and given to Summarize, are the
// whole sweep's output byte for byte: Summarize sorts the lines by
// index, checks that every index is there exactly once, and appends the
// summary. Any batch system can run the shards, nothing of tmigr's in
// between: a Kubernetes Indexed Job (--shard $JOB_COMPLETION_INDEX/N), a
// Slurm array (--array=0-7, --shard $SLURM_ARRAY_TASK_ID/8), GNU
// parallel (parallel tmigr sim ... --shard {}/8 '>' part{}.jsonl :::
// $(seq 0 7)), then cat part*.jsonl | tmigr sim --summarize.
package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxPoints bounds a plan: a sweep larger than this is a typo.
const MaxPoints = 10_000_000

// Axis is one swept name and its values.
type Axis struct {
	Name   string
	Values []string
}

// Setting is one name's value in a configuration.
type Setting struct{ Name, Value string }

// Params are a configuration's settings in axis order. They marshal as a
// JSON object with the keys in that order.
type Params []Setting

// Plan is a sweep: the cross product of the axes, each configuration run
// once per seed.
type Plan struct {
	Axes  []Axis
	Seeds []uint64
}

// Point is one configuration of a plan.
type Point struct {
	Index  int
	Seed   uint64
	Params Params
}

// ParseGrid reads axes: "NAME=V1,V2;NAME2=A|B" (see the package doc for
// how values are split).
func ParseGrid(spec string) ([]Axis, error) {
	var axes []Axis
	for _, part := range splitTop(spec, ';') {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, vals, ok := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("--grid %q: want NAME=VALUE,VALUE,... (axes separated by ';')", part)
		}
		for _, r := range name {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
				return nil, fmt.Errorf("--grid %q: bad name %q", part, name)
			}
		}
		var values []string
		if strings.Contains(vals, "|") {
			values = strings.Split(vals, "|")
		} else {
			values = splitTop(vals, ',')
		}
		seen := map[string]bool{}
		for i, v := range values {
			v = strings.TrimSpace(v)
			if v == "" {
				return nil, fmt.Errorf("--grid %q: empty value", part)
			}
			if seen[v] {
				return nil, fmt.Errorf("--grid %q: value %q given twice", part, v)
			}
			seen[v] = true
			values[i] = v
		}
		axes = append(axes, Axis{Name: name, Values: values})
	}
	if len(axes) == 0 {
		return nil, fmt.Errorf("--grid %q: no axis", spec)
	}
	return axes, nil
}

// splitTop splits s at sep outside parentheses.
func splitTop(s string, sep byte) []string {
	var out []string
	depth, from := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth = max(depth-1, 0)
		case sep:
			if depth == 0 {
				out = append(out, s[from:i])
				from = i + 1
			}
		}
	}
	return append(out, s[from:])
}

// ParseSeeds reads a list of seeds: "1-100", "1,5,9-12".
func ParseSeeds(spec string) ([]uint64, error) {
	var out []uint64
	seen := map[uint64]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("--seeds %q: %q is not a seed (want e.g. 1-100 or 1,5,9-12)", spec, part)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("--seeds %q: bad range %q", spec, part)
			}
		}
		if b-a >= MaxPoints {
			return nil, fmt.Errorf("--seeds %q: more than %d seeds", spec, MaxPoints)
		}
		for s := a; ; s++ {
			if seen[s] {
				return nil, fmt.Errorf("--seeds %q: seed %d given twice", spec, s)
			}
			seen[s] = true
			out = append(out, s)
			if len(out) > MaxPoints {
				return nil, fmt.Errorf("--seeds %q: more than %d seeds", spec, MaxPoints)
			}
			if s == b {
				break
			}
		}
	}
	return out, nil
}

// Len returns the number of points, or an error when the plan is empty
// or too large.
func (p Plan) Len() (int, error) {
	n := len(p.Seeds)
	for _, a := range p.Axes {
		if len(a.Values) == 0 {
			return 0, fmt.Errorf("axis %s has no value", a.Name)
		}
		if n > MaxPoints/len(a.Values) {
			return 0, fmt.Errorf("the sweep has more than %d configurations", MaxPoints)
		}
		n *= len(a.Values)
	}
	if n == 0 {
		return 0, errors.New("the sweep has no seed")
	}
	return n, nil
}

// Point returns the point of index i (0 <= i < Len).
func (p Plan) Point(i int) Point {
	pt := Point{Index: i, Seed: p.Seeds[i%len(p.Seeds)], Params: make(Params, len(p.Axes))}
	rest := i / len(p.Seeds)
	for a := len(p.Axes) - 1; a >= 0; a-- {
		ax := p.Axes[a]
		pt.Params[a] = Setting{ax.Name, ax.Values[rest%len(ax.Values)]}
		rest /= len(ax.Values)
	}
	return pt
}

// Shard is the I-th of N slices of a sweep (0 <= I < N); the zero Shard
// is the whole sweep.
type Shard struct{ I, N int }

// ParseShard reads "I/N".
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("--shard %q: want I/N with 0 <= I < N (the I-th of N slices, counted from 0)", s)
	}
	return Shard{i, n}, nil
}

// Range returns the indices [lo, hi) of the shard in a sweep of n points:
// contiguous, in order, sizes differing by at most one.
func (s Shard) Range(n int) (lo, hi int) {
	if s.N <= 1 {
		return 0, n
	}
	return s.I * n / s.N, (s.I + 1) * n / s.N
}

// MarshalJSON writes the settings as an object in axis order.
func (ps Params) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, s := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(s.Name)
		v, _ := json.Marshal(s.Value)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads an object of strings, keeping the key order.
func (ps *Params) UnmarshalJSON(data []byte) error {
	d := json.NewDecoder(bytes.NewReader(data))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return errors.New("params: want an object")
	}
	*ps = (*ps)[:0]
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return err
		}
		var v string
		if err := d.Decode(&v); err != nil {
			return fmt.Errorf("params: %v", err)
		}
		*ps = append(*ps, Setting{k.(string), v})
	}
	_, err := d.Token()
	return err
}

func (ps Params) key() string {
	b, _ := ps.MarshalJSON()
	return string(b)
}

// SchemaVersion is the schema_version of a sweep's lines: fields are
// only added within a version (docs/json.md).
const SchemaVersion = 1

// Line is a run's line of output.
type Line struct {
	SchemaVersion int    `json:"schema_version"`
	Index         int    `json:"index"`
	Of            int    `json:"of"`
	Seed          uint64 `json:"seed"`
	Params        Params `json:"params"`
	// Run is the run's JSON: package report's Run, without its wall time.
	Run json.RawMessage `json:"run"`
}

// RunFunc runs one point and returns its run's JSON, a report.Run object
// without the wall time. progress may be called with the share of the
// run done (0 to 1), from any goroutine. When ctx is done the run should
// stop and return what it simulated, marked partial, with a nil error.
type RunFunc func(ctx context.Context, p Point, progress func(done float64)) (json.RawMessage, error)

// Status is a sweep's progress.
type Status struct {
	Done, Running, Total int
	// Share is the share of the sweep done, the running runs' parts
	// included.
	Share float64
	Wall  time.Duration
}

// ETA estimates the wall time left at the pace so far (0 while unknown).
func (s Status) ETA() time.Duration {
	if s.Share <= 0 {
		return 0
	}
	return time.Duration(float64(s.Wall) * (1 - s.Share) / s.Share)
}

// Options control Run.
type Options struct {
	// Workers is the number of runs at a time (at least 1).
	Workers int
	// Shard selects the slice of the sweep to run; a sharded sweep
	// writes no summary (Summarize makes it from all shards' lines).
	Shard Shard
	// Progress, if not nil, is called about every ProgressEvery.
	Progress func(Status)
}

// ProgressEvery is about how often Run calls Options.Progress.
const ProgressEvery = 250 * time.Millisecond

// ErrPartial is returned by Run when its context ended the sweep: the
// lines written are the runs started until then (the last ones partial),
// with a summary marked partial.
var ErrPartial = errors.New("sweep stopped before its end")

// Run runs the plan's points (of the shard) on opts.Workers workers and
// writes their lines to w in index order, then the summary. It stops at
// the first run that fails, with that run's error, after the lines of the
// runs before it.
func Run(ctx context.Context, plan Plan, opts Options, run RunFunc, w io.Writer) error {
	n, err := plan.Len()
	if err != nil {
		return err
	}
	lo, hi := opts.Shard.Range(n)
	workers := max(opts.Workers, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type result struct {
		line []byte
		err  error
	}
	var (
		mu      sync.Mutex
		shares  = map[int]float64{} // running runs' progress
		results = make(chan struct {
			i int
			result
		})
		next = lo
	)
	start := time.Now()
	status := func(done int) Status {
		mu.Lock()
		defer mu.Unlock()
		s := Status{Done: done, Running: len(shares), Total: hi - lo, Wall: time.Since(start)}
		part := float64(done)
		for _, f := range shares {
			part += f
		}
		if s.Total > 0 {
			s.Share = part / float64(s.Total)
		}
		return s
	}
	launch := func(i int) {
		mu.Lock()
		shares[i] = 0
		mu.Unlock()
		go func() {
			p := plan.Point(i)
			js, err := run(ctx, p, func(f float64) {
				mu.Lock()
				if _, ok := shares[i]; ok {
					shares[i] = min(max(f, 0), 1)
				}
				mu.Unlock()
			})
			var r result
			if err != nil {
				r.err = fmt.Errorf("configuration %d (%s): %w", i, p.describe(), err)
			} else {
				r.line, r.err = json.Marshal(Line{SchemaVersion: SchemaVersion, Index: i, Of: n, Seed: p.Seed, Params: p.Params, Run: js})
			}
			mu.Lock()
			delete(shares, i)
			mu.Unlock()
			results <- struct {
				i int
				result
			}{i, r}
		}()
	}
	for next < hi && next-lo < workers {
		launch(next)
		next++
	}
	var sum *Summary
	if opts.Shard.N <= 1 {
		sum = NewSummary()
	}
	pending := map[int]result{}
	emit, running, done := lo, next-lo, 0
	var firstErr error
	tick := time.NewTicker(ProgressEvery)
	defer tick.Stop()
	for running > 0 {
		select {
		case <-tick.C:
			if opts.Progress != nil {
				opts.Progress(status(done))
			}
			continue
		case r := <-results:
			running--
			done++
			pending[r.i] = r.result
			if r.err != nil && firstErr == nil {
				firstErr = r.err
				cancel()
			}
		}
		for {
			r, ok := pending[emit]
			if !ok || r.err != nil {
				break
			}
			delete(pending, emit)
			if _, err := w.Write(append(r.line, '\n')); err != nil && firstErr == nil {
				firstErr = err
				cancel()
			}
			if sum != nil {
				if err := sum.AddLine(r.line); err != nil && firstErr == nil {
					firstErr = err
				}
			}
			emit++
		}
		if firstErr == nil && ctx.Err() == nil && next < hi {
			launch(next)
			next++
			running++
		}
	}
	if opts.Progress != nil {
		opts.Progress(status(done))
	}
	if firstErr != nil {
		return firstErr
	}
	partial := emit < hi
	if sum != nil {
		sum.partial = sum.partial || partial
		if err := sum.Write(w); err != nil {
			return err
		}
	}
	if partial || sum != nil && sum.partial {
		return ErrPartial
	}
	return nil
}

func (p Point) describe() string {
	var b strings.Builder
	for _, s := range p.Params {
		fmt.Fprintf(&b, "%s=%s ", s.Name, s.Value)
	}
	fmt.Fprintf(&b, "seed %d", p.Seed)
	return b.String()
}
