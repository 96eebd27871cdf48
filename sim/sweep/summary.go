package sweep

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Summary gathers a sweep's run lines into one summary per configuration
// group: the points that differ only in their seed.
type Summary struct {
	groups  []*group
	byKey   map[string]*group
	partial bool
}

type group struct {
	params      Params
	runs        int
	partialRuns int
	worst       map[int][]float64 // CPU: its worst latency in each run, µs
	pulled      map[int]int       // CPU: runs in which it expired other CPUs' timers
	expired     map[int]uint64    // CPU: those timers, all runs together
}

// NewSummary returns an empty summary.
func NewSummary() *Summary { return &Summary{byKey: map[string]*group{}} }

// runFields are the fields of a run's JSON the summary reads.
type runFields struct {
	Partial bool `json:"partial"`
	CPUs    []struct {
		CPU     int `json:"cpu"`
		Latency *struct {
			Max float64 `json:"max"`
		} `json:"latency_us"`
		RemoteExpired uint64 `json:"remote_expired"`
	} `json:"cpus"`
}

// AddLine adds one run line (a Line's JSON).
func (s *Summary) AddLine(b []byte) error {
	var l Line
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("not a sweep line: %v", err)
	}
	var r runFields
	if err := json.Unmarshal(l.Run, &r); err != nil {
		return fmt.Errorf("line %d: run: %v", l.Index, err)
	}
	k := l.Params.key()
	g := s.byKey[k]
	if g == nil {
		g = &group{params: l.Params, worst: map[int][]float64{}, pulled: map[int]int{}, expired: map[int]uint64{}}
		s.byKey[k] = g
		s.groups = append(s.groups, g)
	}
	g.runs++
	if r.Partial {
		g.partialRuns++
		s.partial = true
	}
	for _, c := range r.CPUs {
		if c.Latency != nil {
			g.worst[c.CPU] = append(g.worst[c.CPU], c.Latency.Max)
		}
		if c.RemoteExpired > 0 {
			g.pulled[c.CPU]++
			g.expired[c.CPU] += c.RemoteExpired
		}
	}
	return nil
}

// SummaryLine is the JSON of one configuration group's summary.
type SummaryLine struct {
	SchemaVersion int          `json:"schema_version"`
	Summary       GroupSummary `json:"summary"`
}

// GroupSummary summarises the runs of one configuration.
type GroupSummary struct {
	Params Params `json:"params"`
	Runs   int    `json:"runs"`
	// PartialRuns counts runs stopped before their end; Partial marks a
	// summary of a sweep stopped before its end.
	PartialRuns int          `json:"partial_runs,omitempty"`
	Partial     bool         `json:"partial,omitempty"`
	CPUs        []CPUSummary `json:"cpus"`
}

// CPUSummary is one CPU over the runs of a configuration; CPUs that
// measured nothing and pulled nothing are left out.
type CPUSummary struct {
	CPU int `json:"cpu"`
	// Worst is the distribution of the CPU's worst latency over the runs
	// (µs), for CPUs that ran a measuring workload.
	Worst *Spread `json:"worst_us,omitempty"`
	// PulledRuns counts the runs in which the CPU expired other CPUs'
	// timers, PulledShare is their share of the runs, and
	// RemoteExpiredMean the timers it expired per run.
	PulledRuns        int     `json:"pulled_runs"`
	PulledShare       float64 `json:"pulled_share"`
	RemoteExpiredMean float64 `json:"remote_expired_mean"`
}

// Spread is a distribution's median, 99th percentile and maximum, by
// nearest rank: the value at rank ceil(p·n) of the n sorted values (so
// the median of an even count is the lower middle one).
type Spread struct {
	Median float64 `json:"median"`
	P99    float64 `json:"p99"`
	Max    float64 `json:"max"`
}

func spread(v []float64) *Spread {
	v = slices.Clone(v)
	slices.Sort(v)
	rank := func(p float64) float64 { return v[max(int(math.Ceil(p*float64(len(v))))-1, 0)] }
	return &Spread{Median: rank(0.5), P99: rank(0.99), Max: v[len(v)-1]}
}

// Groups returns the summaries, in the order of the configurations'
// first lines.
func (s *Summary) Groups() []GroupSummary {
	out := make([]GroupSummary, 0, len(s.groups))
	for _, g := range s.groups {
		gs := GroupSummary{Params: g.params, Runs: g.runs, PartialRuns: g.partialRuns, Partial: s.partial}
		cpus := map[int]bool{}
		for c := range g.worst {
			cpus[c] = true
		}
		for c := range g.pulled {
			cpus[c] = true
		}
		ids := make([]int, 0, len(cpus))
		for c := range cpus {
			ids = append(ids, c)
		}
		slices.Sort(ids)
		for _, c := range ids {
			cs := CPUSummary{CPU: c, PulledRuns: g.pulled[c],
				PulledShare:       round(float64(g.pulled[c])/float64(g.runs), 4),
				RemoteExpiredMean: round(float64(g.expired[c])/float64(g.runs), 3)}
			if w := g.worst[c]; len(w) > 0 {
				cs.Worst = spread(w)
			}
			gs.CPUs = append(gs.CPUs, cs)
		}
		if gs.CPUs == nil {
			gs.CPUs = []CPUSummary{}
		}
		out = append(out, gs)
	}
	return out
}

func round(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

// Write writes one summary line per configuration group.
func (s *Summary) Write(w io.Writer) error {
	for _, g := range s.Groups() {
		b, err := json.Marshal(SummaryLine{SchemaVersion, g})
		if err != nil {
			return err
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// Summarize reads the lines of one or more shards of a sweep (in any
// order; summary lines are dropped), checks that every configuration is
// there exactly once, and writes the run lines in index order and the
// summary: the output of the whole sweep run in one piece.
func Summarize(r io.Reader, w io.Writer) error {
	br := bufio.NewReaderSize(r, 1<<20)
	type rec struct {
		index int
		line  []byte
	}
	var recs []rec
	of := -1
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			line = bytes.TrimRight(line, "\r\n")
			var head struct {
				SchemaVersion int             `json:"schema_version"`
				Index         *int            `json:"index"`
				Of            int             `json:"of"`
				Summary       json.RawMessage `json:"summary"`
			}
			if e := json.Unmarshal(line, &head); e != nil {
				return fmt.Errorf("line %d: not a sweep line: %v", n, e)
			}
			switch {
			case head.SchemaVersion > SchemaVersion:
				return fmt.Errorf("line %d: schema_version %d, from a newer tmigr (this one reads up to %d)", n, head.SchemaVersion, SchemaVersion)
			case head.Summary != nil:
				continue
			case head.Index == nil:
				return fmt.Errorf("line %d: not a sweep line (no index)", n)
			case of >= 0 && head.Of != of:
				return fmt.Errorf("line %d: from a sweep of %d configurations, the lines before from one of %d", n, head.Of, of)
			case *head.Index < 0 || *head.Index >= head.Of:
				return fmt.Errorf("line %d: index %d outside the sweep's 0-%d", n, *head.Index, head.Of-1)
			}
			of = head.Of
			recs = append(recs, rec{*head.Index, slices.Clone(line)})
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if of < 0 {
		return errors.New("no sweep lines")
	}
	slices.SortStableFunc(recs, func(a, b rec) int { return a.index - b.index })
	var missing []string
	next := 0
	for i, r := range recs {
		if i > 0 && r.index == recs[i-1].index {
			return fmt.Errorf("configuration %d appears twice (a shard given twice?)", r.index)
		}
		if r.index > next {
			missing = append(missing, span(next, r.index-1))
		}
		next = r.index + 1
	}
	if next < of {
		missing = append(missing, span(next, of-1))
	}
	if len(missing) > 0 {
		if len(missing) > 8 {
			missing = append(missing[:8], "...")
		}
		return fmt.Errorf("%d of %d configurations are missing: %s (a shard not given?)", of-len(recs), of, strings.Join(missing, ","))
	}
	sum := NewSummary()
	bw := bufio.NewWriter(w)
	for _, r := range recs {
		if err := sum.AddLine(r.line); err != nil {
			return fmt.Errorf("configuration %d: %v", r.index, err)
		}
		bw.Write(r.line)
		bw.WriteByte('\n')
	}
	if err := sum.Write(bw); err != nil {
		return err
	}
	return bw.Flush()
}

func span(a, b int) string {
	if a == b {
		return fmt.Sprint(a)
	}
	return fmt.Sprintf("%d-%d", a, b)
}
