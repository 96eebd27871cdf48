package tracefs

import (
	"fmt"
	"strconv"
	"strings"
)

// Stats is a per-CPU ring buffer's counters, per_cpu/cpuN/stats:
//
//	entries: 0
//	overrun: 0
//	commit overrun: 0
//	bytes: 0
//	oldest event ts:     0.000000
//	now ts: 13746.997496
//	dropped events: 0
//	read events: 0
type Stats struct {
	Entries       uint64 // events in the buffer
	Overrun       uint64 // overwritten before they were read
	CommitOverrun uint64 // lost by nested writes that overran the page
	DroppedEvents uint64 // not written: the buffer was full and does not overwrite
	ReadEvents    uint64 // read so far
}

// Lost is the events the buffer lost.
func (s Stats) Lost() uint64 { return s.Overrun + s.CommitOverrun + s.DroppedEvents }

// ParseStats reads a stats file. The counters are "name: N" lines;
// others (the time stamps, lines later kernels add) are skipped. overrun
// is required: a file without it is not a stats file.
func ParseStats(b []byte) (Stats, error) {
	var s Stats
	seen := false
	for i, line := range strings.Split(string(b), "\n") {
		name, val, ok := strings.Cut(line, ":")
		if !ok {
			if strings.TrimSpace(line) != "" {
				return Stats{}, fmt.Errorf("line %d: %q is not \"name: value\"", i+1, clip(line))
			}
			continue
		}
		var dst *uint64
		switch name {
		case "entries":
			dst = &s.Entries
		case "overrun":
			dst, seen = &s.Overrun, true
		case "commit overrun":
			dst = &s.CommitOverrun
		case "dropped events":
			dst = &s.DroppedEvents
		case "read events":
			dst = &s.ReadEvents
		default:
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return Stats{}, fmt.Errorf("line %d: %s: %q is not a count", i+1, name, clip(strings.TrimSpace(val)))
		}
		*dst = v
	}
	if !seen {
		return Stats{}, fmt.Errorf("no \"overrun:\" line")
	}
	return s, nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
