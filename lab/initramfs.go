package lab

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"sort"
	"strings"
)

// applets are the busybox commands /init uses, linked into /bin.
var applets = []string{
	"base64", "cat", "dmesg", "echo", "gzip", "kill", "mkdir", "mount",
	"poweroff", "sh", "sleep", "taskset", "uname",
	// The tools phase (tools.go).
	"ifconfig", "ip", "ln", "ls", "wget",
}

// buildInitramfs returns the gzip-compressed newc archive the guest boots
// from: busybox and its applet links, the guest program, /dev/console (the
// kernel opens it for init's standard streams before anything is mounted)
// and /init. The same inputs give the same bytes.
//
// extra are more files, by path without the leading slash ("bin/tmigr"),
// in their directories, which must be among those made here or "boot".
func buildInitramfs(busybox, guest []byte, init string, extra map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	c := newCpioWriter(zw)
	for _, d := range []string{"bin", "dev", "proc", "run", "sys", "tmp"} {
		c.Dir(d, 0o755)
	}
	c.CharDev("dev/console", 0o600, 5, 1)
	c.File("bin/busybox", 0o755, busybox)
	for _, a := range applets {
		c.Symlink("bin/"+a, "busybox")
	}
	c.File(strings.TrimPrefix(guestBinary, "/"), 0o755, guest)
	if len(extra) > 0 {
		c.Dir("boot", 0o755)
		paths := make([]string, 0, len(extra))
		for p := range extra {
			paths = append(paths, p)
		}
		sort.Strings(paths) // the same inputs, the same bytes
		for _, p := range paths {
			c.File(p, 0o755, extra[p])
		}
	}
	c.File("init", 0o755, []byte(init))
	if err := c.Close(); err != nil {
		return nil, fmt.Errorf("initramfs: %v", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("initramfs: %v", err)
	}
	return buf.Bytes(), nil
}
