// Package cpumask is a fixed-size set of CPU numbers and the kernel's cpulist
// syntax ("0-3,8,10-11", "0-31:2/4") in both directions.
//
// A Mask is a value: 8192 bits in an array, so copying one, passing it and
// returning it never allocates. The operations mirror the kernel's cpumask_*
// helpers that the hierarchy and isolation code need (and, or, andnot, test,
// set, clear, first, next, weight, equal), with the same meaning.
package cpumask

import (
	"math/bits"
	"strconv"
	"strings"
)

// MaxCPUs is the number of CPUs a Mask can hold, the kernel's NR_CPUS on the
// largest common configurations (CONFIG_MAXSMP).
const MaxCPUs = 8192

const words = MaxCPUs / 64

// Mask is a set of CPUs numbered 0 to MaxCPUs-1. The zero value is empty.
type Mask struct {
	w [words]uint64
}

// Of returns the set of the given CPUs. It panics on a CPU outside
// [0, MaxCPUs): it is meant for constants in code and tests; use Parse for
// input.
func Of(cpus ...int) Mask {
	var m Mask
	for _, c := range cpus {
		m.Set(c)
	}
	return m
}

// Range returns the set of CPUs lo..hi inclusive (empty if hi < lo).
func Range(lo, hi int) Mask {
	var m Mask
	for c := lo; c <= hi; c++ {
		m.Set(c)
	}
	return m
}

func check(cpu int) {
	if cpu < 0 || cpu >= MaxCPUs {
		panic("cpumask: CPU " + strconv.Itoa(cpu) + " out of range")
	}
}

// Set adds cpu to the set.
func (m *Mask) Set(cpu int) {
	check(cpu)
	m.w[cpu>>6] |= 1 << (uint(cpu) & 63)
}

// Clear removes cpu from the set.
func (m *Mask) Clear(cpu int) {
	check(cpu)
	m.w[cpu>>6] &^= 1 << (uint(cpu) & 63)
}

// Test reports whether cpu is in the set. A CPU outside the representable
// range is never in it.
func (m *Mask) Test(cpu int) bool {
	if cpu < 0 || cpu >= MaxCPUs {
		return false
	}
	return m.w[cpu>>6]&(1<<(uint(cpu)&63)) != 0
}

// And returns m ∩ o.
func (m Mask) And(o Mask) Mask {
	for i := range m.w {
		m.w[i] &= o.w[i]
	}
	return m
}

// Or returns m ∪ o.
func (m Mask) Or(o Mask) Mask {
	for i := range m.w {
		m.w[i] |= o.w[i]
	}
	return m
}

// AndNot returns m \ o (the kernel's cpumask_andnot).
func (m Mask) AndNot(o Mask) Mask {
	for i := range m.w {
		m.w[i] &^= o.w[i]
	}
	return m
}

// Equal reports whether m and o hold the same CPUs.
func (m Mask) Equal(o Mask) bool { return m.w == o.w }

// Empty reports whether the set holds no CPU.
func (m *Mask) Empty() bool {
	for _, w := range m.w {
		if w != 0 {
			return false
		}
	}
	return true
}

// Subset reports whether every CPU of m is in o.
func (m *Mask) Subset(o *Mask) bool {
	for i, w := range m.w {
		if w&^o.w[i] != 0 {
			return false
		}
	}
	return true
}

// Intersects reports whether m and o share a CPU.
func (m *Mask) Intersects(o *Mask) bool {
	for i, w := range m.w {
		if w&o.w[i] != 0 {
			return true
		}
	}
	return false
}

// Weight returns the number of CPUs in the set.
func (m *Mask) Weight() int {
	n := 0
	for _, w := range m.w {
		n += bits.OnesCount64(w)
	}
	return n
}

// First returns the lowest CPU in the set, or -1 if it is empty.
func (m *Mask) First() int { return m.Next(-1) }

// Next returns the lowest CPU in the set that is greater than cpu, or -1 if
// there is none (the kernel's cpumask_next). Next(-1) is First.
//
//	for c := m.First(); c >= 0; c = m.Next(c) { ... }
func (m *Mask) Next(cpu int) int {
	c := cpu + 1
	if c < 0 {
		c = 0
	}
	if c >= MaxCPUs {
		return -1
	}
	i := c >> 6
	w := m.w[i] >> (uint(c) & 63)
	if w != 0 {
		return c + bits.TrailingZeros64(w)
	}
	for i++; i < words; i++ {
		if m.w[i] != 0 {
			return i<<6 + bits.TrailingZeros64(m.w[i])
		}
	}
	return -1
}

// Last returns the highest CPU in the set, or -1 if it is empty.
func (m *Mask) Last() int {
	for i := words - 1; i >= 0; i-- {
		if m.w[i] != 0 {
			return i<<6 + 63 - bits.LeadingZeros64(m.w[i])
		}
	}
	return -1
}

// CPUs returns the CPUs of the set in ascending order.
func (m *Mask) CPUs() []int {
	out := make([]int, 0, m.Weight())
	for c := m.First(); c >= 0; c = m.Next(c) {
		out = append(out, c)
	}
	return out
}

// String formats the set in the kernel's canonical cpulist form, as
// /sys/devices/system/cpu/*/cpulist and "%*pbl" print it, without the
// trailing newline: ascending, runs of two or more consecutive CPUs as
// "a-b", "" for the empty set.
func (m Mask) String() string {
	var b strings.Builder
	for c := m.First(); c >= 0; {
		end := c
		for end+1 < MaxCPUs && m.Test(end+1) {
			end++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(c))
		if end > c {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(end))
		}
		c = m.Next(end)
	}
	return b.String()
}

// MarshalText implements encoding.TextMarshaler with the canonical cpulist.
func (m Mask) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with Parse.
func (m *Mask) UnmarshalText(b []byte) error {
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	*m = p
	return nil
}
