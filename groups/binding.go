package groups

import (
	"fmt"
	"maps"
	"slices"

	"github.com/tmigr/tmigr/hier"
)

// Binding is a one-to-one map between the kernel's group pointers and the
// groups of a Tree. The zero value is empty and ready to use.
type Binding struct {
	toID  map[uint64]hier.GroupID
	toPtr map[hier.GroupID]uint64
}

// Conflict is a binding the earlier ones rule out: Ptr named Was, or ID
// was named by WasPtr.
type Conflict struct {
	Ptr    uint64
	ID     hier.GroupID
	Was    hier.GroupID // the group Ptr named before; hier.NoGroup if none
	WasPtr uint64       // the pointer that named ID before; 0 if none
}

func (c *Conflict) Error() string {
	if c.Was != hier.NoGroup {
		return fmt.Sprintf("group %016x names %v here, %v earlier", c.Ptr, c.ID, c.Was)
	}
	return fmt.Sprintf("%v is group %016x here, %016x earlier", c.ID, c.Ptr, c.WasPtr)
}

// Bind records that ptr names id. A pointer that named another group is
// refused first, then a group that another pointer named; the binding is
// then unchanged.
func (b *Binding) Bind(ptr uint64, id hier.GroupID) *Conflict {
	if b.toID == nil {
		b.toID, b.toPtr = map[uint64]hier.GroupID{}, map[hier.GroupID]uint64{}
	}
	if old, ok := b.toID[ptr]; ok {
		if old != id {
			return &Conflict{Ptr: ptr, ID: id, Was: old}
		}
		// Bound already: the two maps are only ever set together, so
		// id names ptr too (a replay binds every line's pointers).
		return nil
	}
	if old, ok := b.toPtr[id]; ok && old != ptr {
		return &Conflict{Ptr: ptr, ID: id, Was: hier.NoGroup, WasPtr: old}
	}
	b.toID[ptr], b.toPtr[id] = id, ptr
	return nil
}

// ID returns the group ptr names.
func (b *Binding) ID(ptr uint64) (hier.GroupID, bool) {
	id, ok := b.toID[ptr]
	return id, ok
}

// Ptr returns the pointer that names id.
func (b *Binding) Ptr(id hier.GroupID) (uint64, bool) {
	p, ok := b.toPtr[id]
	return p, ok
}

// Reset forgets every binding.
func (b *Binding) Reset() {
	clear(b.toID)
	clear(b.toPtr)
}

// Pointers returns the bound pointers in increasing order.
func (b *Binding) Pointers() []uint64 {
	return slices.Sorted(maps.Keys(b.toID))
}
