package ftrace

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/cpumask"
)

// The recordings of the kernel in testdata/traces are the strongest test
// there is: every line must parse, and print again byte for byte.

const tracesDir = "../testdata/traces"

func traceFiles(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join(tracesDir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no traces in %s (%v)", tracesDir, err)
	}
	return files
}

// readAll reads a whole trace as tmigr does (sorting what comes late: a
// recording of trace_pipe may hold such an event), failing the test at
// the first error.
func readAll(t testing.TB, data []byte) (Header, []Event, *Reader) {
	t.Helper()
	r, _, err := OpenReader(bytes.NewReader(data), "test")
	if err != nil {
		t.Fatal(err)
	}
	var events []Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return r.Header(), events, r
		}
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
}

// eventName is an oracle independent of the parser: the first ": name: "
// of a line.
var eventName = regexp.MustCompile(`\d: ([a-z_]+): `)

func TestRealTracesRoundTrip(t *testing.T) {
	for _, f := range traceFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			h, events, r := readAll(t, data)
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")

			// Every event line prints again unchanged.
			for _, ev := range events {
				b, err := AppendEvent(nil, ev, h.Nanoseconds)
				if err != nil {
					t.Fatalf("line %d: %v", ev.Line, err)
				}
				if got, want := strings.TrimSuffix(string(b), "\n"), lines[ev.Line-1]; got != want {
					t.Fatalf("line %d printed as\n%s\nwant\n%s", ev.Line, got, want)
				}
			}

			// Counts per event agree with a plain text match.
			want := map[string]int{}
			for _, l := range lines {
				if m := eventName.FindStringSubmatch(l); m != nil && !strings.HasPrefix(l, "#") {
					want[m[1]]++
				}
			}
			got := map[string]int{}
			for _, ev := range events {
				got[ev.Name]++
			}
			if !mapsEqual(got, want) {
				t.Errorf("counts %v, want %v", got, want)
			}
			if len(r.Skipped()) != 0 {
				t.Errorf("skipped %v", r.Skipped())
			}
			if int64(len(events)) != h.Entries || h.Entries != h.Written {
				t.Errorf("%d events, header says %d/%d", len(events), h.Entries, h.Written)
			}
			names := make([]string, 0, len(got))
			for n := range got {
				names = append(names, n)
			}
			slices.Sort(names)
			var report strings.Builder
			for _, n := range names {
				report.WriteString(" " + n + "=")
				report.WriteString(itoa(got[n]))
			}
			t.Logf("%d events:%s", len(events), report.String())

			// The whole file prints again unchanged, but for the machine
			// line, whose CPU lists come out in canonical form, and for
			// an event read late (trace_pipe's), which comes in its
			// place in time.
			var out bytes.Buffer
			if err := WriteTrace(&out, h, events); err != nil {
				t.Fatal(err)
			}
			gotLines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(gotLines) != len(lines) {
				t.Fatalf("rewrite has %d lines, want %d", len(gotLines), len(lines))
			}
			wantLines := slices.Clone(lines)
			at := make([]int, 0, len(events))
			for _, ev := range events {
				at = append(at, ev.Line-1)
			}
			slices.Sort(at)
			for k, ev := range events {
				wantLines[at[k]] = lines[ev.Line-1]
			}
			for i := range lines {
				if i == 0 {
					continue
				}
				if gotLines[i] != wantLines[i] {
					t.Fatalf("rewrite line %d:\n%s\nwant\n%s", i+1, gotLines[i], wantLines[i])
				}
			}
			m1, err1 := ParseMachine(lines[0])
			m2, err2 := ParseMachine(gotLines[0])
			if err1 != nil || err2 != nil || !machinesEqual(m1, m2) {
				t.Errorf("machine line %q rewritten as %q (%v, %v)", lines[0], gotLines[0], err1, err2)
			}
		})
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func machinesEqual(a, b Machine) bool {
	return a.CPUs == b.CPUs && a.Nodes == b.Nodes && a.Kernel == b.Kernel && a.HZ == b.HZ &&
		a.Cmdline == b.Cmdline && a.Busy.Equal(b.Busy) && a.Sleepers.Equal(b.Sleepers) &&
		a.Note == b.Note && slices.EqualFunc(a.NodeCPUs, b.NodeCPUs, cpumask.Mask.Equal) &&
		changesEqual(a.At, b.At) && changesEqual(a.Refused, b.Refused)
}

func itoa(n int) string { return string(appendInt(nil, int64(n))) }

// TestRealTracesHeaders checks what the recordings' headers say, against
// the facts of each recording.
func TestRealTracesHeaders(t *testing.T) {
	want := map[string]struct {
		cpus, nodes int
		kernel      string
		domain      string // isolcpus
		nohzFull    string
		note        string
	}{
		"cpu0-busy-3s.txt":                           {2, 1, "6.18.44", "", "", "KVM guest"},
		"mixed-3s.txt":                               {2, 1, "6.18.44", "", "", "KVM guest"},
		"kvm2-1node-sleepers.txt":                    {2, 1, "6.18.44", "", "", "KVM guest"},
		"vm12-1node-nohzfull-busy.txt":               {12, 1, "6.12.117", "", "1-11", "QEMU TCG"},
		"vm16-2node-isol-busy.txt":                   {16, 2, "6.12.117", "1-7,9-15", "", "QEMU TCG"},
		"vm16-2node-mixed.txt":                       {16, 2, "6.12.117", "", "", "QEMU TCG"},
		"vm18-2node-mixed.txt":                       {18, 2, "6.12.117", "", "", "QEMU TCG"},
		"vm2-1node-busy-sleeper.txt":                 {2, 1, "6.12.118", "", "", "QEMU TCG; period=3ms"},
		"vm9-1node-mixed.txt":                        {9, 1, "6.12.118", "", "", "QEMU TCG; period=3ms"},
		"vm16-2node-busy-sleepers.txt":               {16, 2, "6.12.118", "", "", "QEMU TCG; period=3ms"},
		"vm24-1node-nohzfull-busy-sleepers.txt":      {24, 1, "6.12.118", "", "1-23", "QEMU TCG; period=3ms"},
		"vm40-1node-isol-busy.txt":                   {40, 1, "6.12.118", "1-9,11-39", "", "QEMU TCG"},
		"vm8-1node-rt-fifo-other-sleepers.txt":       {8, 1, "6.12.118", "", "", "QEMU TCG; PREEMPT_RT; fifo-sleepers=4-6; period=3ms"},
		"vm64-4node-mixed.txt":                       {64, 4, "6.12.118", "", "", "QEMU TCG; period=3ms"},
		"vm4-1node-hrtimers-fifo-other-sleepers.txt": {4, 1, "6.12.118", "", "", "QEMU TCG; fifo-sleepers=2; period=3ms"},
		"vm16-2node-isol-busy-sleepers.txt":          {16, 2, "6.12.118", "1-7,9-15", "", "QEMU TCG; period=3ms"},
		"vm18-2node-busy-sleepers.txt":               {18, 2, "6.12.118", "", "", "QEMU TCG; period=3ms"},
		// Recorded by "tmigr lab matrix" on other kernels (and 6.12 with
		// run-time changes); testdata/traces/README.md lists them.
		"vm4-1node-isol-busy-sleeper-6.12.txt":       {4, 1, "6.12.118", "1-3", "", "QEMU TCG; period=3ms"},
		"vm4-1node-nohzfull-hrtimers-tm0-6.12.txt":   {4, 1, "6.12.118", "", "1-3", "QEMU TCG; period=10ms"},
		"vm4-1node-nohzfull-hrtimers-tm1-6.12.txt":   {4, 1, "6.12.118", "", "1-3", "QEMU TCG; period=10ms"},
		"vm2-1node-busy-sleeper-6.19.txt":            {2, 1, "6.19.14", "", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; period=3ms"},
		"vm4-1node-isol-busy-sleeper-6.19.txt":       {4, 1, "6.19.14", "1-3", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; period=3ms"},
		"vm8-1node-rt-fifo-other-sleepers-6.19.txt":  {8, 1, "6.19.14", "", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; PREEMPT_RT; fifo-sleepers=4-6; period=3ms"},
		"vm9-1node-mixed-6.19.txt":                   {9, 1, "6.19.14", "", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; period=3ms"},
		"vm12-1node-nohzfull-busy-sleepers-6.19.txt": {12, 1, "6.19.14", "", "1-11", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; period=3ms"},
		"vm16-2node-isol-busy-sleepers-6.19.txt":     {16, 2, "6.19.14", "1-7,9-15", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; period=3ms"},
		"vm2-1node-busy-sleeper-7.2.txt":             {2, 1, "7.2.13", "", "", "QEMU TCG; period=3ms"},
		"vm4-1node-isol-busy-sleeper-7.2.txt":        {4, 1, "7.2.13", "1-3", "", "QEMU TCG; period=3ms"},
		"vm2-1node-busy-sleeper-7.3.txt":             {2, 1, "7.3.4", "", "", "QEMU TCG; period=3ms"},
		"vm8-1node-rt-fifo-other-sleepers-7.3.txt":   {8, 1, "7.3.4", "", "", "QEMU TCG; PREEMPT_RT; fifo-sleepers=4-6; period=3ms"},
		"vm9-1node-mixed-7.3.txt":                    {9, 1, "7.3.4", "", "", "QEMU TCG; period=3ms"},
		"vm12-1node-nohzfull-busy-sleepers-7.3.txt":  {12, 1, "7.3.4", "", "1-11", "QEMU TCG; period=3ms"},
		"vm16-2node-isol-busy-sleepers-7.3.txt":      {16, 2, "7.3.4", "1-7,9-15", "", "QEMU TCG; period=3ms"},
		"vm18-2node-isol-busy-sleepers-7.3.txt":      {18, 2, "7.3.4", "1-8,10-17", "", "QEMU TCG; period=3ms"},
		"vm4-1node-nohzfull-hrtimers-tm0-7.3.txt":    {4, 1, "7.3.4", "", "1-3", "QEMU TCG; period=10ms"},
		"vm4-1node-nohzfull-hrtimers-tm1-7.3.txt":    {4, 1, "7.3.4", "", "1-3", "QEMU TCG; period=10ms"},
		"vm40-1node-isol-busy-6.19.txt":              {40, 1, "6.19.14", "1-9,11-39", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14"},
		// Recordings of the run-time partitions, of 6.1, and of two replay
		// findings (testdata/traces/README.md).
		"vm16-1node-partition-busy-sleepers-6.12.txt":             {16, 1, "6.12.118", "", "", "QEMU TCG; period=3ms"},
		"vm16-1node-partition-busy-sleepers-6.19-wheel-clock.txt": {16, 1, "6.19.14", "", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; period=3ms"},
		"vm16-1node-partition-busy-sleepers-6.19.txt":             {16, 1, "6.19.14", "", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; period=3ms"},
		"vm16-1node-partition-busy-sleepers-7.2.txt":              {16, 1, "7.2.13", "", "", "QEMU TCG; period=3ms"},
		"vm16-1node-partition-busy-sleepers-7.3.txt":              {16, 1, "7.3.4", "", "", "QEMU TCG; period=3ms"},
		"vm16-2node-isol-busy-sleepers-6.1.txt":                   {16, 2, "6.1.192", "1-7,9-15", "", "QEMU TCG; period=3ms"},
		"vm16-2node-isol-busy-sleepers-7.2.txt":                   {16, 2, "7.2.13", "1-7,9-15", "", "QEMU TCG; period=3ms"},
		"vm18-2node-isol-busy-sleepers-6.19.txt":                  {18, 2, "6.19.14", "1-8,10-17", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; period=3ms"},
		"vm2-1node-busy-sleeper-6.1.txt":                          {2, 1, "6.1.192", "", "", "QEMU TCG; period=3ms"},
		"vm4-1node-isol-busy-sleeper-6.1.txt":                     {4, 1, "6.1.192", "1-3", "", "QEMU TCG; period=3ms"},
		"vm4-1node-isol-busy-sleeper-7.3.txt":                     {4, 1, "7.3.4", "1-3", "", "QEMU TCG; period=3ms"},
		"vm4-1node-nohzfull-hrtimers-tm1-7.3-replay-walk.txt":     {4, 1, "7.3.4", "", "1-3", "QEMU TCG; period=10ms"},
		"vm40-1node-isol-busy-7.3.txt":                            {40, 1, "7.3.4", "1-9,11-39", "", "QEMU TCG"},
		"vm9-1node-mixed-6.1.txt":                                 {9, 1, "6.1.192", "", "", "QEMU TCG; period=3ms"},
		// A window of a recording the replay got wrong (testdata/traces/README.md).
		"vm4-1node-isol-busy-sleeper-7.3-update-reads-later-cas.txt":                    {4, 1, "7.3.4", "2-3", "", "QEMU TCG; period=3ms"},
		"kvm2-6.18-remote-target-woke-cut.txt":                                          {2, 1, "6.18.44-fc-v1272", "", "", "tmigr host"},
		"vm4-1node-isol-busy-sleeper-7.3-round-before-claim.txt":                        {4, 1, "7.3.4", "2-3", "", "QEMU TCG; period=3ms"},
		"vm4-1node-isol-busy-sleeper-7.3-update-lock-order.txt":                         {4, 1, "7.3.4", "2-3", "", "QEMU TCG; period=3ms"},
		"kvm2-6.18-round-beside-unprinted-walk.txt":                                     {2, 1, "6.18.44-fc-v1272", "", "", "tmigr host"},
		"kvm2-6.18-update-beside-activation-ignore.txt":                                 {2, 1, "6.18.44-fc-v1272", "", "", "tmigr record"},
		"kvm2-6.18-window-begins-inside-tie.txt":                                        {2, 1, "6.18.44-fc-v1300", "", "", "tmigr record"},
		"kvm2-6.18-window-idle-reads-unignored-old-event.txt":                           {2, 1, "6.18.44-fc-v1300", "", "", "tmigr record"},
		"kvm2-6.18-round-checks-top-after-migrator-idles.txt":                           {2, 1, "6.18.44-fc-v1300", "", "", "tmigr record"},
		"vm3-3node-6.12-window-starts-after-silent-cas.txt":                             {3, 3, "6.12.118", "", "", "QEMU TCG; period=3.2ms"},
		"kvm2-6.18-idle-walk-beside-activation-ignore.txt":                              {2, 1, "6.18.44-fc-v1272", "", "", "tmigr record"},
		"kvm2-6.18-round-entry-before-printed-cas.txt":                                  {2, 1, "6.18.44-fc-v1272", "", "", "tmigr record"},
		"kvm2-6.18-claim-printed-just-after-round.txt":                                  {2, 1, "6.18.44-fc-v1272", "", "", "tmigr record"},
		"kvm2-6.18-round-reads-wakeup-before-claim-reset.txt":                           {2, 1, "6.18.44-fc-v1272", "", "", "tmigr record"},
		"vm7-1node-mixed-7.0-deferrable-after-round-cut.txt":                            {7, 1, "7.0.13", "", "", "QEMU TCG; config of 7.2.6: Debian has none of 7.0.13; fifo-sleepers=1; period=2.6ms"},
		"vm11-1node-rt-6.19-activation-finds-bit-set.txt":                               {11, 1, "6.19.14", "", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; PREEMPT_RT; fifo-sleepers=3-6; posix-timers=0,9; epoll=7; tcp=2; period=7.9ms"},
		"vm10-2node-isol-6.19-inactive-sees-child-active.txt":                           {10, 2, "6.19.14", "2-3", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; fifo-sleepers=7; epoll=1; period=8.4ms absolute"},
		"vm3-2node-isol-nohzfull-6.19-round-reads-across-walk.txt":                      {3, 2, "6.19.14", "2", "2", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; period=19.8ms absolute"},
		"vm3-1node-nohzfull-rt-7.0-tick-jiffy-bound.txt":                                {3, 1, "7.0.13", "", "1-2", "QEMU TCG; config of 7.2.6: Debian has none of 7.0.13; PREEMPT_RT; timerfd=0; epoll=1; period=2.2ms absolute"},
		"vm3-2node-nohzfull-6.12-local-first-beyond-end.txt":                            {3, 2, "6.12.118", "", "1", "QEMU TCG"},
		"vm3-2node-6.12-parent-update-after-walk-update.txt":                            {3, 2, "6.12.118", "", "", "QEMU TCG; tcp=0; period=2.4ms absolute"},
		"vm9-2node-rt-7.3-frozen-trace-clock.txt":                                       {9, 2, "7.3.4", "", "", "QEMU TCG; PREEMPT_RT; fifo-sleepers=4; timerfd=8; epoll=6; tcp=5; period=3.1ms absolute"},
		"vm15-2node-isol-6.19-bucket-off-wheel-clock.txt":                               {15, 2, "6.19.14", "3,5-8,12-14", "3,5-8,12-14", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; timerfd=5,12; posix-timers=3,7; epoll=0,10; tcp=6,13-14; storm=4; period=4.6ms"},
		"vm4-3node-6.19-walk-stalls-between-levels.txt":                                 {4, 3, "6.19.14", "", "1", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; fifo-sleepers=3; epoll=0; tcp=1; period=5.7ms"},
		"vm3-2node-7.3-expiry-after-another-softirq-round.txt":                          {3, 2, "7.3.4", "", "", "QEMU TCG; period=7.8ms"},
		"vm3-2node-7.3-round-skips-due-claimed-event.txt":                               {3, 2, "7.3.4", "", "", "QEMU TCG; period=7.8ms"},
		"vm7-2node-rt-7.2-handler-idles-inside-callback.txt":                            {7, 2, "7.2.13", "4", "4-6", "QEMU TCG; PREEMPT_RT; fifo-sleepers=2; posix-timers=5; tcp=6; period=1.7ms absolute"},
		"vm4-2node-7.2-activation-above-stalled-deactivation.txt":                       {4, 2, "7.2.13", "", "", "QEMU TCG; fifo-sleepers=0; timerfd=2; posix-timers=1; period=4.7ms"},
		"vm3-3node-isol-rt-6.12-cpu-busy-and-idle-during-stall.txt":                     {3, 3, "6.12.118", "1-2", "", "QEMU TCG; PREEMPT_RT; posix-timers=0; period=5.3ms"},
		"vm7-4node-6.19-cas-printed-after-silence.txt":                                  {7, 4, "6.19.14", "", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; fifo-sleepers=5; epoll=1-2; period=6.8ms absolute"},
		"vm4-1node-isol-nohzfull-7.3-pinned-rearm-of-running-timer.txt":                 {4, 1, "7.3.4", "3", "3", "QEMU TCG; fifo-sleepers=3; tcp=2; period=1.3ms absolute"},
		"vm7-4node-7.2-bridge-skips-op-that-does-not-fit.txt":                           {7, 4, "7.2.13", "", "", "QEMU TCG; fifo-sleepers=3,5; posix-timers=4,6; period=7.3ms"},
		"vm14-1node-rt-6.19-tie-order-not-printed.txt":                                  {14, 1, "6.19.14", "", "9-11", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; PREEMPT_RT; fifo-sleepers=5,9,13; posix-timers=7; tcp=12; storm=1,4,11; period=3.4ms absolute"},
		"vm16-2node-nohzfull-7.0-remote-bucket-off-wheel.txt":                           {16, 2, "7.0.13", "", "1,3,6-7,10,12,14", "QEMU TCG; config of 7.2.6: Debian has none of 7.0.13; fifo-sleepers=7,11,13; timerfd=0,9,12; posix-timers=6; epoll=8; tcp=4,14; storm=3; period=1ms"},
		"vm7-3node-6.12-update-reads-late-activations.txt":                              {7, 3, "6.12.118", "", "", "QEMU TCG; fifo-sleepers=0,6; posix-timers=1; period=2.9ms"},
		"vm5-4node-rt-6.12-group-ignore-before-parent-cas.txt":                          {5, 4, "6.12.118", "", "", "QEMU TCG; PREEMPT_RT; posix-timers=1; tcp=3; period=11ms"},
		"vm3-3node-nohzfull-6.12-phantom-bucket-after-hotplug.txt":                      {3, 3, "6.12.118", "", "1-2", "QEMU TCG; storm=2; period=15.5ms absolute"},
		"vm5-4node-isol-7.3-update-reads-child-reactivated.txt":                         {5, 4, "7.3.4", "2-4", "", "QEMU TCG; fifo-sleepers=4; epoll=2; period=1.1ms absolute"},
		"vm6-4node-nohzfull-6.1-hrtimer-rearm-at-callback-exit.txt":                     {6, 4, "6.1.192", "", "1-2", "QEMU TCG; timerfd=2; epoll=0; tcp=5; storm=1; period=8.4ms absolute"},
		"vm4-4node-rt-6.19-jiffies-move-during-start.txt":                               {4, 4, "6.19.14", "", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; PREEMPT_RT; fifo-sleepers=2-3; timerfd=0; period=2.1ms"},
		"vm5-1node-isol-6.1-hrtimer-rearm-before-base-relocked.txt":                     {5, 1, "6.1.192", "4", "", "QEMU TCG; timerfd=2-3; period=19.6ms"},
		"vm4-1node-7.3-resumed-update-reads-later-activations.txt":                      {4, 1, "7.3.4", "", "", "QEMU TCG; posix-timers=2-3; period=2.3ms"},
		"vm6-4node-isol-rt-6.12-stale-next-expiry-after-cancel.txt":                     {6, 4, "6.12.118", "1", "", "QEMU TCG; PREEMPT_RT; posix-timers=1; storm=2; period=4ms"},
		"vm5-4node-nohzfull-7.2-interrupt-inside-remote-expiry.txt":                     {5, 4, "7.2.13", "", "1-4", "QEMU TCG; fifo-sleepers=0-1; posix-timers=4; tcp=2; period=1.5ms"},
		"vm8-1node-nohzfull-rt-7.2-start-already-due-at-older-clock.txt":                {8, 1, "7.2.13", "", "1,4,6-7", "QEMU TCG; PREEMPT_RT; fifo-sleepers=2; epoll=6; period=19ms absolute"},
		"vm2-2node-7.3-claim-reads-wakeup-before-round-write.txt":                       {2, 2, "7.3.4", "", "", "QEMU TCG; tcp=1; period=4.3ms absolute"},
		"vm4-2node-isol-6.19-remote-expiry-ends-while-target-awake.txt":                 {4, 2, "6.19.14", "3", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; fifo-sleepers=0; tcp=1; period=12.7ms"},
		"vm5-4node-nohzfull-6.12-equal-expiry-queued-before-recording.txt":              {5, 4, "6.12.118", "", "1-2", "QEMU TCG; fifo-sleepers=0; timerfd=3; posix-timers=4; epoll=1; period=6.8ms absolute"},
		"vm4-1node-7.0-round-entry-shown-by-wakeup.txt":                                 {4, 1, "7.0.13", "", "", "QEMU TCG; config of 7.2.6: Debian has none of 7.0.13; period=12.9ms absolute"},
		"kvm2-6.18-pipe-late-event-keeps-tie-order.txt":                                 {2, 1, "6.18.44-fc-v1300", "", "", "tmigr record"},
		"vm4-3node-7.0-inactive-reads-child-reactivated-after-update.txt":               {4, 3, "7.0.13", "", "", "QEMU TCG; config of 7.2.6: Debian has none of 7.0.13; posix-timers=1; tcp=0,2; period=10.8ms absolute"},
		"vm4-3node-7.0-higher-level-prior-bridged-inside-walk.txt":                      {4, 3, "7.0.13", "", "", "QEMU TCG; config of 7.2.6: Debian has none of 7.0.13; posix-timers=1; tcp=0,2; period=10.8ms absolute"},
		"vm7-3node-nohzfull-rt-7.3-round-goes-on-after-nested-deactivation.txt":         {7, 3, "7.3.4", "", "1-5", "QEMU TCG; PREEMPT_RT; timerfd=5; tcp=4; period=1ms"},
		"vm7-3node-nohzfull-rt-7.3-expiry-window-skips-busy-round-cpu.txt":              {7, 3, "7.3.4", "", "1-5", "QEMU TCG; PREEMPT_RT; timerfd=5; tcp=4; period=1ms"},
		"vm5-1node-nohzfull-rt-6.12-late-softirq-tick-bound.txt":                        {5, 1, "6.12.118", "", "1-2,4", "QEMU TCG; PREEMPT_RT; fifo-sleepers=2,4; storm=0; period=2.3ms absolute"},
		"vm8-3node-nohzfull-rt-7.0-phantom-bucket-run-by-remote-expiry.txt":             {8, 3, "7.0.13", "", "1,3,6", "QEMU TCG; config of 7.2.6: Debian has none of 7.0.13; PREEMPT_RT; fifo-sleepers=4-5; posix-timers=1; tcp=0,3,6; period=3.6ms absolute"},
		"vm5-3node-nohzfull-6.1-wheel-rearm-while-callback-finishing.txt":               {5, 3, "6.1.192", "", "3", "QEMU TCG; posix-timers=4; epoll=2; tcp=3; period=3.8ms"},
		"vm5-2node-nohzfull-rt-7.3-bucket-off-wheel-before-cancel.txt":                  {5, 2, "7.3.4", "", "1-2,4", "QEMU TCG; PREEMPT_RT; tcp=2; period=3ms"},
		"vm4-1node-isol-7.2-idle-snapshot-before-stall.txt":                             {4, 1, "7.2.13", "3", "", "QEMU TCG; tcp=2; storm=3; period=1.5ms"},
		"vm4-1node-rt-7.2-marked-bucket-collected-at-late-jiffy.txt":                    {4, 1, "7.2.13", "", "", "QEMU TCG; PREEMPT_RT; posix-timers=2; epoll=1; tcp=3; period=13.7ms absolute"},
		"vm4-4node-isol-nohzfull-rt-7.3-ops-after-tied-claim-wait.txt":                  {4, 4, "7.3.4", "3", "1-3", "QEMU TCG; PREEMPT_RT; period=1.3ms"},
		"vm4-3node-7.0-caught-up-walk-gives-unknown-prior.txt":                          {4, 3, "7.0.13", "", "", "QEMU TCG; config of 7.2.6: Debian has none of 7.0.13; timerfd=0,2; period=6.2ms absolute"},
		"vm2-1node-isol-6.12-tied-updates-in-lock-order.txt":                            {2, 1, "6.12.118", "1", "", "QEMU TCG; epoll=0-1; period=5.3ms absolute"},
		"vm3-2node-isol-rt-6.12-interrupt-between-cancel-and-expiry.txt":                {3, 2, "6.12.118", "1", "", "QEMU TCG; PREEMPT_RT; tcp=0,2; period=5.7ms"},
		"vm3-2node-isol-rt-6.12-tick-bound-above-published-expiries.txt":                {3, 2, "6.12.118", "1", "", "QEMU TCG; PREEMPT_RT; tcp=0,2; period=5.7ms"},
		"vm5-2node-isol-7.3-ignore-written-late.txt":                                    {5, 2, "7.3.4", "2-4", "", "QEMU TCG; fifo-sleepers=0,3; period=3.8ms"},
		"vm7-1node-6.12-first-transition-after-earlier-cas.txt":                         {7, 1, "6.12.118", "", "", "QEMU TCG; timerfd=2; posix-timers=5; tcp=3; period=17.7ms"},
		"vm6-3node-rt-7.2-walk-cut-at-start.txt":                                        {6, 3, "7.2.13", "", "", "QEMU TCG; PREEMPT_RT; fifo-sleepers=2,4; timerfd=3; period=1ms"},
		"vm5-4node-6.19-busy-cpu-in-by-group-bit.txt":                                   {5, 4, "6.19.14", "", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; epoll=1; storm=3; period=7.6ms absolute"},
		"vm5-3node-isol-6.19-busy-cpu-in-by-group-bit.txt":                              {5, 3, "6.19.14", "2-4", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; fifo-sleepers=0; posix-timers=2; period=1.5ms"},
		"vm7-3node-isol-nohzfull-rt-7.2-new-timer-inside-round.txt":                     {7, 3, "7.2.13", "4-6", "1-3,5", "QEMU TCG; PREEMPT_RT; timerfd=5; epoll=3; storm=4; period=3.2ms absolute"},
		"vm8-1node-7.2-claim-before-activation-inside-walk.txt":                         {8, 1, "7.2.13", "", "", "QEMU TCG; fifo-sleepers=3; posix-timers=2; epoll=5; period=4.9ms absolute"},
		"vm6-3node-isol-6.12-tick-bound-alone-one-jiffy-high.txt":                       {6, 3, "6.12.118", "2-3,5", "", "QEMU TCG; fifo-sleepers=3; epoll=0-2; period=17.4ms absolute"},
		"vm7-3node-nohzfull-6.19-timer-pending-without-start.txt":                       {7, 3, "6.19.14", "", "2-3,5", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; fifo-sleepers=4; timerfd=6; posix-timers=0; period=6.3ms"},
		"vm6-4node-isol-7.2-split-resumes-after-walk-ended.txt":                         {6, 4, "7.2.13", "2-3,5", "", "QEMU TCG; fifo-sleepers=1-2; posix-timers=0; epoll=5; tcp=4; storm=3; period=5.2ms absolute"},
		"vm5-2node-7.2-clock-one-past-tick-before-start.txt":                            {5, 2, "7.2.13", "", "", "QEMU TCG; timerfd=1; tcp=3; storm=2,4; period=1.8ms absolute"},
		"vm3-1node-isol-6.12-cas-printed-after-end.txt":                                 {3, 1, "6.12.118", "2", "", "QEMU TCG; fifo-sleepers=0; posix-timers=1-2; period=1.3ms absolute"},
		"vm2-2node-nohzfull-7.2-new-timer-walk-ends-remote-expiry.txt":                  {2, 2, "7.2.13", "", "1", "QEMU TCG; period=7.4ms"},
		"vm8-3node-isol-6.1-delayed-work-requeued-on-another-cpu.txt":                   {8, 3, "6.1.192", "1,3,7", "", "QEMU TCG; fifo-sleepers=5-6; timerfd=0; posix-timers=7; tcp=2; storm=3; period=6ms absolute"},
		"vm2-1node-isol-6.12-split-reads-old-event.txt":                                 {2, 1, "6.12.118", "1", "", "QEMU TCG; fifo-sleepers=0; period=4.3ms; refused by the kernel: 460ms offline 1"},
		"vm6-2node-isol-6.19-tick-bound-alone-pre-timer.txt":                            {6, 2, "6.19.14", "3-4", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; fifo-sleepers=5; epoll=0-1; period=1.1ms"},
		"vm5-4node-7.3-walk-stall-catches-up-within-skew.txt":                           {5, 4, "7.3.4", "", "", "QEMU TCG; fifo-sleepers=3-4; period=1.4ms"},
		"vm8-3node-nohzfull-rt-7.3-published-expiries-below-tick-bound.txt":             {8, 3, "7.3.4", "", "2-3,6-7", "QEMU TCG; PREEMPT_RT; fifo-sleepers=4; tcp=5-6; storm=3,7; period=7.6ms absolute"},
		"vm2-1node-nohzfull-7.0-phantom-bucket-claimed-at-its-jiffy.txt":                {2, 1, "7.0.13", "", "1", "QEMU TCG; config of 7.2.6: Debian has none of 7.0.13; epoll=0; period=4.8ms absolute"},
		"vm2-2node-7.3-round-entered-before-tied-activation.txt":                        {2, 2, "7.3.4", "", "", "QEMU TCG; fifo-sleepers=1; period=10ms"},
		"vm6-4node-isol-rt-6.12-update-reads-two-later-cas.txt":                         {6, 4, "6.12.118", "1-3", "", "QEMU TCG; PREEMPT_RT; epoll=3; storm=1; period=18.6ms absolute"},
		"vm5-4node-nohzfull-6.12-cas-printed-after-two-walks.txt":                       {5, 4, "6.12.118", "", "3", "QEMU TCG; fifo-sleepers=4; posix-timers=2; epoll=3; period=1.9ms"},
		"vm7-3node-isol-nohzfull-7.2-round-reads-after-walk-update.txt":                 {7, 3, "7.2.13", "3-4", "3-4", "QEMU TCG; timerfd=2; posix-timers=4; period=2.7ms absolute"},
		"vm16-2node-6.12-timer-due-not-run-through-end.txt":                             {16, 2, "6.12.118", "", "", "QEMU TCG; period=3ms"},
		"vm8-2node-isol-nohzfull-7.0-timer-due-not-run-through-end.txt":                 {8, 2, "7.0.13", "1-2", "3-4", "QEMU TCG; config of 7.2.6: Debian has none of 7.0.13; timerfd=5; posix-timers=2; epoll=0; tcp=3; storm=6; period=9.2ms"},
		"vm7-3node-7.3-timer-due-not-run-through-end.txt":                               {7, 3, "7.3.4", "", "", "QEMU TCG; fifo-sleepers=3; timerfd=0; posix-timers=4; epoll=5; storm=1; period=1.7ms absolute"},
		"vm4-1node-nohzfull-7.0-expiry-ends-before-target-idles.txt":                    {4, 1, "7.0.13", "", "1-3", "QEMU TCG; config of 7.2.6: Debian has none of 7.0.13; fifo-sleepers=1-2; period=8.8ms absolute"},
		"vm5-1node-nohzfull-rt-6.12-window-moved-sleeper-first-seen-elsewhere.txt":      {5, 1, "6.12.118", "", "1-2,4", "QEMU TCG; PREEMPT_RT; fifo-sleepers=2,4; storm=0; period=2.3ms absolute"},
		"vm5-2node-7.2-round-reads-after-walk-between-levels.txt":                       {5, 2, "7.2.13", "", "", "QEMU TCG; posix-timers=4; period=2.4ms"},
		"vm6-2node-nohzfull-rt-7.0-cas-printed-after-child-activation.txt":              {6, 2, "7.0.13", "", "4-5", "QEMU TCG; config of 7.2.6: Debian has none of 7.0.13; PREEMPT_RT; fifo-sleepers=0,5; timerfd=3; period=1.9ms"},
		"vm6-4node-isol-nohzfull-6.19-claim-before-target-timer-runs.txt":               {6, 4, "6.19.14", "3-4", "4-5", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; timerfd=1; tcp=2,4; storm=3; period=3.3ms absolute"},
		"vm4-2node-isol-7.0-bucket-of-unseen-timer-left-by-hotplug.txt":                 {4, 2, "7.0.13", "1", "", "QEMU TCG; config of 7.2.6: Debian has none of 7.0.13; timerfd=2; tcp=3; period=4.7ms absolute"},
		"vm8-2node-nohzfull-rt-7.2-round-stops-after-late-activation.txt":               {8, 2, "7.2.13", "", "1-6", "QEMU TCG; PREEMPT_RT; fifo-sleepers=1-2; posix-timers=4; epoll=7; tcp=3; period=12.4ms"},
		"vm2-1node-nohzfull-rt-7.0-back-online-leaving-not-recorded.txt":                {2, 1, "7.0.13", "", "1", "QEMU TCG; config of 7.2.6: Debian has none of 7.0.13; PREEMPT_RT; fifo-sleepers=0; timerfd=1; period=6.2ms"},
		"vm8-3node-nohzfull-rt-7.0-window-after-declared-hotplug.txt":                   {8, 3, "7.0.13", "", "1,3,6", "QEMU TCG; config of 7.2.6: Debian has none of 7.0.13; PREEMPT_RT; fifo-sleepers=4-5; posix-timers=1; tcp=0,3,6; period=3.6ms absolute"},
		"vm7-2node-isol-nohzfull-6.12-activation-after-quiet-new-timer-inside-walk.txt": {7, 2, "6.12.118", "1-3,6", "1-3,6", "QEMU TCG; fifo-sleepers=0,5; timerfd=6; posix-timers=4; period=8.1ms absolute"},
		"vm7-1node-rt-6.19-split-activation-waits-for-earlier-activation.txt":           {7, 1, "6.19.14", "", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; PREEMPT_RT; fifo-sleepers=0,3-4,6; timerfd=2; epoll=5; period=1.4ms"},
		"vm6-3node-nohzfull-7.3-claimed-cpu-round-waits-for-outer-round.txt":            {6, 3, "7.3.4", "", "1-3,5", "QEMU TCG; fifo-sleepers=1; timerfd=2; storm=0; period=8.2ms"},
		"vm5-1node-nohzfull-rt-7.2-round-inside-walk-reads-queues.txt":                  {5, 1, "7.2.13", "", "1,4", "QEMU TCG; PREEMPT_RT; epoll=0; tcp=1; storm=4; period=12.8ms"},
		"vm4-4node-isol-rt-6.12-tied-claims-in-kernel-order.txt":                        {4, 4, "6.12.118", "1-2", "", "QEMU TCG; PREEMPT_RT; tcp=2; storm=1,3; period=14.1ms absolute"},
		"vm5-3node-isol-rt-6.12-stalled-deactivation-bridged-up-to-first-level.txt":     {5, 3, "6.12.118", "4", "", "QEMU TCG; PREEMPT_RT; fifo-sleepers=4; period=1.3ms"},
		"vm5-2node-isol-7.2-round-goes-on-after-silent-deactivation.txt":                {5, 2, "7.2.13", "2-3", "", "QEMU TCG; timerfd=3; storm=1; period=10.2ms absolute"},
		"vm4-1node-isol-rt-7.3-remote-expiry-ends-at-soft-hrtimer.txt":                  {4, 1, "7.3.4", "1", "", "QEMU TCG; PREEMPT_RT; fifo-sleepers=3; period=8.9ms absolute"},
		"vm11-3node-isol-7.2-claimed-cpu-activates-after-round.txt":                     {11, 3, "7.2.13", "7-9", "", "QEMU TCG; fifo-sleepers=3,7; tcp=10; period=4.8ms"},
		"vm5-3node-nohzfull-7.2-new-timer-during-remote-expiry.txt":                     {5, 3, "7.2.13", "", "3-4", "QEMU TCG; fifo-sleepers=0; posix-timers=3; tcp=1; period=1.1ms absolute"},
		"vm2-1node-rt-6.19-marked-bucket-a-jiffy-away-collected.txt":                    {2, 1, "6.19.14", "", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14; PREEMPT_RT; timerfd=1; period=12.3ms absolute"},
		"vm5-3node-nohzfull-7.2-silent-cpu-named-by-child-event.txt":                    {5, 3, "7.2.13", "", "3-4", "QEMU TCG; fifo-sleepers=0; posix-timers=3; tcp=1; period=1.1ms absolute"},
		"vm7-4node-isol-rt-7.0-sleeper-moved-before-offline-time.txt":                   {7, 4, "7.0.13", "3-6", "", "QEMU TCG; config of 7.2.6: Debian has none of 7.0.13; PREEMPT_RT; fifo-sleepers=0-1; period=3.5ms absolute"},
		"vm3-3node-isol-rt-6.12-silent-cpu-event-after-window-end.txt":                  {3, 3, "6.12.118", "2", "", "QEMU TCG; PREEMPT_RT; posix-timers=0; period=4.8ms"},
		"vm7-4node-7.3-silent-cpu-event-after-window-end.txt":                           {7, 4, "7.3.4", "", "", "QEMU TCG; fifo-sleepers=2; epoll=6; tcp=3; period=10.9ms absolute"},
		"vm7-4node-7.3-activation-after-handler-idle-replayed-after-round.txt":          {7, 4, "7.3.4", "", "", "QEMU TCG; fifo-sleepers=2; epoll=6; tcp=3; period=10.9ms absolute"},
		"vm8-4node-isol-rt-7.2-global-timer-overdue-at-cancel.txt":                      {8, 4, "7.2.13", "1-4", "", "QEMU TCG; PREEMPT_RT; fifo-sleepers=0,4; posix-timers=6; tcp=7; storm=2; period=4.7ms absolute"},
		"vm8-4node-isol-nohzfull-rt-7.2-local-timer-due-in-stall.txt":                   {8, 4, "7.2.13", "3-5,7", "3-5,7", "QEMU TCG; PREEMPT_RT; fifo-sleepers=5; posix-timers=7; storm=1; period=2.6ms"},
		"vm5-1node-nohzfull-rt-6.12-window-tick-handler-into-next-jiffy.txt":            {5, 1, "6.12.118", "", "1-2,4", "QEMU TCG; PREEMPT_RT; fifo-sleepers=2,4; storm=0; period=2.3ms absolute"},
		"vm2-1node-6.19-target-round-read-wakeup-before-claim.txt":                      {2, 1, "6.19.14", "", "", "QEMU TCG; config of 7.2.6: Debian has none of 6.19.14"},
	}
	// The header's #P: counts the CPUs online at the dump.
	offlineAtDump := map[string]int{
		"vm6-3node-nohzfull-7.3-claimed-cpu-round-waits-for-outer-round.txt":       1, // CPU 2, offline at 530 ms
		"vm7-4node-isol-rt-7.0-sleeper-moved-before-offline-time.txt":              2, // CPUs 6 and 4, offline at 1.104 s and 1.256 s
		"vm7-4node-7.3-activation-after-handler-idle-replayed-after-round.txt":     1, // CPU 4, offline at 913 ms
		"vm7-4node-7.3-silent-cpu-event-after-window-end.txt":                      1, // CPU 4, offline at 913 ms
		"vm7-1node-rt-6.19-split-activation-waits-for-earlier-activation.txt":      1, // CPU 6, offline at 889 ms
		"vm6-2node-nohzfull-rt-7.0-cas-printed-after-child-activation.txt":         1, // CPU 2, offline at 837 ms
		"vm5-1node-nohzfull-rt-6.12-window-moved-sleeper-first-seen-elsewhere.txt": 2, // CPU 4 (in the window) and CPU 3 (after it)
		"vm7-3node-7.3-timer-due-not-run-through-end.txt":                          1, // CPU 4, offline at 955 ms
		"vm5-4node-nohzfull-7.2-interrupt-inside-remote-expiry.txt":                2, // CPUs 3 and 4, offline at the dump
		"vm8-1node-nohzfull-rt-7.2-start-already-due-at-older-clock.txt":           2, // CPUs 1 and 5, offline at the dump, after the window
		"vm4-2node-isol-6.19-remote-expiry-ends-while-target-awake.txt":            1, // CPU 3, offline at the dump
		"vm7-1node-mixed-7.0-deferrable-after-round-cut.txt":                       1, // CPU 1, taken offline before the window
		"vm10-2node-isol-6.19-inactive-sees-child-active.txt":                      1, // CPU 9, the same
		"vm3-2node-isol-nohzfull-6.19-round-reads-across-walk.txt":                 1, // CPU 2, offline at the dump
		"vm16-2node-nohzfull-7.0-remote-bucket-off-wheel.txt":                      1, // CPU 7, offline at the dump, after the window
		"vm4-3node-6.19-walk-stalls-between-levels.txt":                            1, // CPU 3, offline at the dump, after the window
		"vm7-4node-6.19-cas-printed-after-silence.txt":                             1, // CPU 6, offline at the dump, after the window
		"vm5-1node-isol-6.1-hrtimer-rearm-before-base-relocked.txt":                1, // CPU 2, offline at the dump
		"vm7-3node-nohzfull-rt-7.3-round-goes-on-after-nested-deactivation.txt":    1, // CPU 3, offline at the dump, after the window
		"vm7-3node-nohzfull-rt-7.3-expiry-window-skips-busy-round-cpu.txt":         1, // CPU 3, taken offline before the window
		"vm5-1node-nohzfull-rt-6.12-late-softirq-tick-bound.txt":                   2, // CPU 4 (in the window) and CPU 3 (after it)
		"vm5-1node-nohzfull-rt-6.12-window-tick-handler-into-next-jiffy.txt":       2, // CPU 4 (in the window) and CPU 3 (after it)
		"vm4-1node-rt-7.2-marked-bucket-collected-at-late-jiffy.txt":               1, // CPU 2, taken offline in the window
		"vm8-3node-nohzfull-rt-7.3-published-expiries-below-tick-bound.txt":        1, // CPU 6, offline at the dump, after the window
		"vm6-4node-isol-7.2-split-resumes-after-walk-ended.txt":                    1, // CPU 5, taken offline before the window
		"vm5-2node-7.2-clock-one-past-tick-before-start.txt":                       1, // CPU 3, taken offline before the window
		"vm2-2node-nohzfull-7.2-new-timer-walk-ends-remote-expiry.txt":             1, // CPU 1, offline at the dump
		"vm8-3node-isol-6.1-delayed-work-requeued-on-another-cpu.txt":              1, // CPU 6, offline at the dump, after the window
	}
	// isolcpus=managed_irq, where the recording has it.
	managedIRQ := map[string]string{
		"vm5-3node-isol-rt-6.12-stalled-deactivation-bridged-up-to-first-level.txt": "4",
		"vm4-1node-isol-rt-7.3-remote-expiry-ends-at-soft-hrtimer.txt":              "1",
		"vm11-3node-isol-7.2-claimed-cpu-activates-after-round.txt":                 "7-9",
		"vm4-4node-isol-rt-6.12-tied-claims-in-kernel-order.txt":                    "1-2",
		"vm6-4node-isol-nohzfull-6.19-claim-before-target-timer-runs.txt":           "3-4",
		"vm8-2node-isol-nohzfull-7.0-timer-due-not-run-through-end.txt":             "1-2",
		"vm7-3node-isol-nohzfull-7.2-round-reads-after-walk-update.txt":             "3-4",
		"vm6-4node-isol-rt-6.12-stale-next-expiry-after-cancel.txt":                 "1",
		"vm4-2node-isol-6.19-remote-expiry-ends-while-target-awake.txt":             "3",
		"vm15-2node-isol-6.19-bucket-off-wheel-clock.txt":                           "3,5-8,12-14",
		"vm4-1node-isol-nohzfull-7.3-pinned-rearm-of-running-timer.txt":             "3",
		"vm2-1node-isol-6.12-tied-updates-in-lock-order.txt":                        "1",
		"vm7-3node-isol-nohzfull-rt-7.2-new-timer-inside-round.txt":                 "4-6",
		"vm6-3node-isol-6.12-tick-bound-alone-one-jiffy-high.txt":                   "2-3,5",
		"vm3-1node-isol-6.12-cas-printed-after-end.txt":                             "2",
		"vm8-3node-isol-6.1-delayed-work-requeued-on-another-cpu.txt":               "1,3,7",
		"vm6-4node-isol-rt-6.12-update-reads-two-later-cas.txt":                     "1-3",
	}
	for _, f := range traceFiles(t) {
		w, ok := want[filepath.Base(f)]
		if !ok {
			t.Errorf("%s: no expectations for this recording", f)
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h, _, _ := readAll(t, data)
		m := h.Machine
		if m == nil {
			t.Fatalf("%s: no machine line", f)
		}
		online := w.cpus - offlineAtDump[filepath.Base(f)]
		if h.Tracer != "nop" || h.CPUs != online || m.CPUs != w.cpus || m.Nodes != w.nodes ||
			m.Kernel != w.kernel || m.HZ != 250 || m.Note != w.note || h.Nanoseconds {
			t.Errorf("%s: header %+v machine %+v", f, h, *m)
		}
		iso, err := m.Isolation()
		if err != nil || len(iso.Warnings) != 0 {
			t.Fatalf("%s: isolation %v %v", f, err, iso.Warnings)
		}
		if iso.Domain.String() != w.domain || iso.NohzFull.String() != w.nohzFull || iso.ManagedIRQ.String() != managedIRQ[filepath.Base(f)] {
			t.Errorf("%s: isolation domain=%s nohz_full=%s managed_irq=%s", f, iso.Domain, iso.NohzFull, iso.ManagedIRQ)
		}
	}
}

// TestRealTracesDecodedValues checks relations the kernel guarantees between
// decoded fields, which a field mix-up in a decoder would break.
func TestRealTracesDecodedValues(t *testing.T) {
	for _, f := range traceFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h, events, _ := readAll(t, data)
		m := h.Machine
		var lastTS int64
		for _, ev := range events {
			fail := func(why string) { t.Errorf("%s:%d: %s: %+v", filepath.Base(f), ev.Line, why, ev.Data) }
			if ev.TS < lastTS {
				fail("time goes back")
			}
			lastTS = ev.TS
			switch p := ev.Data.(type) {
			case TimerStart:
				if !p.NoBucketExpiry && p.BucketExpiry < p.Expires {
					fail("bucket expires before the timer")
				}
				if p.CPU >= m.CPUs {
					fail("CPU beyond the machine")
				}
			case TimerExpireEntry:
				if p.BaseClk > p.Now {
					fail("base clock ahead of jiffies")
				}
			case TmigrCPUIdle:
				checkIdle(fail, ev, TmigrIdle(p))
			case TmigrCPUNewTimerIdle:
				checkIdle(fail, ev, TmigrIdle(p))
			case TmigrCPUActive:
				if p.CPU != ev.CPU {
					fail("a CPU activates itself")
				}
			case TmigrHandleRemoteCPU:
				if p.CPU >= m.CPUs {
					fail("CPU beyond the machine")
				}
			case TmigrGroupSetCPUActive:
				checkGroup(fail, m, TmigrGroupAndCPU(p))
			case TmigrGroupSetCPUInactive:
				checkGroup(fail, m, TmigrGroupAndCPU(p))
			case TmigrUpdateEvents:
				if p.Child == 0 && (p.ChildEvtExpiry != 0 || p.ChildEvtCPU != 0) {
					fail("child event without a child")
				}
				if p.ChildEvtCPU >= m.CPUs {
					fail("child event CPU beyond the machine")
				}
			}
		}
	}
}

func checkIdle(fail func(string), ev Event, p TmigrIdle) {
	if p.CPU != ev.CPU {
		fail("a CPU goes idle on another CPU")
	}
	if p.Parent == 0 {
		fail("a CPU without a group")
	}
}

func checkGroup(fail func(string), m *Machine, p TmigrGroupAndCPU) {
	if p.Numa < -1 || p.Numa >= m.Nodes {
		fail("NUMA node beyond the machine")
	}
	if p.Migrator != 0xff && p.Migrator&(p.Migrator-1) != 0 {
		fail("migrator is not one child's bit")
	}
	if p.Childmask == 0 || p.Childmask&(p.Childmask-1) != 0 {
		fail("childmask is not one child's bit")
	}
}
