package conformance

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestScratchRows(t *testing.T) {
	if os.Getenv("ROWS") == "" {
		t.Skip()
	}
	for _, sh := range Matrix() {
		if !strings.Contains(sh.Name, "@") {
			continue
		}
		if _, err := os.Stat("../testdata/traces/" + sh.File); err != nil {
			continue
		}
		fmt.Printf("| %s | `%s` |\n", sh.File, sh.Flags())
	}
}
