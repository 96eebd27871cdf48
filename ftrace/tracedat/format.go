package tracedat

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Format is an event's format file, as the kernel writes
// events/SYSTEM/EVENT/format:
//
//	name: timer_start
//	ID: 466
//	format:
//		field:unsigned short common_type;	offset:0;	size:2;	signed:0;
//		...
//		field:void * timer;	offset:8;	size:8;	signed:0;
//
//	print fmt: "timer=%p ...", REC->timer, ...
type Format struct {
	System, Name string
	ID           int
	Fields       []Field // the common fields first, as listed
	PrintFmt     string  // the text after "print fmt: "

	f *File
}

// Field is one field of an event record.
type Field struct {
	Name   string
	Type   string // "unsigned long", "void *", "char[16]", "__data_loc char[]"
	Offset int
	Size   int
	Signed bool
	// Array is the element count of a fixed array ("char comm[16]": 16),
	// 0 for a scalar; Dynamic marks __data_loc / __rel_loc fields, whose
	// 32-bit value gives the data's offset (low 16 bits) and length.
	Array   int
	Dynamic bool
	Rel     bool // __rel_loc: the offset counts from the end of the field
}

// maxFields bounds the fields of one event (the widest events have a few
// dozen).
const maxFields = 512

// ParseFormat parses one format file of the given system.
func ParseFormat(system, text string) (*Format, error) {
	ev := &Format{System: system, ID: -1}
	inFormat := false
	for line := range strings.SplitSeq(text, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "name:"):
			ev.Name = strings.TrimSpace(t[len("name:"):])
		case strings.HasPrefix(t, "ID:"):
			id, err := strconv.Atoi(strings.TrimSpace(t[len("ID:"):]))
			if err != nil || id < 0 || id > 0xffff {
				return nil, fmt.Errorf("%s/%s: ID %q is not a 16-bit number", system, ev.Name, t[len("ID:"):])
			}
			ev.ID = id
		case t == "format:":
			inFormat = true
		case strings.HasPrefix(t, "field:") && inFormat:
			fl, err := parseField(t)
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %w", system, ev.Name, err)
			}
			if len(ev.Fields) == maxFields {
				return nil, fmt.Errorf("%s/%s: more than %d fields", system, ev.Name, maxFields)
			}
			ev.Fields = append(ev.Fields, fl)
		case strings.HasPrefix(t, "print fmt:"):
			ev.PrintFmt = strings.TrimSpace(t[len("print fmt:"):])
		}
	}
	switch {
	case ev.Name == "":
		return nil, fmt.Errorf("system %s: a format without \"name:\"", system)
	case ev.ID < 0:
		return nil, fmt.Errorf("%s/%s: no \"ID:\"", system, ev.Name)
	}
	return ev, nil
}

// parseField parses "field:unsigned long expires;	offset:24;	size:8;	signed:0;".
func parseField(line string) (Field, error) {
	var fl Field
	parts := strings.Split(line, ";")
	decl := strings.TrimSpace(strings.TrimPrefix(parts[0], "field:"))
	if decl == "" {
		return fl, fmt.Errorf("field line %q has no declaration", clip(line))
	}
	seen := map[string]bool{}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(strings.TrimSpace(p), ":")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 || n > 1<<20 {
			return fl, fmt.Errorf("field %q: %s %q is not a small number", decl, k, v)
		}
		switch k {
		case "offset":
			fl.Offset = n
		case "size":
			fl.Size = n
		case "signed":
			fl.Signed = n != 0
		default:
			continue
		}
		seen[k] = true
	}
	if !seen["offset"] || !seen["size"] {
		return fl, fmt.Errorf("field %q lacks its offset or size", decl)
	}
	// The name is the last identifier of the declaration, before any
	// array bounds: "char comm[16]", "__data_loc char[] name".
	d := decl
	if i := strings.LastIndexByte(d, '['); i >= 0 && strings.HasSuffix(d, "]") {
		n, err := strconv.Atoi(strings.TrimSpace(d[i+1 : len(d)-1]))
		if err == nil && n >= 0 {
			fl.Array = n
		}
		d = strings.TrimSpace(d[:i])
	}
	j := len(d)
	for j > 0 && isIdent(d[j-1]) {
		j--
	}
	fl.Name = d[j:]
	fl.Type = strings.TrimSpace(d[:j])
	if fl.Name == "" || fl.Type == "" {
		return fl, fmt.Errorf("field %q: no type and name", decl)
	}
	if fl.Array > 0 {
		fl.Type += "[" + strconv.Itoa(fl.Array) + "]"
	}
	switch {
	case strings.HasPrefix(fl.Type, "__data_loc"):
		fl.Dynamic = true
	case strings.HasPrefix(fl.Type, "__rel_loc"):
		fl.Dynamic, fl.Rel = true, true
	}
	return fl, nil
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Field returns the named field, nil if the event has none.
func (e *Format) Field(name string) *Field {
	for i := range e.Fields {
		if e.Fields[i].Name == name {
			return &e.Fields[i]
		}
	}
	return nil
}

// errShort is a record too short for one of its fields.
var errShort = errors.New("record shorter than the field")

// Uint reads a scalar field of a record's data, sign-extended to 64 bits
// when the field is signed.
func (e *Format) Uint(data []byte, fl *Field) (uint64, error) {
	if fl.Offset+fl.Size > len(data) {
		return 0, fmt.Errorf("%s/%s: field %s at %d+%d: %w of %d bytes", e.System, e.Name, fl.Name, fl.Offset, fl.Size, errShort, len(data))
	}
	b := data[fl.Offset : fl.Offset+fl.Size]
	var v uint64
	o := e.f.order
	switch fl.Size {
	case 1:
		v = uint64(b[0])
		if fl.Signed {
			v = uint64(int64(int8(b[0])))
		}
	case 2:
		v = uint64(o.Uint16(b))
		if fl.Signed {
			v = uint64(int64(int16(v)))
		}
	case 4:
		v = uint64(o.Uint32(b))
		if fl.Signed {
			v = uint64(int64(int32(v)))
		}
	case 8:
		v = o.Uint64(b)
	default:
		return 0, fmt.Errorf("%s/%s: field %s of %d bytes is no scalar", e.System, e.Name, fl.Name, fl.Size)
	}
	return v, nil
}

// String reads a char array or a __data_loc string field, up to its first
// NUL.
func (e *Format) String(data []byte, fl *Field) (string, error) {
	var b []byte
	switch {
	case fl.Dynamic:
		if fl.Offset+4 > len(data) {
			return "", fmt.Errorf("%s/%s: field %s: %w", e.System, e.Name, fl.Name, errShort)
		}
		loc := e.f.order.Uint32(data[fl.Offset:])
		off, n := int(loc&0xffff), int(loc>>16)
		if fl.Rel {
			off += fl.Offset + fl.Size
		}
		if off+n > len(data) {
			return "", fmt.Errorf("%s/%s: field %s: its %d bytes at %d lie beyond the record's %d", e.System, e.Name, fl.Name, n, off, len(data))
		}
		b = data[off : off+n]
	default:
		if fl.Offset+fl.Size > len(data) {
			return "", fmt.Errorf("%s/%s: field %s: %w", e.System, e.Name, fl.Name, errShort)
		}
		b = data[fl.Offset : fl.Offset+fl.Size]
	}
	for i, c := range b {
		if c == 0 {
			b = b[:i]
			break
		}
	}
	return string(b), nil
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// Common is the part of every record the kernel fills in (struct
// trace_entry).
type Common struct {
	Type         int   // the event ID
	Flags        uint8 // TRACE_FLAG_* bits (irqs off, need-resched, hardirq, softirq, ...)
	PreemptCount uint8 // preempt depth in the low nibble, migrate-disable depth in the high one
	PID          int32
}

// Common decodes a record's common fields and returns them with the
// record's format (nil, with an error, for an ID the file has no format
// of).
func (f *File) Common(data []byte) (Common, *Format, error) {
	var c Common
	if len(data) < 2 {
		return c, nil, fmt.Errorf("a record of %d bytes holds no event ID", len(data))
	}
	c.Type = int(f.order.Uint16(data))
	e := f.events[c.Type]
	if e == nil {
		return c, nil, fmt.Errorf("event ID %d: the file carries no format for it", c.Type)
	}
	for _, name := range []string{"common_flags", "common_preempt_count", "common_pid"} {
		fl := e.Field(name)
		if fl == nil {
			continue
		}
		v, err := e.Uint(data, fl)
		if err != nil {
			return c, e, err
		}
		switch name {
		case "common_flags":
			c.Flags = uint8(v)
		case "common_preempt_count":
			c.PreemptCount = uint8(v)
		default:
			c.PID = int32(v)
		}
	}
	return c, e, nil
}
