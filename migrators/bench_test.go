package migrators_test

import (
	"testing"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/kernel"
	"github.com/tmigr/tmigr/migrators"
)

// BenchmarkPredict predicts the simulator's largest machine, 8192 CPUs on
// 64 nodes with every CPU but the first of each node busy, as tmigr sim
// does before each run (docs/performance.md, the simulator's late pass).
//
//	go test -run '^$' -bench Predict ./migrators
func BenchmarkPredict(b *testing.B) {
	const n, nodes = 8192, 64
	nodeOf := make([]int, n)
	var busy cpumask.Mask
	for c := range nodeOf {
		nodeOf[c] = c / (n / nodes)
		if c%(n/nodes) != 0 {
			busy.Set(c)
		}
	}
	r, err := kernel.ParseRelease("6.19")
	if err != nil {
		b.Fatal(err)
	}
	s := migrators.Setup{NodeOf: nodeOf, Nodes: nodes, Model: kernel.For(r.Version), Busy: busy, Timekeeper: -1}
	for b.Loop() {
		p, err := migrators.Predict(s)
		if err != nil {
			b.Fatal(err)
		}
		if p.Handlers.Empty() {
			b.Fatal("no handlers")
		}
	}
}
