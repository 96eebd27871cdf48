package hier

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var tpLine = regexp.MustCompile(`(tmigr_[a-z_]+): (.*)$`)

// fieldsOf returns the event name and the field names of a tracepoint line
// in the kernel's "name: key=value key=value" format.
func fieldsOf(line string) (string, []string, []string) {
	m := tpLine.FindStringSubmatch(line)
	if m == nil {
		return "", nil, nil
	}
	var keys, vals []string
	for _, kv := range strings.Fields(m[2]) {
		k, v, _ := strings.Cut(kv, "=")
		keys = append(keys, k)
		vals = append(vals, v)
	}
	return m[1], keys, vals
}

// TestTextTracerMatchesRecordings compares the lines TextTracer writes with
// the kernel's, event by event: the same names, the same fields in the same
// order, and values in the same notation (hex masks without 0x, migrator
// "ff" for none, numa=-1, KTIME_MAX in decimal), taking the recordings in
// testdata/traces as the reference. Pointers are group names here.
func TestTextTracerMatchesRecordings(t *testing.T) {
	files, err := filepath.Glob("../testdata/traces/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings in ../testdata/traces: %v", err)
	}
	kernel := map[string][]string{}   // event -> field names
	examples := map[string][]string{} // event -> one line's values
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			name, keys, vals := fieldsOf(sc.Text())
			if name == "" {
				continue
			}
			if prev, ok := kernel[name]; ok && !slices.Equal(prev, keys) {
				t.Fatalf("%s: %s has fields %v and %v in the recordings", f, name, prev, keys)
			}
			kernel[name] = keys
			examples[name] = vals
		}
		fh.Close()
	}

	// Emit every tracepoint we have: a 16-CPU, 2-node machine going
	// through bring-up, idle, wake-up, remote expiry and offline.
	var buf bytes.Buffer
	h, err := New(Options{NodeOf: evenNodes(16, 2), Tracer: &TextTracer{W: &buf}})
	if err != nil {
		t.Fatal(err)
	}
	for c := 0; c < 16; c++ {
		h.Prepare(c)
		h.SetAvailable(c, false)
	}
	for c := 1; c < 16; c++ {
		h.Deactivate(c, int64(1000*c))
	}
	h.NewTimer(9, 500)
	h.HandleRemote(0, 1000, 1, nopExpirer{})
	h.Activate(5)
	h.ClearAvailable(5)
	mustCheck(t, h)

	ours := map[string][]string{}
	oursVals := map[string][]string{}
	for _, line := range strings.Split(buf.String(), "\n") {
		if name, keys, vals := fieldsOf(line); name != "" {
			ours[name] = keys
			oursVals[name] = vals
		}
	}
	renamed := map[string]string{"tmigr_cpu_online": "tmigr_cpu_available", "tmigr_cpu_offline": "tmigr_cpu_unavailable"}
	for name, keys := range kernel {
		if n, ok := renamed[name]; ok {
			name = n
		}
		got, ok := ours[name]
		if !ok {
			t.Errorf("%s is in the recordings but was not emitted", name)
			continue
		}
		if !slices.Equal(got, keys) {
			t.Errorf("%s: fields %v, the kernel prints %v", name, got, keys)
		}
	}
	for _, name := range []string{"tmigr_group_set", "tmigr_connect_child_parent", "tmigr_connect_cpu_parent", "tmigr_cpu_available", "tmigr_cpu_unavailable", "tmigr_cpu_new_timer"} {
		if _, ok := ours[name]; !ok {
			t.Errorf("%s was not emitted", name)
		}
	}

	// Value notation, against recorded examples.
	hexMask := regexp.MustCompile(`^[0-9a-f]{1,2}$`)
	for _, name := range []string{"tmigr_group_set_cpu_active", "tmigr_group_set_cpu_inactive"} {
		for i, k := range kernel[name] {
			switch k {
			case "active", "migrator", "childmask":
				if !hexMask.MatchString(examples[name][i]) || !hexMask.MatchString(oursVals[name][i]) {
					t.Errorf("%s %s: kernel %q, ours %q: want bare hex", name, k, examples[name][i], oursVals[name][i])
				}
			}
		}
	}
	if !strings.Contains(buf.String(), "migrator=ff") || !strings.Contains(buf.String(), "numa=-1") ||
		!strings.Contains(buf.String(), "wakeup=9223372036854775807") {
		t.Errorf("expected migrator=ff, numa=-1 and wakeup=9223372036854775807 in\n%s", buf.String())
	}
}
