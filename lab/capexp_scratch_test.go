package lab

import (
	"os"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpumask"
)

// Throwaway: the arm64 capacity experiment (not committed).
var armSpec = Spec{CPUs: 4, Busy: cpumask.MustParse("2-3"), Sleepers: cpumask.MustParse("1"), Duration: 2 * time.Second}

const armNonce = "a1b2c3d4e5f60718"

func TestArmInitrd(t *testing.T) {
	if os.Getenv("ARM") == "" {
		t.Skip()
	}
	s := armSpec.withDefaults()
	bb, _ := os.ReadFile("/tmp/arm/x/usr/bin/busybox")
	g, _ := os.ReadFile("/tmp/arm/tmigr-guest")
	rd, err := buildInitramfs(bb, g, initScript(s.plan(armNonce)))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile("/tmp/arm/initrd.gz", rd, 0o644)
}

func TestArmAssemble(t *testing.T) {
	if os.Getenv("ARM") == "" {
		t.Skip()
	}
	s := armSpec.withDefaults()
	log, _ := os.ReadFile(os.Getenv("ARMLOG"))
	text, err := assemble(&s, log, armNonce, kernel{HZ: 250})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(os.Getenv("ARMOUT"), text, 0o644)
}
