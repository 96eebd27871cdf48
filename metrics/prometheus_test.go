package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/watch"
)

// TestPrometheusScrapes runs a real Prometheus server (Debian's
// prometheus package; .ci/run installs it) against the collector of a
// recording and asks its query API for the series: the metrics are what
// a Prometheus server accepts and stores, not only what promlint likes.
func TestPrometheusScrapes(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("skipped: no prometheus on PATH (Debian package prometheus)")
	}
	rd, c, err := ftrace.Open("../testdata/traces/vm40-1node-isol-busy.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := &watch.Follow{Reader: rd}
	if err := f.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	reg := prometheus.NewRegistry()
	reg.MustRegister(New(f.Watcher, Options{Lock: &mu, Version: "test", Kernel: "6.12.118"}))
	exp := listen(t)
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(exp)
	defer srv.Close()

	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: tmigr\n    static_configs:\n      - targets: [%q]\n", exp.Addr().String())), 0o644); err != nil {
		t.Fatal(err)
	}
	pl := listen(t)
	promAddr := pl.Addr().String()
	pl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	totals, _, _ := f.Watcher.Totals()
	want := fmt.Sprint(totals[8].Foreign)
	query := `tmigr_foreign_timer_on_isolated_total{job="tmigr",cpu="8"}`
	for {
		got, err := promQuery(ctx, promAddr, query)
		if err == nil && got == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Prometheus never returned %s = %s (last: %q, %v); its log:\n%s", query, want, got, err, log.String())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// promQuery asks Prometheus's query API for an instant vector of one
// sample and returns its value.
func promQuery(ctx context.Context, addr, query string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/api/v1/query?query="+url.QueryEscape(query), nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return "", err
	}
	if r.Status != "success" || len(r.Data.Result) != 1 {
		return "", fmt.Errorf("status %s, %d series", r.Status, len(r.Data.Result))
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	return s, nil
}

// TestDeployConfig: the scrape configuration and alert rules under deploy/
// are what Prometheus's promtool accepts, and the rules name metrics the
// collector exports.
func TestDeployConfig(t *testing.T) {
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("skipped: no promtool on PATH (Debian package prometheus)")
	}
	for _, args := range [][]string{
		{"check", "config", "../deploy/prometheus/prometheus.yml"},
		{"check", "rules", "../deploy/prometheus/tmigr-rules.yml"},
	} {
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	rules, err := os.ReadFile("../deploy/prometheus/tmigr-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	descs := make(chan *prometheus.Desc, 32)
	New(nil, Options{Lock: &sync.Mutex{}}).Describe(descs)
	close(descs)
	var names []string
	for d := range descs {
		names = append(names, d.String())
	}
	for _, name := range []string{"tmigr_foreign_timer_on_isolated_total", "tmigr_trace_lost_events_total"} {
		if !strings.Contains(string(rules), name) || !strings.Contains(strings.Join(names, " "), `"`+name+`"`) {
			t.Errorf("%s: not in both the rules and the collector", name)
		}
	}
}
