package kernel

import (
	"fmt"
	"strings"
)

// Oldest is the oldest release whose rules the package models: the oldest
// series with recordings in testdata/traces to check the model against.
// The switches go further back (push-at-enqueue is 2.6.31's), but nothing
// older than 6.1 has been compared with a real kernel.
var Oldest = V(6, 1, 0)

// lastMinor is the last minor of each mainline major series that has ended
// within the modelled range (Linux went from 6.19 to 7.0).
var lastMinor = map[int]int{6: 19}

// Series returns the mainline series the package models, oldest first:
// "6.1" to "6.19", then "7.0" to Newest's.
func Series() []string {
	var out []string
	for major := Oldest.Major; major <= Newest.Major; major++ {
		first, last := 0, Newest.Minor
		if major == Oldest.Major {
			first = Oldest.Minor
		}
		if l, ok := lastMinor[major]; ok && major < Newest.Major {
			last = l
		}
		for minor := first; minor <= last; minor++ {
			out = append(out, fmt.Sprintf("%d.%d", major, minor))
		}
	}
	return out
}

// seriesText names the modelled series as ranges: "6.1-6.19, 7.0-7.3".
func seriesText() string {
	var ranges []string
	s := Series()
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && strings.Split(s[j+1], ".")[0] == strings.Split(s[i], ".")[0] {
			j++
		}
		if i == j {
			ranges = append(ranges, s[i])
		} else {
			ranges = append(ranges, s[i]+"-"+s[j])
		}
		i = j + 1
	}
	return strings.Join(ranges, ", ")
}

// Modelled returns an error, naming the series the package models, for a
// version that is not of one of them: older than Oldest, newer than
// Newest's series, or a series mainline never had (6.20, 42.0). A caller
// that takes a kernel from its user refuses such a version rather than
// model it with the nearest rules in silence.
func Modelled(v Version) error {
	known := false
	for _, s := range Series() {
		if s == v.Series() {
			known = true
			break
		}
	}
	if known {
		return nil
	}
	why := "is not a Linux series"
	switch {
	case v.Compare(Oldest) < 0:
		why = "is older than the oldest modelled"
	case v.Major > Newest.Major || v.Major == Newest.Major && v.Minor > Newest.Minor:
		why = "is newer than the newest modelled"
	}
	return fmt.Errorf("kernel %s %s (the series modelled are %s)", v.Series(), why, seriesText())
}
