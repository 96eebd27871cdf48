package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestReproErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"repro"}, "usage: tmigr repro NAME"},
		{[]string{"repro", "isolatoin"}, `unknown experiment "isolatoin"`},
		{[]string{"repro", "panic", "--duration", "-1"}, "--duration"},
		{[]string{"repro", "panic", "--duration", "soon"}, "bad duration"},
		{[]string{"repro", "panic", "extra"}, `unexpected argument "extra"`},
		{[]string{"repro", "panic", "--bogus"}, "flag provided but not defined"},
	} {
		code, out, errs := runCmd(tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
	if code, _, errs := runCmd("repro", "panic", "--short", "--quiet", "--set", "cost.nope=1"); code != 1 || !strings.Contains(errs, "cost.nope") {
		t.Errorf("bad --set: exit %d, %q", code, errs)
	}
}

func TestReproPanic(t *testing.T) {
	code, out, errs := runCmd("repro", "panic", "--short", "--quiet", "--check")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"panic (seed post 002)", "busy-waits", "halts between interrupts", "1964x"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The flags may come before the name too.
	code, js, errs := runCmd("repro", "--short", "--quiet", "--json", "panic")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	checkSchema(t, "repro", js)
	var v struct {
		Experiment string `json:"experiment"`
		Runs       []struct {
			Policy   string                     `json:"policy"`
			Workload map[string]json.RawMessage `json:"workload"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	if v.Experiment != "panic" || len(v.Runs) != 2 || v.Runs[0].Workload["panic"] == nil {
		t.Errorf("JSON %s", js)
	}
}
