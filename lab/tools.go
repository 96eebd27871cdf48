package lab

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The tools phase: with Spec.ToolsDir, the guest also runs tmigr itself, as
// a user runs it on their machine, while the load runs and before the
// recording: tmigr record, tmigr top --json, tmigr exporter (scraped twice
// with busybox wget) and tmigr host --verify, each on the housekeeping
// CPUs, each leaving tracefs as it found it (the guest lists tracefs's
// instances and its top-level state before and after). Their outputs and
// exit statuses come back as sections "tool.NAME" and are written to
// ToolsDir as NAME:
//
//	record.txt, record.out, record.rc      tmigr record -d 2s
//	top.json, top.err, top.rc              tmigr top --json -d 2s -p 1s
//	metrics-0.txt, metrics-1.txt           /metrics 1 s and 3 s after the exporter started
//	exporter.out, exporter.rc              tmigr exporter, ended by SIGTERM
//	verify.txt, verify.rc                  tmigr host --verify 2s
//	tracefs-before.txt, tracefs-after.txt  instances, tracing_on, current_tracer, set_event
//
// The guest reads its machine as tmigr host does; the kernel's config is
// placed at /boot/config-RELEASE for it (HZ, PREEMPT_RT, NO_HZ_FULL).
const toolPrefix = "tool."

// toolsDuration is how long the tools phase adds to a guest's run: the
// recording, top, the exporter's scrapes and verify take 9 s, and each
// command's start (reading the machine, sizing its tracefs buffers) takes
// seconds more under TCG: the phase took 44 s in 4-CPU guests on the 2-core
// CI VM at load 3.
const toolsDuration = 60 // seconds

// toolsConfigPath is where the initramfs holds the kernel's config; /init
// links it under the release's name once the kernel runs.
const toolsConfigPath = "/boot/config"

// toolsPhase writes the tools phase of /init (see above).
func toolsPhase(w func(string, ...any), p guestPlan) {
	hk := p.Housekeeping.String()
	run := func(format string, args ...any) { w("taskset -c %s "+format, append([]any{hk}, args...)...) }
	w(`echo "$M stage tools"`)
	w("mkdir -p /tools")
	w(`ln -s config %s-$(uname -r)`, toolsConfigPath)
	w("ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null")
	w(`state() { ls $T/instances; cat $T/tracing_on $T/current_tracer $T/set_event; }`)
	w("state > /tools/tracefs-before.txt")
	run("tmigr record -d 2s -o /tools/record.txt > /tools/record.out 2>&1; echo $? > /tools/record.rc")
	run("tmigr top --json -d 2s -p 1s > /tools/top.json 2> /tools/top.err; echo $? > /tools/top.rc")
	run("tmigr exporter --listen 127.0.0.1:9724 > /tools/exporter.out 2>&1 &")
	w("E=$!")
	w("sleep 1; wget -q -O /tools/metrics-0.txt http://127.0.0.1:9724/metrics")
	w("sleep 2; wget -q -O /tools/metrics-1.txt http://127.0.0.1:9724/metrics")
	w("kill -TERM $E; wait $E; echo $? > /tools/exporter.rc")
	run("tmigr host --verify 2s > /tools/verify.txt 2>&1; echo $? > /tools/verify.rc")
	w("state > /tools/tracefs-after.txt")
}

// toolsDump writes the lines of /init that print the tools' outputs.
func toolsDump(w func(string, ...any)) {
	w(`for f in /tools/*; do put %s"${f##*/}" sh -c "gzip -c $f | base64"; done`, toolPrefix)
}

// writeTools writes the tools' outputs of a guest's report to dir.
func writeTools(rep *guestReport, dir string) ([]string, error) {
	var names []string
	for name := range rep.Sections {
		if n, ok := strings.CutPrefix(name, toolPrefix); ok {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("the guest's report has no tool outputs")
	}
	sort.Strings(names)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, `/\`) || n == "." || n == ".." {
			return nil, fmt.Errorf("the guest named a tool output %q", n)
		}
		data, err := decodeFile(rep.Sections[toolPrefix+n])
		if err != nil {
			return nil, fmt.Errorf("tool output %s: %v", n, err)
		}
		if err := writeAtomic(filepath.Join(dir, n), func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// toolFiles are the initramfs's files of the tools phase: tmigr, built for
// the guest, and the kernel's config; none without a tmigr (cli "").
func toolFiles(cli string, k kernel) (map[string][]byte, error) {
	if cli == "" {
		return nil, nil
	}
	bin, err := os.ReadFile(cli)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{"bin/tmigr": bin}
	if k.Config != "" {
		cfg, err := os.ReadFile(k.Config)
		if err != nil {
			return nil, err
		}
		files[strings.TrimPrefix(toolsConfigPath, "/")] = cfg
	}
	return files, nil
}
