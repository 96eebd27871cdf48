package replay

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/ftrace"
)

func TestZZSynth(t *testing.T) {
	s := synthShapes[0]
	y := newSynth(t, s, 40)
	y.boot(t)
	y.run(300)
	tr, _ := y.trace(t)
	at := int(float64(len(tr.Events)) * 0.7)
	cpu := tr.Events[at].CPU
	ev := renumber(dropAfter(tr.Events, at, cpu, 14, true))
	var buf bytes.Buffer
	ftrace.WriteTrace(&buf, ftrace.Header{}, ev)
	lines := strings.Split(buf.String(), "\n")
	for i := 855; i < 895 && i < len(ev); i++ {
		fmt.Println(i, ev[i].Line, ev[i].CPU, ev[i].Data)
	}
	_ = lines
	lt := &Trace{Header: tr.Header, Events: ev}
	s = withAt(s, lt)
	opts, _ := s.hierOptions()
	r, _ := newReplayer(lt, s, opts)
	r.debug = func(line int, event, why, kernel, model string) {
		if line > 850 && line < 895 {
			fmt.Printf("%d %s why=%q kernel=%q model=%q\n", line, event, why, kernel, model)
		}
	}
	fmt.Println("lostWin", r.lostWin)
	r.run()
}
