// Package tracedat reads the binary trace.dat files that trace-cmd record
// and trace-cmd extract write (file format versions 6 and 7), without
// libtracecmd: the file's header, the event format descriptions it carries,
// the kernel's symbol table and saved command lines, and the per-CPU
// ring-buffer pages, decoded record by record.
//
// # The file
//
// Version 6 is one sequence of blocks:
//
//	"\x17\x08\x44tracing" "6\0"  endian(1) long-size(1) page-size(4)
//	"header_page\0" size(8) text        the ring buffer's page header layout
//	"header_event\0" size(8) text       the record header layout
//	count(4) { size(8) format }         ftrace's own event formats
//	systems(4) { name\0 count(4) { size(8) format } }
//	size(4) kallsyms                    /proc/kallsyms
//	size(4) printk formats
//	size(8) saved cmdlines              "pid comm" lines
//	cpus(4)
//	"options  \0" { id(2) size(4) data } id 0     (optional)
//	"flyrecord\0" cpus x { offset(8) size(8) }    per-CPU ring-buffer pages
//
// Version 7 keeps the first line, then names a compression algorithm
// ("none", "zstd", "zlib") and the offset of the first options section; every
// other block is a section (id(2) flags(2) description(4) size(8), then its
// data, compressed when flags&1) that an option points to. The BUFFER
// option of each trace instance gives its clock, its page size and, per
// CPU, where its pages lie; compressed page data is a list of chunks, each
// compressed on its own (about ten pages).
//
// All numbers are in the file's endianness. Sizes read from the file are
// checked against what the file holds before anything is allocated, and
// decompressed sizes are bounded (MaxSection, MaxChunk), so a corrupt or
// hostile file gets an *Error naming the offset, never a panic or a giant
// allocation.
//
// # Ring-buffer pages
//
// A page starts with the header header_page describes: a 64-bit timestamp,
// then "commit", a kernel long whose low 27 bits are the bytes of data that
// follow and whose bit 31 says the kernel lost events before this page (bit
// 30: and stored their number, a long, right after the data). Records
// follow, each behind a 32-bit word of a 5-bit type_len and a 27-bit time
// delta:
//
//	type_len 1..28   data of type_len*4 bytes follows
//	type_len 0       a 32-bit length word (including itself), then the data
//	29 padding       a 32-bit length of the padding that follows; skipped
//	30 time extend   32 more bits of delta: delta = word<<27 | delta
//	31 time stamp    an absolute time, its top 5 bits from the page's
//
// A record's time is the page's timestamp plus every delta up to it
// (absolute stamps reset it). Records iterates one buffer's CPUs merged in
// time order, the lowest CPU first on a tie, as trace-cmd report does.
//
// # Event data
//
// Each record's data starts with the common fields (common_type, the event
// ID; common_flags; common_preempt_count; common_pid). The event's format
// gives every field's offset, size and signedness: Format.Uint and
// Format.String read one field of a record, and Common the common ones.
// What the fields mean, and how the kernel prints them, is the reader's
// business (package ftrace reads the timer events' fields by name).
package tracedat
