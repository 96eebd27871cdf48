package tmigr

import (
	"strings"
	"testing"
)

// FuzzParseIdleMode: a name parses exactly when it is halt, poll or
// haltpoll, and then formats back to itself.
func FuzzParseIdleMode(f *testing.F) {
	for _, s := range []string{"halt", "poll", "haltpoll", "", "Halt", "halt-poll", "poll "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseIdleMode(s)
		known := s == "halt" || s == "poll" || s == "haltpoll"
		if known != (err == nil) {
			t.Fatalf("ParseIdleMode(%q) = %v, %v", s, m, err)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "unknown idle mode") {
				t.Fatalf("error %q does not say what is wrong", err)
			}
			return
		}
		if m.String() != s {
			t.Fatalf("ParseIdleMode(%q).String() = %q", s, m.String())
		}
	})
}
