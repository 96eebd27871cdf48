package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/metrics"
	"github.com/tmigr/tmigr/watch"
)

func init() {
	register("exporter", "export this machine's timer migration as Prometheus metrics", runExporter)
}

const exporterUsage = `usage: tmigr exporter [--listen ADDR] [--by-function] [--hrtimers] [--input FILE]

Follows this machine's timer events live, through a tracefs instance of
its own (root needed; as tmigr record and tmigr top do), and serves them as
Prometheus metrics at http://ADDR/metrics, for fleets: timer expirations by
CPU, own or foreign (another CPU's timer run through the timer-migration
hierarchy); the foreign ones on isolated and nohz_full CPUs
(tmigr_foreign_timer_on_isolated_total, the one to alert on); each CPU's
class, whether it is in the hierarchy and the groups it is migrator of;
trace events read and lost; tmigr_build_info. --by-function adds the
foreign timers by owner CPU and callback (a label per callback: many
series). --input serves the counts of a recording instead, once read.

It stops at Ctrl-C or SIGTERM, removing its tracefs instance. Exit
status: 0 then; 2 for bad flags or input; 1 when it cannot listen or the
trace cannot be read.

flags:
`

func runExporter(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("tmigr exporter", exporterUsage, stdout, stderr)
	listen := fs.String("listen", ":9724", "the address to serve /metrics on")
	byFunction := fs.Bool("by-function", false, "export foreign timers by owner CPU and callback (many series)")
	lo := liveOptions{Recorder: "tmigr exporter"}
	lo.flags(fs)
	input := fs.String("input", "", "serve the counts of a recording instead of this machine's")
	fs.files("input")
	fs.operands("", 0, 0, completion{})
	if rc, ok := fs.parse(args); !ok {
		return rc
	}
	ctx, stop := signalContext()
	defer stop()
	// Listen first: a taken port is refused before tracing starts.
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "tmigr exporter: %v\n", err)
		return 1
	}
	defer ln.Close()
	st, err := openStream(*input, lo)
	if err != nil {
		return fs.fail(err)
	}
	defer st.Close()
	w := st.watcher
	if w == nil {
		// A recording: its machine line makes the Watcher.
		ev, nextErr := st.reader.Next()
		if nextErr != nil && nextErr != io.EOF {
			return fs.fail(nextErr)
		}
		if w, err = watch.ForRecording(st.reader.Header()); err != nil {
			return fs.fail(err)
		}
		if nextErr == nil {
			w.Observe(&ev)
		}
	}
	var mu sync.Mutex
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		metrics.New(w, exporterOptions(&mu, *byFunction, w.Machine().Machine)),
	)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(rw, r)
			return
		}
		fmt.Fprint(rw, `<html><head><title>tmigr exporter</title></head><body><h1>tmigr exporter</h1><p><a href="/metrics">Metrics</a></p></body></html>`)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stderr, "tmigr exporter: serving http://%s/metrics\n", ln.Addr())

	f := &watch.Follow{Watcher: w, Reader: st.reader, Live: st.live, Lock: &mu, Lost: st.lost}
	followErr := make(chan error, 1)
	go func() { followErr <- f.Run(ctx) }()
	rc := 0
	select {
	case err := <-followErr:
		if err != nil {
			fmt.Fprintf(stderr, "tmigr exporter: %v\n", err)
			rc = 1
			break
		}
		if st.live {
			break
		}
		// A recording was read: serve its counts until stopped.
		select {
		case <-ctx.Done():
		case err := <-served:
			fmt.Fprintf(stderr, "tmigr exporter: %v\n", err)
			rc = 1
		}
	case err := <-served:
		fmt.Fprintf(stderr, "tmigr exporter: %v\n", err)
		rc = 1
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "tmigr exporter: %v\n", err)
	}
	return rc
}

// exporterOptions labels tmigr_build_info with the build and the machine's
// kernel.
func exporterOptions(mu *sync.Mutex, byFunction bool, m *ftrace.Machine) metrics.Options {
	o := metrics.Options{Lock: mu, ByFunction: byFunction, Version: "(unknown)", Revision: "unknown", GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		o.Version = bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				o.Revision = s.Value
			}
		}
	}
	if m != nil {
		o.Kernel = m.Kernel
	}
	return o
}
