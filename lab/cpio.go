package lab

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// cpioWriter writes the "newc" cpio format (magic 070701) that the kernel
// unpacks an initramfs from (Documentation/driver-api/early-userspace/
// buffer-format.rst). It is a page of code: no well-kept Go library writes
// just this format without pulling in a general archive framework (and
// go.mod takes no new dependencies), and an initramfs needs four kinds of
// entries only: directories, regular files, symlinks and device nodes.
//
// Every entry is owned by root and has mtime 0, and inode numbers count up
// from 1, so that the same entries always give the same bytes.
//
// An entry is a 110-byte header of "070701" and thirteen 8-digit hex fields,
// the NUL-terminated name padded to a multiple of 4 (counting from the
// header's start), then the data padded to a multiple of 4. The archive ends
// with the entry "TRAILER!!!".
type cpioWriter struct {
	w      io.Writer
	ino    uint32
	err    error
	closed bool
	seen   map[string]bool
}

const (
	cpioMagic   = "070701"
	cpioTrailer = "TRAILER!!!"
	cpioHdrLen  = 110

	modeDir  = 0o040000
	modeFile = 0o100000
	modeLink = 0o120000
	modeChr  = 0o020000
)

func newCpioWriter(w io.Writer) *cpioWriter {
	return &cpioWriter{w: w, seen: map[string]bool{}}
}

// Dir adds a directory; perm holds the permission bits (0o755).
func (c *cpioWriter) Dir(name string, perm uint32) error {
	return c.entry(name, modeDir|perm&0o7777, 2, 0, 0, nil)
}

// File adds a regular file.
func (c *cpioWriter) File(name string, perm uint32, data []byte) error {
	return c.entry(name, modeFile|perm&0o7777, 1, 0, 0, data)
}

// Symlink adds a symbolic link to target.
func (c *cpioWriter) Symlink(name, target string) error {
	if target == "" || strings.IndexByte(target, 0) >= 0 {
		return fmt.Errorf("cpio: symlink %q: bad target %q", name, target)
	}
	return c.entry(name, modeLink|0o777, 1, 0, 0, []byte(target))
}

// CharDev adds a character device node.
func (c *cpioWriter) CharDev(name string, perm uint32, major, minor uint32) error {
	return c.entry(name, modeChr|perm&0o7777, 1, major, minor, nil)
}

// Close writes the trailer. It does not close the underlying writer.
func (c *cpioWriter) Close() error {
	if c.closed {
		if c.err == nil {
			return errors.New("cpio: closed twice")
		}
		return c.err
	}
	if c.err == nil {
		c.err = c.write(cpioTrailer, 0, 1, 0, 0, nil)
	}
	c.closed = true
	return c.err
}

// entry adds one entry. Its first error sticks: every later call and Close
// return it, so a caller may check Close alone.
func (c *cpioWriter) entry(name string, mode, nlink, rmajor, rminor uint32, data []byte) error {
	if c.err != nil {
		return c.err
	}
	switch {
	case c.closed:
		c.err = errors.New("cpio: write after Close")
	case checkCpioName(name) != nil:
		c.err = checkCpioName(name)
	case c.seen[name]:
		c.err = fmt.Errorf("cpio: %q added twice", name)
	case int64(len(data)) > 0xffffffff:
		c.err = fmt.Errorf("cpio: %q: %d bytes, the format's limit is 4 GiB", name, len(data))
	default:
		c.seen[name] = true
		c.err = c.write(name, mode, nlink, rmajor, rminor, data)
	}
	return c.err
}

func (c *cpioWriter) write(name string, mode, nlink, rmajor, rminor uint32, data []byte) error {
	c.ino++
	fields := [13]uint32{
		c.ino,                 // c_ino
		mode,                  // c_mode
		0,                     // c_uid
		0,                     // c_gid
		nlink,                 // c_nlink
		0,                     // c_mtime
		uint32(len(data)),     // c_filesize
		0,                     // c_devmajor
		0,                     // c_devminor
		rmajor,                // c_rdevmajor
		rminor,                // c_rdevminor
		uint32(len(name) + 1), // c_namesize, with the NUL
		0,                     // c_check
	}
	b := make([]byte, 0, cpioHdrLen+len(name)+4+len(data)+3)
	b = append(b, cpioMagic...)
	for _, f := range fields {
		b = fmt.Appendf(b, "%08x", f)
	}
	b = append(b, name...)
	b = append(b, 0)
	b = pad4(b)
	b = append(b, data...)
	b = pad4(b)
	_, err := c.w.Write(b)
	return err
}

// pad4 pads b with NULs to a multiple of 4 bytes. Each entry starts
// aligned, so padding the entry's own bytes pads the archive.
func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// checkCpioName accepts the relative, clean paths the kernel's unpacker
// expects ("bin/sh", not "/bin/sh" or "bin/../sh").
func checkCpioName(name string) error {
	bad := func(why string) error { return fmt.Errorf("cpio: name %q: %s", name, why) }
	switch {
	case name == "":
		return bad("empty")
	case name == cpioTrailer:
		return bad("is the trailer's")
	case strings.HasPrefix(name, "/"):
		return bad("absolute")
	case strings.HasSuffix(name, "/"):
		return bad("ends in a slash")
	case strings.IndexByte(name, 0) >= 0:
		return bad("holds a NUL")
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part == "." || part == ".." {
			return bad("not a clean relative path")
		}
	}
	return nil
}
