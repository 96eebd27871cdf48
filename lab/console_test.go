package lab

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
)

// console-2cpu.log is the serial console of a real run of a 2-CPU guest
// (Debian's 6.12.118 cloud kernel, no load, 2 s), SeaBIOS's escape
// sequences and the tty's "\r\n" line ends included.
const (
	realConsole = "testdata/console-2cpu.log"
	realNonce   = "f682db323e645085"
)

func readReal(t testing.TB) []byte {
	b, err := os.ReadFile(realConsole)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseRealConsole(t *testing.T) {
	log := readReal(t)
	rep, err := parseConsole(log, realNonce)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		secUname:   "6.12.118+deb13-cloud-amd64\n",
		secCmdline: "console=ttyS0 quiet panic=-1 rdinit=/init\n",
		secNodes:   "0 0-1\n",
		secOnline:  "0-1\n",
	} {
		if got := rep.Sections[name]; got != want {
			t.Errorf("section %s = %q, want %q", name, got, want)
		}
	}
	if rel, err := rep.release(); err != nil || rel != "6.12.118" {
		t.Errorf("release %q, %v", rel, err)
	}
	h, err := rep.hierarchy()
	if err != nil || h == nil || *h != (ftrace.Hierarchy{Levels: 1, ChildrenPerGroup: 8, CrossnodeLevel: 1}) {
		t.Errorf("hierarchy %+v, %v", h, err)
	}
	trace, err := rep.trace()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(trace, []byte("# tracer: nop\n#\n# entries-in-buffer/entries-written: 222/222   #P:2\n")) {
		t.Errorf("trace starts %q", trace[:min(len(trace), 100)])
	}

	// A nonce other than the run's finds nothing.
	if _, err := parseConsole(log, "0000000000000000"); err == nil || !strings.Contains(err.Error(), "printed nothing") {
		t.Errorf("a wrong nonce: %v", err)
	}
}

// TestAssembleReal runs the host's half of a recording on the real console
// log: the file it makes starts with the machine and boot lines and reads
// back with ftrace as the trace the guest sent.
func TestAssembleReal(t *testing.T) {
	s := Spec{CPUs: 2}.withDefaults()
	text, err := assemble(&s, readReal(t), realNonce, kernel{HZ: 250})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(text), "\n", 4)
	if lines[0] != `# machine: cpus=2 nodes=1 node-cpus=0-1 kernel=6.12.118 hz=250 cmdline="" busy= sleepers= (QEMU TCG)` {
		t.Errorf("line 1: %s", lines[0])
	}
	if lines[1] != "# Timer migration: 1 hierarchy levels; 8 children per group; 1 crossnode level" {
		t.Errorf("line 2: %s", lines[1])
	}
	if lines[2] != "# tracer: nop" {
		t.Errorf("line 3: %s", lines[2])
	}
	n, err := checkTrace(text)
	if err != nil {
		t.Fatal(err)
	}
	if n != 222 {
		t.Errorf("%d events, the header says 222", n)
	}
	r := ftrace.NewReader(bytes.NewReader(text))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	h := r.Header()
	if h.Machine == nil || h.Machine.CPUs != 2 || h.Machine.HZ != 250 || h.Hierarchy == nil || h.Hierarchy.Levels != 1 {
		t.Errorf("header %+v", h)
	}

	// The guest's view of its shape must be the spec's.
	for _, bad := range []Spec{{CPUs: 4}, {CPUs: 2, Nodes: 2}} {
		b := bad.withDefaults()
		if _, err := assemble(&b, readReal(t), realNonce, kernel{HZ: 250}); err == nil {
			t.Errorf("a log of a 2-CPU, 1-node guest passed as a recording of %d CPUs on %d nodes", b.CPUs, b.Nodes)
		}
	}
}

// TestTruncatedConsole: a log cut anywhere before the guest's last marker
// is an error that says the guest was cut off; never a recording.
func TestTruncatedConsole(t *testing.T) {
	log := readReal(t)
	done := bytes.Index(log, []byte(markerPrefix+" "+realNonce+" done"))
	if done < 0 {
		t.Fatal("no done marker in the real log")
	}
	step := 13 // every cut would take seconds; 13 is prime to the line lengths
	if testing.Short() {
		step = 97
	}
	for cut := 0; cut < done; cut += step {
		rep, err := parseConsole(log[:cut], realNonce)
		if err == nil {
			t.Fatalf("a log cut at byte %d of %d parsed: %v", cut, len(log), rep.Sections)
		}
		var ce *ConsoleError
		if !errors.As(err, &ce) {
			t.Fatalf("cut at %d: error %T %v", cut, err, err)
		}
	}
	_, err := parseConsole(log[:done-1000], realNonce)
	if err == nil || !strings.Contains(err.Error(), `ends inside section "trace.gz.b64"`) || !strings.Contains(err.Error(), "cut off") {
		t.Errorf("a log cut in the trace: %v", err)
	}
}

// TestDamagedTrace: a trace section damaged on the way is caught by base64
// or gzip, never passed on.
func TestDamagedTrace(t *testing.T) {
	text := "# tracer: nop\n" + strings.Repeat("          <idle>-0       [000] d..4.     2.396797: tmigr_cpu_idle: cpu=0 parent=000000000e6a2cfb nextevt=2432000000 wakeup=9223372036854775807\n", 50)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(text))
	zw.Close()
	enc := base64.StdEncoding.EncodeToString(gz.Bytes())
	var lines []string
	for len(enc) > 76 {
		lines, enc = append(lines, enc[:76]), enc[76:]
	}
	lines = append(lines, enc)
	report := func(body []string) *guestReport {
		return &guestReport{Sections: map[string]string{secTrace: strings.Join(body, "\n") + "\n"}, Done: true}
	}
	got, err := report(lines).trace()
	if err != nil || string(got) != text {
		t.Fatalf("intact trace: %v", err)
	}
	// printk writes to the serial console between the guest's own writes:
	// a message on a line of its own, or one that cuts a line (its rest on
	// the next), is taken out and the trace decodes whole.
	cut := append(append([]string{}, lines[:1]...), lines[1][:30]+"[   12.764791] Disabling IRQ #4", lines[1][30:])
	cut = append(cut, lines[2:]...)
	for name, body := range map[string][]string{
		"kernel message on its own line": append(append([]string{}, lines[:1]...), append([]string{"[   12.3] rcu: INFO: stall"}, lines[1:]...)...),
		"kernel message cutting a line":  cut,
	} {
		if got, err := report(body).trace(); err != nil || string(got) != text {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, body := range map[string][]string{
		"missing line":                      append(append([]string{}, lines[:1]...), lines[2:]...),
		"cut short":                         lines[:len(lines)-1],
		"kernel message in place of a line": append(append([]string{}, lines[:1]...), append([]string{"[   12.764791] Disabling IRQ #4"}, lines[2:]...)...),
		"flipped char":                      append([]string{strings.Replace(lines[0], lines[0][20:21], "Q", 1)}, lines[1:]...),
		"empty":                             {""},
		"not gzip":                          {base64.StdEncoding.EncodeToString([]byte("# tracer: nop\n"))},
		"padding first":                     append([]string{"AA=="}, lines...),
	} {
		if _, err := report(body).trace(); err == nil {
			t.Errorf("%s: a damaged trace decoded", name)
		}
	}
}

func TestConsoleErrors(t *testing.T) {
	const n = "abcd"
	m := func(rest string) string { return "@@tmigr-lab abcd " + rest + "\r\n" }
	ok := m("stage booted") + m("begin uname") + "6.12.117+deb13-rt-amd64\r\n" + m("end uname") + m("done")
	if rep, err := parseConsole([]byte(ok), n); err != nil || rep.Sections[secUname] != "6.12.117+deb13-rt-amd64\n" {
		t.Fatalf("a good log: %v", err)
	}
	for _, tc := range []struct {
		log, want string
	}{
		{"", "printed nothing"},
		{"SeaBIOS\r\nKernel panic - not syncing: VFS\r\n", "printed nothing"},
		{m("stage booted") + m("error mount tracefs"), "the guest failed: mount tracefs"},
		{m("begin a") + m("begin b"), `section "b" begins inside section "a"`},
		{m("end a"), `end of section "a", but the open section is ""`},
		{m("begin a") + m("end b"), `end of section "b"`},
		{m("begin a") + "x\n", `ends inside section "a"`},
		{m("begin a") + m("end a"), "without the guest's last marker"},
		{m("begin a") + m("end a") + m("begin a") + m("end a") + m("done"), `section "a" a second time`},
		{m("begin ") + m("done"), "without a name"},
		{m("done") + m("begin a"), "after the guest's last marker"},
		{m("begin a") + m("done"), "done inside section"},
		{m("begin a") + m("stage x"), "stage line inside section"},
		{m("frobnicate"), `unknown marker "frobnicate"`},
		{"junk" + m("begin a"), `"junk" before the marker`},
		{m("begin a") + "line[  1.0] printk" + m("end a"), "before the end marker"},
	} {
		_, err := parseConsole([]byte(tc.log), n)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("log %q: error %v, want %q", tc.log, err, tc.want)
		}
	}
	// The error quotes the end of the console, which says why.
	_, err := parseConsole([]byte("a\nb\nKernel panic - not syncing: Attempted to kill init!\n"), n)
	if err == nil || !strings.Contains(err.Error(), "Kernel panic") {
		t.Errorf("the console's tail is not quoted: %v", err)
	}
}

func TestCheckTrace(t *testing.T) {
	const head = "# machine: cpus=2 nodes=1 node-cpus=0-1 kernel=6.12.117 hz=250 cmdline=\"\" busy= sleepers= (QEMU TCG)\n# tracer: nop\n#\n"
	const ev = "          <idle>-0       [000] d..4.     2.396797: tmigr_cpu_idle: cpu=0 parent=000000000e6a2cfb nextevt=2432000000 wakeup=9223372036854775807\n"
	for _, tc := range []struct {
		text, want string
	}{
		{head + "# entries-in-buffer/entries-written: 1/1   #P:2\n#\n" + ev, ""},
		{head + "# entries-in-buffer/entries-written: 1/5   #P:2\n#\n" + ev, "overran: it kept 1 of 5"},
		{head + "#\n" + ev, "lacks the kernel's entries-in-buffer line"},
		{head + "# entries-in-buffer/entries-written: 2/2   #P:2\n#\n" + ev, "does not read back"},
		{head + "# entries-in-buffer/entries-written: 1/1   #P:2\n#\n" + strings.Replace(ev, "cpu=0", "cpu=zero", 1), "does not read back"},
		{head + "# entries-in-buffer/entries-written: 1/1   #P:2\n#\nCPU:1 [LOST 3 EVENTS]\n" + ev, "lost"},
	} {
		n, err := checkTrace([]byte(tc.text))
		switch {
		case tc.want == "" && (err != nil || n != 1):
			t.Errorf("good trace: %d events, %v", n, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("trace %q: %v, want %q", tc.text, err, tc.want)
		}
	}
}

func FuzzParseConsole(f *testing.F) {
	f.Add([]byte(""), "abcd")
	f.Add([]byte("@@tmigr-lab abcd begin trace.gz.b64\r\nH4sIAAAAAAAA/wEAAP//AAAAAAAAAAA=\r\n@@tmigr-lab abcd end trace.gz.b64\r\n@@tmigr-lab abcd done\r\n"), "abcd")
	f.Add([]byte("@@tmigr-lab abcd begin dmesg\n[ 0.5] Timer migration: 2 hierarchy levels; 8 children per group; 1 crossnode level\n@@tmigr-lab abcd end dmesg\n@@tmigr-lab abcd done\n"), "abcd")
	f.Add([]byte("@@tmigr-lab abcd begin nodes\n0 0-3\n1 x\n@@tmigr-lab abcd end nodes\n@@tmigr-lab abcd begin online\n0-7\n@@tmigr-lab abcd end online\n@@tmigr-lab abcd done\n"), "abcd")
	f.Add([]byte("@@tmigr-lab abcd error boom\n"), "abcd")
	f.Fuzz(func(t *testing.T, log []byte, nonce string) {
		rep, err := parseConsole(log, nonce)
		if err != nil {
			return
		}
		if !rep.Done {
			t.Fatal("a report without its last marker passed")
		}
		// Whatever the sections hold, reading them must not panic.
		rep.trace()
		rep.release()
		rep.hierarchy()
		s := Spec{CPUs: 8, Nodes: 2}.withDefaults()
		rep.checkShape(&s)
		if text, err := assemble(&s, log, nonce, kernel{HZ: 250}); err == nil {
			if _, err := checkTrace(text); err != nil {
				return
			}
			if !bytes.HasPrefix(text, []byte("# machine: ")) {
				t.Fatal("a recording without its machine line")
			}
		}
	})
}

// TestRelease: the release is uname's, or for Debian's 6.1 (whose uname
// says 6.1.0-57-cloud-amd64) the package version in /proc/version, which
// comes after the compiler's.
func TestRelease(t *testing.T) {
	for _, tc := range []struct{ uname, version, want string }{
		{"6.12.118+deb13-cloud-amd64", "Linux version 6.12.118+deb13-cloud-amd64 (debian-kernel@lists.debian.org) (x86_64-linux-gnu-gcc-14 (Debian 14.2.0-19) 14.2.0) #1 SMP PREEMPT_DYNAMIC Debian 6.12.118-1 (2026-11-20)", "6.12.118"},
		{"6.1.0-57-cloud-amd64", "Linux version 6.1.0-57-cloud-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14+deb12u1) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.192-3 (2026-11-26)", "6.1.192"},
		{"7.3.4+deb13-rt-amd64", "Linux version 7.3.4+deb13-rt-amd64 #1 SMP PREEMPT_RT", "7.3.4"},
	} {
		r := &guestReport{Sections: map[string]string{secUname: tc.uname + "\n", secVersion: tc.version + "\n"}}
		if got, err := r.release(); err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.uname, got, err, tc.want)
		}
	}
}

// TestCheckShapeOffline: a CPU the run-time changes took offline (and did
// not bring back) is missing from the guest's online mask and from its
// node's cpulist at the end of the recording, and that is the machine
// asked for; a CPU missing without a change, or one brought back that is
// still missing, is not.
func TestCheckShapeOffline(t *testing.T) {
	rep := func(online, nodes string) *guestReport {
		return &guestReport{Sections: map[string]string{secOnline: online + "\n", secNodes: nodes}}
	}
	off := func(at time.Duration, cpu int) ftrace.Change {
		return ftrace.Change{At: at, Kind: ftrace.ChangeOffline, CPU: cpu}
	}
	on := func(at time.Duration, cpu int) ftrace.Change {
		return ftrace.Change{At: at, Kind: ftrace.ChangeOnline, CPU: cpu}
	}
	for _, tc := range []struct {
		name          string
		at            []ftrace.Change
		online, nodes string
		want          string // "" for no error
	}{
		{"all online", nil, "0-9", "0 0-4\n1 5-9\n", ""},
		{"5 offline", []ftrace.Change{off(2*time.Second, 5)}, "0-4,6-9", "0 0-4\n1 6-9\n", ""},
		{"5 offline, node list stale", []ftrace.Change{off(2*time.Second, 5)}, "0-4,6-9", "0 0-4\n1 5-9\n", "node 1 holds CPUs"},
		{"5 back online", []ftrace.Change{off(time.Second, 5), on(2*time.Second, 5)}, "0-9", "0 0-4\n1 5-9\n", ""},
		{"5 back online but missing", []ftrace.Change{off(time.Second, 5), on(2*time.Second, 5)}, "0-4,6-9", "0 0-4\n1 6-9\n", "online, not 0-9"},
		{"missing without a change", nil, "0-4,6-9", "0 0-4\n1 6-9\n", "online, not 0-9"},
		{"offline one still online", []ftrace.Change{off(time.Second, 3)}, "0-9", "0 0-4\n1 5-9\n", "(3 offline by the run-time changes)"},
	} {
		s := Spec{CPUs: 10, Nodes: 2, Busy: cpumask.Range(1, 5), At: tc.at, Duration: 3 * time.Second}.withDefaults()
		if err := s.validate(); err != nil {
			t.Fatalf("%s: the spec: %v", tc.name, err)
		}
		err := rep(tc.online, tc.nodes).checkShape(&s)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
