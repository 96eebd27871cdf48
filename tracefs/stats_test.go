package tracefs

import (
	"strings"
	"testing"
)

const stats618 = "entries: 12\noverrun: 3\ncommit overrun: 1\nbytes: 480\noldest event ts: 13745.123456\nnow ts: 13746.997496\ndropped events: 2\nread events: 40\n"

func TestParseStats(t *testing.T) {
	s, err := ParseStats([]byte(stats618))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Stats{Entries: 12, Overrun: 3, CommitOverrun: 1, DroppedEvents: 2, ReadEvents: 40}); s != want || s.Lost() != 6 {
		t.Errorf("got %+v (lost %d), want %+v", s, s.Lost(), want)
	}
	// Older kernels print fewer lines; later ones may add some.
	if s, err := ParseStats([]byte("entries: 1\noverrun: 4\nnew counter: 9\n")); err != nil || s.Lost() != 4 {
		t.Errorf("short file: %+v, %v", s, err)
	}
	for in, want := range map[string]string{
		"":                                `no "overrun:" line`,
		"entries: 1\n":                    `no "overrun:" line`,
		"overrun: -1\n":                   `overrun: "-1" is not a count`,
		"overrun: 1\ngarbage\n":           `line 2: "garbage" is not "name: value"`,
		"overrun: 99999999999999999999\n": "is not a count",
	} {
		if _, err := ParseStats([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseStats(%q) = %v, want %q", in, err, want)
		}
	}
}

func FuzzParseStats(f *testing.F) {
	f.Add([]byte(stats618))
	f.Add([]byte("overrun: 1\ndropped events: 18446744073709551615\n"))
	f.Add([]byte("overrun:\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStats(b)
		if err != nil {
			if s != (Stats{}) {
				t.Errorf("error %v with stats %+v", err, s)
			}
			return
		}
		if !strings.Contains(string(b), "overrun:") {
			t.Errorf("parsed %q without an overrun line", b)
		}
	})
}
