package cmdline

import (
	"fmt"

	"github.com/tmigr/tmigr/cpumask"
)

// Isolation is the CPU isolation a kernel command line sets up, as
// kernel/sched/isolation.c derives it at boot: the sets of CPUs taken out of
// each housekeeping type.
//
//	isolcpus=1-7            Domain = 1-7 (no flags means "domain")
//	isolcpus=domain,1-7     Domain = 1-7
//	isolcpus=nohz,1-7       NohzFull = 1-7 (and not Domain)
//	isolcpus=nohz,domain,managed_irq,1-7
//	                        all three
//	nohz_full=1-7           NohzFull = 1-7
//
// Domain CPUs are the ones the timer migration hierarchy leaves out (unless
// they are also nohz_full, or the nohz timekeeper); NohzFull CPUs stay in it.
type Isolation struct {
	Domain     cpumask.Mask // not HK_TYPE_DOMAIN: isolcpus= / isolcpus=domain,
	NohzFull   cpumask.Mask // not HK_TYPE_KERNEL_NOISE: nohz_full= / isolcpus=nohz,
	ManagedIRQ cpumask.Mask // not HK_TYPE_MANAGED_IRQ: isolcpus=managed_irq, (ignored by tmigr)
	// Warnings are what the kernel logs when it skips or ignores part of
	// the command line, in its words ("isolcpus: Skipped unknown flag
	// foo"). The sets above already account for them: an ignored parameter
	// isolates nothing, as on the real machine.
	Warnings []string
}

// Housekeeping types, as bits.
const (
	hkDomain = 1 << iota
	hkManagedIRQ
	hkKernelNoise
	hkTypes = 3
)

// ParseIsolation derives the isolation of a machine of cpus CPUs from a
// kernel command line. The parameters act in command-line order, as the
// kernel's __setup handlers do (a second isolcpus=/nohz_full= must agree
// with the first on the types they share, and the two together must leave a
// CPU that is neither nohz_full nor domain-isolated, else the later one is
// ignored); a list that covers every CPU gives CPU 0, the boot CPU, back to
// housekeeping. Parameter names match with '-' and '_' alike; "--" ends the
// kernel's part. The error is for a machine size out of range or a command
// line that cannot be split (see Parse); everything the kernel would only
// warn about is in Warnings.
func ParseIsolation(cmdline string, cpus int) (Isolation, error) {
	if cpus < 1 || cpus > cpumask.MaxCPUs {
		return Isolation{}, fmt.Errorf("isolation: machine size %d outside 1..%d", cpus, cpumask.MaxCPUs)
	}
	c, err := Parse(cmdline)
	if err != nil {
		return Isolation{}, fmt.Errorf("isolation: %w", err)
	}
	st := hkState{cpus: cpus, all: cpumask.Range(0, cpus-1)}
	for _, p := range c.Params {
		if !p.HasValue {
			continue
		}
		if p.Is("nohz_full") {
			st.setup(p.Value, hkKernelNoise)
		} else if p.Is("isolcpus") {
			st.isolcpus(p.Value)
		}
	}
	var iso Isolation
	for t, dst := range []*cpumask.Mask{&iso.Domain, &iso.ManagedIRQ, &iso.NohzFull} {
		if st.flags&(1<<t) != 0 {
			*dst = st.all.AndNot(st.hk[t])
		}
	}
	iso.Warnings = st.warnings
	return iso, nil
}

// hkState is the kernel's struct housekeeping during boot.
type hkState struct {
	cpus     int
	all      cpumask.Mask // possible = present CPUs
	flags    int
	hk       [hkTypes]cpumask.Mask // housekeeping CPUs of each type set in flags
	warnings []string
}

func (st *hkState) warn(format string, args ...any) {
	st.warnings = append(st.warnings, fmt.Sprintf(format, args...))
}

// isolcpus is housekeeping_isolcpus_setup: the flags in front of the
// list ("nohz,", "domain,", "managed_irq,"); an unknown flag is skipped, an
// invalid one voids the parameter. No flag means domain.
func (st *hkState) isolcpus(s string) {
	v := ParseIsolcpus(s)
	for _, u := range v.Unknown {
		st.warn("isolcpus: Skipped unknown flag %s", u)
	}
	if v.Invalid != "" {
		st.warn("isolcpus: Invalid flag %s", v.Invalid)
		return
	}
	flags := 0
	for _, f := range v.Flags {
		switch f {
		case "nohz":
			flags |= hkKernelNoise
		case "domain":
			flags |= hkDomain
		case "managed_irq":
			flags |= hkManagedIRQ
		}
	}
	if flags == 0 {
		flags = hkDomain
	}
	st.setup(v.List, flags)
}

// setup is housekeeping_setup: isolate the CPUs of list from the types in
// flags.
func (st *hkState) setup(list string, flags int) {
	non, err := cpumask.ParseFor(list, st.cpus)
	if err != nil {
		st.warn("Housekeeping: nohz_full= or isolcpus= incorrect CPU range")
		return
	}
	staging := st.all.AndNot(non)
	if staging.Empty() {
		// Keep the boot CPU (CPU 0 here) for housekeeping.
		staging.Set(0)
		non.Clear(0)
		if st.flags == 0 {
			st.warn("Housekeeping: must include one present CPU, using boot CPU:0")
		}
	}
	if non.Empty() {
		return
	}
	if st.flags == 0 {
		for t := range hkTypes {
			if flags&(1<<t) != 0 {
				st.hk[t] = staging
			}
		}
	} else {
		for t := range hkTypes {
			if flags&st.flags&(1<<t) != 0 && !staging.Equal(st.hk[t]) {
				st.warn("Housekeeping: nohz_full= must match isolcpus=")
				return
			}
		}
		// nohz_full and isolcpus=domain together must leave a CPU in
		// neither, for the timer migration hierarchy's sake.
		prev := st.flags & (hkKernelNoise | hkDomain)
		if prev != 0 && flags&(hkKernelNoise|hkDomain) != 0 {
			t := 0
			for prev&(1<<t) == 0 {
				t++
			}
			if !staging.Intersects(&st.hk[t]) {
				st.warn("Housekeeping: must include one present CPU neither in nohz_full= nor in isolcpus=domain, ignoring setting %s", list)
				return
			}
		}
		for t := range hkTypes {
			if flags&^st.flags&(1<<t) != 0 {
				st.hk[t] = staging
			}
		}
	}
	st.flags |= flags
}
