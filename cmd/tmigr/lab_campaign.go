package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tmigr/tmigr/lab"
	"github.com/tmigr/tmigr/tracefs"
)

func init() {
	registerLab("campaign", "record random machines and loads, replay each, keep the mismatching recordings", runLabCampaign)
}

const labCampaignUsage = `usage: tmigr lab campaign --dir DIR [-n COUNT] [--seed N] [--only LIST] [flags]

Measures the model's fidelity on fresh recordings. It draws COUNT machines
and loads at random from the seed, records each with "tmigr lab record"
(QEMU TCG: a minute or two each on a 2-core host), replays the recording
under its own kernel with every check of "tmigr replay", and keeps every
recording that shows a mismatch in DIR, with a cut of it to the shortest
window of events that still shows the first mismatch (.cut.txt).

A draw: a kernel series (--kernels) and flavour (--flavours); 2 to
--max-cpus CPUs on 1 to 4 NUMA nodes; isolcpus= (with or without the
domain,managed_irq flags), nohz_full=, both or neither; a load on each CPU
(none, busy loop, SCHED_OTHER sleeper, SCHED_FIFO sleeper; the sleepers'
period 1-20 ms, relative or absolute); 0 to 3 run-time changes (CPU offline
and online, an isolated cpuset partition made and removed,
kernel.timer_migration). Draw I of seed S is the same whatever else is
drawn: --seed S --only I draws it again. The seed is printed first; by
default it comes from the clock.

--max-cpus defaults to 16: under TCG a guest's boot grows with the square
of its vCPUs (64 vCPUs take minutes to boot on 2 host cores); raise it, up
to 64, on a bigger host.

As root, the campaign also records the machine it runs on, as "tmigr
record" does (its own kernel, through tracefs, in an instance of its own):
before the first draw and after every --local-every draws, each recording
as long as a draw's, replayed and kept like one (local-seedS-K.txt) and
counted apart in the summary ("local"). --local-every 0 records only
guests.

A user's recording begins anywhere in a running system: in the middle of
operations, with events queued and the clock not yet pinned. --windows N
(default 2) replays N windows of each recording too, each beginning at an
event drawn from the seed, the draw and the window's number, of 1500, 3000
and 6000 events in turn (the header and the change markers before it kept);
one that mismatches, or that the replay refuses, is kept as
seedS-IIII-wA-B.txt. The summary counts the windows apart, per group
(windows, failed_windows) and per draw; they do not change a draw's status
or the exit status.

DIR keeps the campaign's state, one JSON file per finished draw
(draws/seedS-IIII.json): stopped (Ctrl-C), the campaign goes on where it
stopped when run again with the same seed and limits. A draw whose
recording failed is finished too; --retry-errors draws it again. The
summary (schema_version 1: per kernel series and flavour and per check, the
decisions checked, matched, undetermined by reason and mismatched; every
draw with its spec and result) goes to --json, default DIR/summary.json, and
a table to standard output. Exit status 1 when a draw showed a mismatch or
failed, 130 when interrupted.

flags:
`

// campaignRecord records a draw; tests replace it so as not to boot QEMU.
var campaignRecord = lab.RecordFile

// campaignRecordLocal records the machine the campaign runs on; tests
// replace it so as not to touch tracefs.
var campaignRecordLocal = recordLocal

// canRecordLocal says why this machine cannot be recorded (nil when it
// can); tests replace it.
var canRecordLocal = func() error {
	if os.Geteuid() != 0 {
		return errors.New("not root")
	}
	return nil
}

// recordLocal records the machine it runs on for d into path, as "tmigr
// record -d D -o PATH --hrtimers" does (the hrtimer events feed the
// replay's hrtimer check): whole or not at all.
func recordLocal(ctx context.Context, path string, d time.Duration) error {
	m, err := thisMachine()
	if err != nil {
		return err
	}
	file, err := createOutput(path)
	if err != nil {
		return err
	}
	defer file.abort()
	if _, err := recordMachine(ctx, file, m, tracefs.Options{HRTimers: true}, d, nil); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err // interrupted: the recording is cut short
	}
	return file.commit()
}

func runLabCampaign(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("tmigr lab campaign", labCampaignUsage, stdout, stderr)
	seedText := fs.String("seed", "", "the campaign's random seed (default: from the clock, printed)")
	n := fs.Int("n", 10, "how many draws")
	only := fs.String("only", "", "make only these draws of the seed (a cpulist-like list of indices: 3 or 0-2,5)")
	var limits lab.DrawLimits
	fs.IntVar(&limits.MaxCPUs, "max-cpus", lab.DefaultCampaignCPUs, fmt.Sprintf("the most CPUs a draw may have (2-%d)", lab.MaxCampaignCPUs))
	kernels := fs.String("kernels", strings.Join(lab.Series, ","), "the kernel series to draw from, comma-separated")
	flavours := fs.String("flavours", "generic,rt", "the kernel flavours to draw from, comma-separated: generic, rt")
	fs.DurationVar(&limits.Duration, "duration", lab.DefaultCampaignDuration, "how long each draw records")
	dir := fs.String("dir", "", "the campaign's directory: state, reproducers, summary (required)")
	jsonOut := fs.String("json", "", "the JSON summary's file (default DIR/summary.json)")
	keep := fs.Bool("keep", false, "keep every recording, not only those with a mismatch")
	noCut := fs.Bool("no-cut", false, "keep the mismatching recordings whole, without a cut")
	retryErrors := fs.Bool("retry-errors", false, "draw again the draws that failed before")
	dryRun := fs.Bool("dry-run", false, "print each draw's \"tmigr lab record\" command; record nothing")
	var host lab.Host
	fs.StringVar(&host.CacheDir, "cache", "", "the recorder's cache directory (default $XDG_CACHE_HOME/tmigr/lab or ~/.cache/tmigr/lab)")
	fs.StringVar(&host.Mirror, "mirror", "", "Debian archive base URL (default http://deb.debian.org)")
	fs.BoolVar(&host.NoInstall, "no-install", false, "never run apt-get install; fail naming what is missing")
	timeout := fs.Duration("timeout", 0, "limit on each QEMU run (default: the recorder's, from the draw's CPUs and the host)")
	localEvery := fs.Int("local-every", 50, "as root, record the machine the campaign runs on before the first draw and after every N draws (0: never)")
	windows := fs.Int("windows", 2, "replay also N windows of each recording, beginning at events drawn from the seed (1500, 3000 and 6000 events in turn): a recording that begins anywhere")
	fs.files("json")
	fs.dirs("dir", "cache")
	fs.operands("", 0, 0, completion{})
	if rc, ok := fs.parse(args); !ok {
		return rc
	}
	bad := fs.failf

	// Every flag is checked here, before anything is fetched or booted.
	var seed uint64
	if *seedText == "" {
		seed = uint64(time.Now().UnixNano())
	} else {
		var err error
		if seed, err = strconv.ParseUint(*seedText, 10, 64); err != nil {
			return bad("--seed: %q is not a number from 0 to %d", *seedText, uint64(1<<64-1))
		}
	}
	if limits.Duration <= 0 {
		return bad("--duration: %v; give a positive duration", limits.Duration)
	}
	if *n < 1 {
		return bad("-n: %d; a campaign makes at least 1 draw", *n)
	}
	limits.Kernels = nil
	for _, k := range strings.Split(*kernels, ",") {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		limits.Kernels = append(limits.Kernels, k)
	}
	if len(limits.Kernels) == 0 {
		return bad("--kernels: give at least one series of %s", strings.Join(lab.Series, ", "))
	}
	for _, f := range strings.Split(*flavours, ",") {
		if f = strings.TrimSpace(f); f != "" {
			limits.Flavours = append(limits.Flavours, lab.Flavour(f))
		}
	}
	if len(limits.Flavours) == 0 {
		return bad("--flavours: give generic, rt or both")
	}
	if err := limits.Validate(); err != nil {
		return bad("--%v", err)
	}
	var indices []int
	if *only != "" {
		var err error
		if indices, err = parseIndices(*only); err != nil {
			return bad("--only: %v", err)
		}
	}
	if *dryRun {
		c := &lab.Campaign{Seed: seed, N: *n, Only: indices}
		fmt.Fprintf(stdout, "campaign seed %d\n", seed)
		for _, i := range c.Indices() {
			if i >= *n {
				return bad("--only: draw %d is not one of the %d draws (0-%d)", i, *n, *n-1)
			}
			s, err := lab.Draw(seed, i, limits)
			if err != nil {
				return bad("%v", err)
			}
			fmt.Fprintf(stdout, "draw %d: %s\n", i, lab.RecordCommand(s, fmt.Sprintf("seed%d-%04d.txt", seed, i)))
		}
		return 0
	}
	if *dir == "" {
		return bad("give the campaign's directory with --dir DIR")
	}
	if *timeout < 0 {
		return bad("--timeout: %v; give a positive limit", *timeout)
	}
	if *localEvery < 0 {
		return bad("--local-every: %d; give 0 (never) or a number of draws", *localEvery)
	}
	if *windows < 0 {
		return bad("--windows: %d; give 0 (none) or a number of windows", *windows)
	}
	c := &lab.Campaign{Seed: seed, N: *n, Only: indices, Limits: limits, Dir: *dir, Keep: *keep, NoCut: *noCut,
		RetryErrors: *retryErrors, Host: host, Timeout: *timeout, Windows: *windows,
		Progress: prefixWriter{stderr, "tmigr lab: "}, Record: campaignRecord}
	if *localEvery > 0 && len(indices) == 0 {
		if err := canRecordLocal(); err != nil {
			fmt.Fprintf(stderr, "tmigr lab: this machine is not recorded (%v); the guests are\n", err)
		} else {
			c.RecordLocal, c.LocalEvery = campaignRecordLocal, *localEvery
		}
	}
	if err := c.Validate(); err != nil {
		return bad("%v", err)
	}
	summaryPath := *jsonOut
	if summaryPath == "" {
		summaryPath = filepath.Join(*dir, "summary.json")
	} else if err := lab.CheckWritableDir(filepath.Dir(summaryPath)); err != nil {
		return bad("--json: %v", err)
	}

	fmt.Fprintf(stdout, "campaign seed %d (again: --seed %d; one draw: --seed %d --only I)\n", seed, seed, seed)
	ctx, stop := labContext()
	defer stop()
	results, err := c.Run(ctx)
	interrupted := errors.Is(err, lab.ErrInterrupted)
	if err != nil && !interrupted {
		fmt.Fprintf(stderr, "tmigr lab campaign: %v\n", err)
		return 1
	}
	sum := lab.Summarize(seed, limits, len(c.Indices()), results)
	sum.Interrupted = interrupted
	if err := lab.WriteSummary(summaryPath, sum); err != nil {
		fmt.Fprintf(stderr, "tmigr lab campaign: %v\n", err)
		return 1
	}
	if err := sum.WriteTable(stdout); err != nil {
		return 1
	}
	fmt.Fprintf(stderr, "tmigr lab: wrote %s\n", summaryPath)
	if interrupted {
		fmt.Fprintf(stderr, "tmigr lab campaign: interrupted after %d of %d draws; run the same command again to go on\n", sum.Finished, len(c.Indices()))
		return 130
	}
	for _, r := range results {
		if r.Status != lab.StatusOK {
			return 1
		}
	}
	return 0
}

// parseIndices parses "3" or "0-2,5" into draw indices.
func parseIndices(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("%q is not a draw index (0, 1, ...)", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("%q is not a range of draw indices (2-5)", part)
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}
