package explain

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzExplain feeds the builder mutated recordings: it must never panic,
// must fail with a message, and whatever it explains must have a why for
// every expiry and steps whose undetermined links are counted.
func FuzzExplain(f *testing.F) {
	for _, s := range []*synth{pull("6.12.118"), pull("6.19.0")} {
		f.Add(s.text(&testing.T{}))
	}
	files, _ := filepath.Glob(filepath.Join(tracesDir, "*.txt"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		// The head of each recording, without the header's entry count
		// (which a head would contradict).
		var keep []string
		for i, l := range strings.SplitAfter(string(b), "\n") {
			if i > 160 {
				break
			}
			if !strings.HasPrefix(l, "# entries-in-buffer") {
				keep = append(keep, l)
			}
		}
		f.Add(strings.Join(keep, ""))
	}
	f.Fuzz(func(t *testing.T, text string) {
		rep, err := ExplainText(strings.NewReader(text), Options{})
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		counted := map[string]int{}
		for _, x := range rep.Events {
			if x.Why == "" || len(x.Steps) == 0 {
				t.Fatalf("line %d: no why", x.Line)
			}
			for _, s := range x.Steps {
				if s.Undetermined != "" {
					counted[s.Undetermined]++
				}
			}
		}
		for why, n := range rep.Undetermined {
			if counted[why] != n {
				t.Fatalf("undetermined %v, steps %v", rep.Undetermined, counted)
			}
		}
		if _, err := json.Marshal(rep.JSON()); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := rep.WriteText(&b, TextOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}
