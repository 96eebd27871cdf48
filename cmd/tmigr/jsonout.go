package main

import (
	"github.com/tmigr/tmigr/conformance"
	"github.com/tmigr/tmigr/explain"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/host"
	"github.com/tmigr/tmigr/live"
	"github.com/tmigr/tmigr/migrators"
	"github.com/tmigr/tmigr/replay"
	"github.com/tmigr/tmigr/report"
	"github.com/tmigr/tmigr/sim/repro"
	"github.com/tmigr/tmigr/watch"
)

// The --json outputs. Each is a named type whose first field is
// schema_version, so that a program reading it can tell which contract
// it holds, and the test that writes docs/schemas generates each
// output's JSON Schema from the type itself (see docs/json.md).
//
// Within one schema version fields are only ever added; removing or
// renaming a field, or changing its type or meaning, raises that
// output's version.

// schemaVersion is the version of the contract of the --json outputs
// defined here. An output whose contract breaks gets a constant of its
// own.
const schemaVersion = 1

// replayOutput is tmigr replay --json.
type replayOutput struct {
	SchemaVersion int              `json:"schema_version"`
	Files         []*replay.Result `json:"files"`
}

// explainOutput is tmigr explain --json.
type explainOutput struct {
	SchemaVersion int            `json:"schema_version"`
	Files         []explain.JSON `json:"files"`
}

// labCompareOutput is tmigr lab compare --json.
type labCompareOutput struct {
	SchemaVersion int                       `json:"schema_version"`
	Files         []*conformance.Comparison `json:"files"`
}

// simOutput is tmigr sim --json: the run's report and the prediction.
type simOutput struct {
	SchemaVersion int `json:"schema_version"`
	*report.Run
	Prediction *migrators.Timeline `json:"prediction"`
}

// dryRun is tmigr sim --dry-run --json.
type dryRun struct {
	SchemaVersion int     `json:"schema_version"`
	Valid         bool    `json:"valid"`
	CPUs          int     `json:"cpus"`
	SimulatedS    float64 `json:"simulated_s"`
	EstimateS     float64 `json:"estimate_s"`
}

// reproOutput is tmigr repro --json.
type reproOutput struct {
	SchemaVersion int `json:"schema_version"`
	repro.JSON
}

// hostOutput is tmigr host --json.
type hostOutput struct {
	SchemaVersion int `json:"schema_version"`
	*host.JSON
}

// topoOutput is tmigr topo --json.
type topoOutput struct {
	SchemaVersion int `json:"schema_version"`
	hier.Topology
}

// The outputs of tmigr live --json, one per experiment.
type (
	liveLatenessOutput struct {
		SchemaVersion int `json:"schema_version"`
		*live.LatenessResult
	}
	liveIsolationOutput struct {
		SchemaVersion int `json:"schema_version"`
		*live.IsolationResult
	}
	liveIdleOutput struct {
		SchemaVersion int `json:"schema_version"`
		*live.IdleResult
	}
	liveSoftHardOutput struct {
		SchemaVersion int `json:"schema_version"`
		*live.SoftHardResult
	}
	liveWakeupsOutput struct {
		SchemaVersion int `json:"schema_version"`
		*live.WakeupsResult
	}
)

// topOutput is one line of tmigr top --json.
type topOutput struct {
	SchemaVersion int `json:"schema_version"`
	watch.Period
}
