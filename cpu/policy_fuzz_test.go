package cpu

import (
	"strings"
	"testing"
)

// FuzzParsePolicy: a name parses exactly when it is one of the four, and
// then formats back to itself; anything else is an error that quotes it.
func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{"none", "push", "pull", "pull-isolated", "", "Pull", "pull-isolated\n", "pull isolated"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePolicy(s)
		known := s == "none" || s == "push" || s == "pull" || s == "pull-isolated"
		if known != (err == nil) {
			t.Fatalf("ParsePolicy(%q) = %v, %v", s, p, err)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "unknown policy") {
				t.Fatalf("error %q does not say what is wrong", err)
			}
			return
		}
		if p.String() != s {
			t.Fatalf("ParsePolicy(%q).String() = %q", s, p.String())
		}
	})
}
