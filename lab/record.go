package lab

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tmigr/tmigr/ftrace"
)

// TimeoutError is a guest that did not finish in time.
type TimeoutError struct {
	Timeout time.Duration
	Stage   string // the last stage the guest reported: "boot", "booted", "recording", "dumping"
	Console string // where the console log was kept
}

func (e *TimeoutError) Error() string {
	why := "a guest of many vCPUs boots slowly under TCG on few host cores"
	if e.Stage == "dumping" {
		why = "a guest's dump of a full trace through its console is slow under TCG on a loaded host"
	}
	return fmt.Sprintf("the guest did not finish within %v (last stage: %s); %s: raise the timeout. Console log: %s",
		e.Timeout, e.Stage, why, e.Console)
}

// Record boots a guest of the spec's shape under QEMU, records its timer
// and timer_migration trace events while the load runs, and writes the
// trace to out: the "# machine:" line, the kernel's "# Timer migration:"
// boot line, then the trace as the kernel's trace file prints it. Nothing
// is written unless the whole trace was recorded (no buffer overrun), came
// back intact and reads back with ftrace.NewReader.
//
// It fetches or builds what it needs first (see Host). When it fails after
// QEMU started, the error names the run directory, which keeps the console
// log and the initramfs.
func Record(ctx context.Context, s Spec, out io.Writer) error {
	s = s.withDefaults()
	if err := s.validate(); err != nil {
		return err
	}
	p := newProgress(s.Progress)
	f, err := newFetcher(s.Host, p.printf)
	if err != nil {
		return err
	}
	// What is built or found here first, what is fetched last: a
	// recording that cannot build its guest program (run outside a
	// checkout) fails before it downloads a kernel.
	guestPath, err := f.guest(ctx)
	if err != nil {
		return err
	}
	var cliPath string
	if s.ToolsDir != "" {
		if cliPath, err = f.cli(ctx); err != nil {
			return err
		}
	}
	qemu, err := f.qemu(ctx)
	if err != nil {
		return err
	}
	k, err := f.kernel(ctx, &s)
	if err != nil {
		return err
	}
	bbPath, err := f.busybox(ctx)
	if err != nil {
		return err
	}
	busybox, err := os.ReadFile(bbPath)
	if err != nil {
		return err
	}
	guest, err := os.ReadFile(guestPath)
	if err != nil {
		return err
	}
	extra, err := toolFiles(cliPath, k)
	if err != nil {
		return err
	}

	nonce, err := newNonce()
	if err != nil {
		return err
	}
	initrd, err := buildInitramfs(busybox, guest, initScript(s.plan(nonce)), extra)
	if err != nil {
		return err
	}
	runDir, err := os.MkdirTemp(f.host.CacheDir, "run-")
	if err != nil {
		return err
	}
	keep := true
	defer func() {
		if !keep {
			os.RemoveAll(runDir)
		}
	}()
	initrdPath := filepath.Join(runDir, "initramfs.cpio.gz")
	if err := os.WriteFile(initrdPath, initrd, 0o644); err != nil {
		return err
	}
	kname := k.Package
	if kname == "" {
		kname = k.Image
	}
	p.printf("booting %s: %d vCPUs, %d node(s) (%s), %d MiB, cmdline %q",
		kname, s.CPUs, s.Nodes, nodeLists(&s), s.MemoryMB, s.Cmdline)

	var log []byte
	var consolePath string
	var crashes []string
	for attempt := 1; ; attempt++ {
		consolePath = filepath.Join(runDir, fmt.Sprintf("console-%d.log", attempt))
		var booted bool
		log, booted, err = runQEMU(ctx, &s, qemu, qemuArgs(&s, k.Image, initrdPath), nonce, consolePath, p)
		if err != nil {
			return err
		}
		// A guest that died before its /init ran hit a race of TCG's,
		// not a problem of the spec: boot it again. So is one whose
		// kernel panicked while it recorded: its trace is lost, and
		// nothing of it can be replayed.
		panicked := booted && guestPanicked(log)
		if booted && !panicked || attempt > s.Retries {
			break
		}
		crashes = append(crashes, crashLine(log))
		when := "before its /init ran"
		if panicked {
			when = "while it recorded"
		}
		p.printf("the guest crashed %s (%s); booting it again (%d of %d retries)",
			when, crashLine(log), attempt, s.Retries)
	}
	if len(crashes) > 0 && len(log) > 0 {
		p.printf("recorded on attempt %d: %d retr%s covered a crash (%s; multi-threaded TCG, see lab/doc.go)",
			len(crashes)+1, len(crashes), map[bool]string{true: "y", false: "ies"}[len(crashes) == 1], strings.Join(crashes, "; "))
	}
	text, err := assemble(&s, log, nonce, k)
	if err != nil {
		return fmt.Errorf("%w (console log: %s)", err, consolePath)
	}
	n, err := checkTrace(text)
	if err != nil {
		return fmt.Errorf("%w (console log: %s)", err, consolePath)
	}
	if s.ToolsDir != "" {
		rep, err := parseConsole(log, nonce)
		if err == nil {
			var names []string
			names, err = writeTools(rep, s.ToolsDir)
			p.printf("tools: %s written to %s", strings.Join(names, " "), s.ToolsDir)
		}
		if err != nil {
			return fmt.Errorf("tools: %w (console log: %s)", err, consolePath)
		}
	}
	if _, err := out.Write(text); err != nil {
		return err
	}
	keep = false
	p.printf("%d events written (%d bytes)", n, len(text))
	return nil
}

// RecordFile records s into the file path, which appears whole or not at
// all: the recording goes to a temporary file beside it, renamed over path
// only when complete. A failed or interrupted recording leaves path as it
// was.
func RecordFile(ctx context.Context, s Spec, path string) error {
	return writeAtomic(path, func(w io.Writer) error { return Record(ctx, s, w) })
}

// writeAtomic writes path through write, whole or not at all: into a
// temporary file beside it, synced and renamed over path only when write
// succeeded. A failure leaves path as it was.
func writeAtomic(path string, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func nodeLists(s *Spec) string {
	var l []string
	for _, m := range s.NodeCPUs {
		l = append(l, m.String())
	}
	return strings.Join(l, ";")
}

func newNonce() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// runQEMU runs the guest to its end and returns its console log and
// whether its /init ran. The log also goes to consolePath and to s.Console
// as it comes.
func runQEMU(ctx context.Context, s *Spec, qemu string, args []string, nonce, consolePath string, p *progress) (log []byte, booted bool, err error) {
	cf, err := os.Create(consolePath)
	if err != nil {
		return nil, false, err
	}
	defer cf.Close()
	tctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, qemu, args...)
	setChildAttrs(cmd)
	cmd.WaitDelay = 5 * time.Second
	w := &consoleWatcher{marker: markerPrefix + " " + nonce + " stage ", p: p, start: time.Now(), stage: "boot"}
	sinks := []io.Writer{cf, &w.log, w}
	if s.Console != nil {
		sinks = append(sinks, s.Console)
	}
	cmd.Stdout = io.MultiWriter(sinks...)
	// A busy loop's vCPU thread takes its full share of the host's cores,
	// and with many of them on a host of few cores the vCPUs that matter
	// (the idle ones, whose every wakeup is a timer migration decision)
	// get so little host time that the guest's clock outruns their work:
	// a 3 s recording of 40 vCPUs, 38 of them busy, held a third of the
	// events and took 6 s of the guest's clock. Once the guest runs its
	// /init, the busy vCPUs' host threads go to the back of the host's
	// queue; they spin, so how fast they run does not matter.
	//
	// A run-time change is the exception: making an isolated partition
	// runs kernel work on every vCPU it takes (rebuilding the scheduling
	// domains, moving tasks), and with the busy vCPUs at nice 19 on a
	// loaded 2-core host one took 39 s instead of well under one. The
	// guest says "stage changing" before a change and "stage changed"
	// after it, and the busy vCPUs run at normal priority in between.
	w.onStage = func(stage string) {
		if s.Busy.Empty() {
			return
		}
		nice := 19
		switch stage {
		case "booted", "changed":
		case "changing":
			nice = 0
		default:
			return
		}
		if n, err := renice(cmd.Process.Pid, s.Busy, nice); err != nil {
			p.printf("host: could not set the busy vCPUs' priority: %v", err)
		} else if stage == "booted" {
			p.printf("host: %d vCPU threads of the busy CPUs %s at nice 19", n, s.Busy)
		}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	runErr := cmd.Run()
	switch {
	case ctx.Err() != nil:
		return nil, false, fmt.Errorf("interrupted; QEMU stopped (console log: %s)", consolePath)
	case errors.Is(tctx.Err(), context.DeadlineExceeded):
		return nil, false, &TimeoutError{Timeout: s.Timeout, Stage: w.lastStage(), Console: consolePath}
	case runErr != nil:
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = "no message"
		}
		return nil, false, fmt.Errorf("qemu: %v: %s (console log: %s)", runErr, msg, consolePath)
	}
	p.printf("guest powered off after %.1f s", time.Since(w.start).Seconds())
	return w.log.Bytes(), w.lastStage() != "boot", nil
}

// crashLine returns the console's line that says why a kernel died.
// guestPanicked reports whether the guest's kernel panicked (an oops in
// interrupt context, or with panic_on_oops): the guest then never dumps its
// trace.
func guestPanicked(log []byte) bool {
	return bytes.Contains(log, []byte("Kernel panic - not syncing"))
}

func crashLine(log []byte) string {
	lines := strings.Split(string(log), "\n")
	for _, key := range []string{"Kernel panic", "Oops:", "BUG:"} {
		for _, l := range lines {
			if i := strings.Index(l, key); i >= 0 {
				return strings.TrimSpace(l[i:])
			}
		}
	}
	return "no panic message"
}

// consoleWatcher reports the guest's stage lines as progress.
type consoleWatcher struct {
	marker string
	p      *progress
	start  time.Time
	log    bytes.Buffer
	mu     sync.Mutex
	line   []byte
	stage  string
	// onStage, if set, is called with each stage the guest reports.
	onStage func(stage string)
}

func (w *consoleWatcher) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range b {
		if c != '\n' {
			if len(w.line) < 256 {
				w.line = append(w.line, c)
			}
			continue
		}
		l := strings.TrimRight(string(w.line), "\r")
		w.line = w.line[:0]
		if i := strings.Index(l, w.marker); i >= 0 {
			w.stage = l[i+len(w.marker):]
			w.p.printf("guest: %s (%.1f s)", w.stage, time.Since(w.start).Seconds())
			if w.onStage != nil {
				w.onStage(w.stage)
			}
		}
	}
	return len(b), nil
}

func (w *consoleWatcher) lastStage() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stage
}

// assemble turns the console log of a guest that booted k into the
// recording's text.
func assemble(s *Spec, log []byte, nonce string, k kernel) ([]byte, error) {
	rep, err := parseConsole(log, nonce)
	if err != nil {
		return nil, err
	}
	trace, err := rep.trace()
	if err != nil {
		return nil, err
	}
	// The changes as made: the kernel may have refused some.
	var done, refused []ftrace.Change
	if len(s.At) > 0 {
		if done, refused, err = doneTimes(trace, s.At); err != nil {
			return nil, err
		}
	}
	made := *s
	made.At = done
	if err := rep.checkShape(&made); err != nil {
		return nil, err
	}
	release, err := rep.release()
	if err != nil {
		return nil, err
	}
	if k.Upstream != "" && release != k.Upstream {
		return nil, fmt.Errorf("the guest ran Linux %s, but the kernel fetched was %s (%s)", release, k.Upstream, k.Package)
	}
	hier, err := rep.hierarchy()
	if err != nil {
		return nil, err
	}
	m := s.machine(release, k.HZ, k.ConfigFrom)
	m.At, m.Refused = done, refused
	if err := m.Validate(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# machine: " + m.String() + "\n")
	if hier != nil {
		b.WriteString("# " + hier.String() + "\n")
	}
	b.Write(trace)
	return b.Bytes(), nil
}

// checkTrace reads the recording back as replay will and returns how many
// events it holds. A buffer overrun is an error: the kernel overwrote the
// oldest events of some CPUs, and a replay would start from a state the
// trace does not show.
func checkTrace(text []byte) (int, error) {
	r := ftrace.NewReader(bytes.NewReader(text))
	n := 0
	for {
		_, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("the recorded trace does not read back: %v", err)
		}
		n++
	}
	h := r.Header()
	if !h.HasEntries {
		return 0, errors.New("the recorded trace lacks the kernel's entries-in-buffer line")
	}
	if h.Entries != h.Written {
		return 0, fmt.Errorf("the trace buffer overran: it kept %d of %d events; raise the per-CPU buffer or record for less time", h.Entries, h.Written)
	}
	if st := r.Stats(); st.Lost > 0 || st.LostUnknown > 0 {
		return 0, fmt.Errorf("the kernel lost events (%d, and %d unknown counts)", st.Lost, st.LostUnknown)
	}
	return n, nil
}

// progress serializes progress lines from the recorder and the console
// watcher.
type progress struct {
	mu sync.Mutex
	w  io.Writer
}

func newProgress(w io.Writer) *progress {
	if w == nil {
		w = io.Discard
	}
	return &progress{w: w}
}

func (p *progress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", args...)
}

// markerRE matches the guest's trace markers: "tmigr-guest-130 [000] ...1.
// 4.492196: tracing_mark_write: tmigr-lab: 500ms partition 2-3".
var markerRE = regexp.MustCompile(`(?m)^.* (\d+)\.(\d{6}): tracing_mark_write: tmigr-lab: (.*)$`)

// doneTimes returns the run-time changes as they were done: each planned
// change with the time of its trace marker (when it was complete) from the
// start marker, to the millisecond. Under TCG a change can take seconds
// (an isolated partition of 16 vCPUs: 5 to 9 s on a loaded 2-core host),
// and the machine line must say when the kernel's state changed, not when
// it was asked. A change the kernel refused (the guest's "refused" marker)
// did not happen: it is left out, and returned in refused. A change
// without its marker, or one the guest reported failed, is an error.
func doneTimes(trace []byte, planned []ftrace.Change) (out, refused []ftrace.Change, err error) {
	start := int64(-1)
	var done, refusedAt []int64
	var kept []ftrace.Change
	for _, m := range markerRE.FindAllSubmatch(trace, -1) {
		sec, _ := strconv.ParseInt(string(m[1]), 10, 64)
		usec, _ := strconv.ParseInt(string(m[2]), 10, 64)
		ts := sec*1e6 + usec
		text := strings.TrimRight(string(m[3]), "\r")
		switch {
		case text == "start":
			start = ts
		case strings.HasPrefix(text, "failed "):
			return nil, nil, fmt.Errorf("the guest could not make the change %q", strings.TrimPrefix(text, "failed "))
		default:
			i := len(done) + len(refused)
			what, isRefused := strings.CutPrefix(text, "refused ")
			if i >= len(planned) || what != planned[i].String() {
				return nil, nil, fmt.Errorf("the trace marks the change %q where %d changes were planned (%s)", text, len(planned), ftrace.FormatChanges(planned))
			}
			if isRefused {
				refused = append(refused, planned[i])
				refusedAt = append(refusedAt, ts)
				continue
			}
			done = append(done, ts)
			kept = append(kept, planned[i])
		}
	}
	if start < 0 {
		return nil, nil, errors.New("the trace lacks the guest's start marker (tmigr-lab: start): the run-time changes did not run")
	}
	if len(done)+len(refused) != len(planned) {
		return nil, nil, fmt.Errorf("the trace marks %d of the %d run-time changes (%s)", len(done)+len(refused), len(planned), ftrace.FormatChanges(planned))
	}
	// Each at its marker, written once the guest's write returned: a
	// refused change's effects (a refused offline's moved tasks) came
	// before it too.
	at := func(cs []ftrace.Change, ts []int64) {
		for i := range cs {
			cs[i].At = time.Duration((ts[i]-start+500)/1000) * time.Millisecond
			if i > 0 && cs[i].At < cs[i-1].At {
				cs[i].At = cs[i-1].At
			}
		}
	}
	at(kept, done)
	at(refused, refusedAt)
	return kept, refused, nil
}
