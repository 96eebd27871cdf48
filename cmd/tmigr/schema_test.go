package main

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/invopop/jsonschema"
	validator "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tmigr/tmigr/lab"
	"github.com/tmigr/tmigr/report"
	"github.com/tmigr/tmigr/sim/sweep"
)

// The contract of the --json outputs (docs/json.md): a JSON Schema per
// output, generated from its Go type and committed under docs/schemas;
// every output the tests produce is validated against the committed
// schema, so that a type changed without its schema, or an output that
// strays from its type (a null where the schema has an array), fails.

// updateSchemas rewrites docs/schemas from the Go types, as does
// TMIGR_UPDATE_SCHEMAS=1.
var updateSchemas = flag.Bool("update-schemas", false, "rewrite docs/schemas from the Go types of the --json outputs")

// schemaDir is where the schemas are committed, from this package.
const schemaDir = "../../docs/schemas"

// jsonOutput is one output with its schema.
type jsonOutput struct {
	name    string // the schema is docs/schemas/NAME.schema.json
	title   string // the command that prints it
	version int    // its schema_version
	lines   bool   // one JSON value per line (JSON Lines)
	types   []any  // the Go type of a value; several: each value is one of them
}

// jsonOutputs are every --json output of tmigr.
var jsonOutputs = []jsonOutput{
	{"replay", "tmigr replay --json", schemaVersion, false, []any{replayOutput{}}},
	{"explain", "tmigr explain --json", schemaVersion, false, []any{explainOutput{}}},
	{"sim", "tmigr sim --json", schemaVersion, false, []any{simOutput{}}},
	{"sim-dry-run", "tmigr sim --dry-run --json", schemaVersion, false, []any{dryRun{}}},
	{"sim-sweep", "tmigr sim --seeds/--grid/--shard (and --summarize): a run line or a summary line", sweep.SchemaVersion, true, []any{sweep.Line{}, sweep.SummaryLine{}}},
	{"repro", "tmigr repro --json", schemaVersion, false, []any{reproOutput{}}},
	{"host", "tmigr host --json", schemaVersion, false, []any{hostOutput{}}},
	{"topo", "tmigr topo --json", schemaVersion, false, []any{topoOutput{}}},
	{"top", "tmigr top --json: one line per period", schemaVersion, true, []any{topOutput{}}},
	{"lab-compare", "tmigr lab compare --json", schemaVersion, false, []any{labCompareOutput{}}},
	{"lab-campaign", "tmigr lab campaign: the summary (--json FILE, default DIR/summary.json)", lab.CampaignSchema, false, []any{lab.Summary{}}},
	{"live-lateness", "tmigr live lateness --json", schemaVersion, false, []any{liveLatenessOutput{}}},
	{"live-isolation", "tmigr live isolation --json", schemaVersion, false, []any{liveIsolationOutput{}}},
	{"live-idle", "tmigr live idle --json", schemaVersion, false, []any{liveIdleOutput{}}},
	{"live-softhard", "tmigr live softhard --json", schemaVersion, false, []any{liveSoftHardOutput{}}},
	{"live-wakeups", "tmigr live wakeups --json", schemaVersion, false, []any{liveWakeupsOutput{}}},
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// selfMarshaled are the schemas of the types that write their own JSON.
var selfMarshaled = map[reflect.Type]*jsonschema.Schema{
	// {"12": 3, ...}: a count per CPU number.
	reflect.TypeFor[report.CPUCounts](): {
		Type:                 "object",
		PatternProperties:    map[string]*jsonschema.Schema{"^[0-9]+$": {Type: "integer", Minimum: "0"}},
		AdditionalProperties: jsonschema.FalseSchema,
	},
	// A sweep line's run: the sim output (less its wall time).
	reflect.TypeFor[json.RawMessage](): {Ref: "sim.schema.json"},
	// {"policy": "pull", ...}: the settings of a sweep's configuration.
	reflect.TypeFor[sweep.Params](): {
		Type:                 "object",
		AdditionalProperties: &jsonschema.Schema{Type: "string"},
	},
}

// generateSchema returns the schema of o, from its Go types.
func generateSchema(o jsonOutput) ([]byte, error) {
	var unknown []string
	r := &jsonschema.Reflector{
		Anonymous:      true,
		ExpandedStruct: len(o.types) == 1,
		// Definitions by package and name: several packages have a
		// JSON or a CPU type.
		Namer: func(t reflect.Type) string {
			if t.Name() == "" || t.PkgPath() == "" {
				return ""
			}
			name := path.Base(t.PkgPath()) + "." + t.Name()
			return strings.NewReplacer("[", "_", "]", "", "/", "_", "*", "").Replace(name)
		},
		Mapper: func(t reflect.Type) *jsonschema.Schema {
			if s, ok := selfMarshaled[t]; ok {
				return s
			}
			switch {
			case t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler):
				unknown = append(unknown, t.String())
			case t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler):
				return &jsonschema.Schema{Type: "string"}
			}
			return nil
		},
	}
	var s *jsonschema.Schema
	if len(o.types) == 1 {
		s = r.Reflect(o.types[0])
	} else {
		s = &jsonschema.Schema{Version: jsonschema.Version, Definitions: jsonschema.Definitions{}}
		for _, v := range o.types {
			one := r.Reflect(v)
			for k, d := range one.Definitions {
				s.Definitions[k] = d
			}
			s.OneOf = append(s.OneOf, &jsonschema.Schema{Ref: one.Ref})
		}
	}
	if len(o.types) == 1 {
		markNullable(s, reflect.TypeOf(o.types[0]), s.Definitions, map[*jsonschema.Schema]bool{})
	} else {
		for i, v := range o.types {
			markNullable(s.OneOf[i], reflect.TypeOf(v), s.Definitions, map[*jsonschema.Schema]bool{})
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%s: no schema for %s, which marshal themselves: add them to selfMarshaled", o.name, strings.Join(unknown, ", "))
	}
	s.Title = o.title
	s.Description = fmt.Sprintf("schema_version %d; fields are only added within a version (docs/json.md).", o.version)
	// Every value carries its version, at the top.
	objects := []*jsonschema.Schema{s}
	if len(o.types) > 1 {
		objects = nil
		for _, one := range s.OneOf {
			objects = append(objects, s.Definitions[strings.TrimPrefix(one.Ref, "#/$defs/")])
		}
	}
	for _, obj := range objects {
		p, ok := obj.Properties.Get("schema_version")
		if !ok || !slices.Contains(obj.Required, "schema_version") {
			return nil, fmt.Errorf("%s: no required schema_version field", o.name)
		}
		p.Const = o.version
	}
	b, err := json.MarshalIndent(s, "", "  ")
	return append(b, '\n'), err
}

// markNullable lets null be the value of every pointer field without
// omitempty in the schema s of t, as encoding/json writes a nil one: the
// outputs say "not known" so (explain's time of a step, host's worst
// latency when nothing was simulated). A nil slice or map, also written
// null, is not allowed: an output has [] or {} there, or omits it.
func markNullable(s *jsonschema.Schema, t reflect.Type, defs jsonschema.Definitions, seen map[*jsonschema.Schema]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s == nil {
		return
	}
	if s.Ref != "" {
		s = defs[strings.TrimPrefix(s.Ref, "#/$defs/")]
		if s == nil {
			return // another file's
		}
	}
	if seen[s] {
		return
	}
	seen[s] = true
	if _, ok := selfMarshaled[t]; ok || t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		markNullable(s.Items, t.Elem(), defs, seen)
	case reflect.Map:
		if s.AdditionalProperties != nil {
			markNullable(s.AdditionalProperties, t.Elem(), defs, seen)
		}
		for _, p := range s.PatternProperties {
			markNullable(p, t.Elem(), defs, seen)
		}
	case reflect.Struct:
		markFields(s, t, defs, seen)
	}
}

// markFields is markNullable over the fields of struct t, whose schema is
// s, the fields of its embedded structs included.
func markFields(s *jsonschema.Schema, t reflect.Type, defs jsonschema.Definitions, seen map[*jsonschema.Schema]bool) {
	if s.Properties == nil {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("json"), ",")
		if tag[0] == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && tag[0] == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				markFields(s, ft, defs, seen) // inlined
				continue
			}
		}
		name := cmp.Or(tag[0], f.Name)
		p, ok := s.Properties.Get(name)
		if !ok {
			continue
		}
		markNullable(p, f.Type, defs, seen)
		if f.Type.Kind() == reflect.Pointer && !slices.Contains(tag[1:], "omitempty") && !slices.Contains(tag[1:], "omitzero") {
			s.Properties.Set(name, &jsonschema.Schema{OneOf: []*jsonschema.Schema{p, {Type: "null"}}})
		}
	}
}

// TestSchemasCurrent fails when a committed schema is not the one its Go
// type generates (go test ./cmd/tmigr -run TestSchemasCurrent
// -update-schemas rewrites them), or when docs/schemas holds a schema of
// no output.
func TestSchemasCurrent(t *testing.T) {
	update := *updateSchemas || os.Getenv("TMIGR_UPDATE_SCHEMAS") == "1"
	want := map[string]bool{}
	for _, o := range jsonOutputs {
		file := filepath.Join(schemaDir, o.name+".schema.json")
		want[filepath.Base(file)] = true
		b, err := generateSchema(o)
		if err != nil {
			t.Fatal(err)
		}
		if update {
			if err := os.MkdirAll(schemaDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := writeFileAtomic(file, b); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("%v (go test ./cmd/tmigr -run TestSchemasCurrent -update-schemas writes it)", err)
			continue
		}
		if !bytes.Equal(old, b) {
			t.Errorf("%s is stale: its Go type has changed (go test ./cmd/tmigr -run TestSchemasCurrent -update-schemas rewrites it; a field removed, renamed or retyped raises the output's schema_version)", file)
		}
	}
	files, err := filepath.Glob(filepath.Join(schemaDir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !want[filepath.Base(f)] {
			t.Errorf("%s is the schema of no output", f)
		}
	}
}

// schemaBase is the URL the schemas are compiled under: one refers to
// another by its file name.
const schemaBase = "https://github.com/tmigr/tmigr/docs/schemas/"

var (
	compiledMu sync.Mutex
	compiler   *validator.Compiler
	compiled   = map[string]*validator.Schema{}
)

// committedSchema compiles docs/schemas/NAME.schema.json once, beside
// every other committed schema.
func committedSchema(t testing.TB, name string) (*validator.Schema, jsonOutput) {
	t.Helper()
	i := slices.IndexFunc(jsonOutputs, func(o jsonOutput) bool { return o.name == name })
	if i < 0 {
		t.Fatalf("no --json output called %q", name)
	}
	compiledMu.Lock()
	defer compiledMu.Unlock()
	if s := compiled[name]; s != nil {
		return s, jsonOutputs[i]
	}
	if compiler == nil {
		c := validator.NewCompiler()
		for _, o := range jsonOutputs {
			file := filepath.Join(schemaDir, o.name+".schema.json")
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := validator.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if err := c.AddResource(schemaBase+o.name+".schema.json", doc); err != nil {
				t.Fatal(err)
			}
		}
		compiler = c
	}
	s, err := compiler.Compile(schemaBase + name + ".schema.json")
	if err != nil {
		t.Fatalf("%s.schema.json: %v", name, err)
	}
	compiled[name] = s
	return s, jsonOutputs[i]
}

// checkSchema validates out, an output of the --json output called name,
// against its committed schema: the whole of it, or each line of a JSON
// Lines output.
func checkSchema(t testing.TB, name, out string) {
	t.Helper()
	s, o := committedSchema(t, name)
	docs := []string{out}
	if o.lines {
		docs = strings.Split(strings.TrimRight(out, "\n"), "\n")
	}
	if strings.TrimSpace(out) == "" {
		t.Errorf("%s: no JSON to check", name)
		return
	}
	for i, d := range docs {
		v, err := validator.UnmarshalJSON(strings.NewReader(d))
		if err != nil {
			t.Errorf("%s: value %d: %v", name, i+1, err)
			continue
		}
		if err := s.Validate(v); err != nil {
			t.Errorf("%s: value %d does not match %s.schema.json: %v", name, i+1, name, err)
		}
	}
}

// The schemas hold: an output without its version, with a field of no
// type or a field of the wrong type is refused.
func TestCheckSchemaRefuses(t *testing.T) {
	s, _ := committedSchema(t, "sim-dry-run")
	for _, bad := range []string{
		`{"valid": true, "cpus": 8, "simulated_s": 1, "estimate_s": 0.1}`,
		`{"schema_version": 2, "valid": true, "cpus": 8, "simulated_s": 1, "estimate_s": 0.1}`,
		`{"schema_version": 1, "valid": true, "cpus": 8, "simulated_s": 1, "estimate_s": 0.1, "extra": 1}`,
		`{"schema_version": 1, "valid": true, "cpus": "8", "simulated_s": 1, "estimate_s": 0.1}`,
	} {
		v, err := validator.UnmarshalJSON(strings.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		if s.Validate(v) == nil {
			t.Errorf("%s: valid", bad)
		}
	}
	// A sweep's run line holds a sim run: its schema is followed there.
	sw, _ := committedSchema(t, "sim-sweep")
	for _, c := range []struct {
		line  string
		valid bool
	}{
		{`{"schema_version": 1, "index": 0, "of": 1, "seed": 1, "params": {}, "run": {}}`, false},
		{`{"schema_version": 1, "summary": {"params": {"policy": "pull"}, "runs": 1, "cpus": []}}`, true},
		{`{"schema_version": 1, "summary": {"params": {"policy": 1}, "runs": 1, "cpus": []}}`, false},
	} {
		v, err := validator.UnmarshalJSON(strings.NewReader(c.line))
		if err != nil {
			t.Fatal(err)
		}
		if err := sw.Validate(v); (err == nil) != c.valid {
			t.Errorf("%s: %v, want valid %v", c.line, err, c.valid)
		}
	}
	var out bytes.Buffer
	if code := run([]string{"sim", "--cpus", "8", "--workload", "idle", "--dry-run", "--json"}, &out, new(bytes.Buffer)); code != 0 {
		t.Fatalf("sim --dry-run --json: exit %d", code)
	}
	checkSchema(t, "sim-dry-run", out.String())
}
