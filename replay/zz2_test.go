package replay

import (
	"fmt"
	"strings"
	"testing"
)

func TestZZSynth(t *testing.T) {
	s := synthShapes[4]
	y := newSynth(t, s, 5)
	y.boot(t)
	y.run(300)
	_, text := y.trace(t)
	lines := strings.Split(text, "\n")
	fmt.Println(lines[0])
	for i := 10495; i < 10508; i++ {
		fmt.Println(i+1, lines[i])
	}
}
