package lab

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strings"
)

// applets are the busybox commands /init uses, linked into /bin.
var applets = []string{
	"base64", "cat", "dmesg", "echo", "gzip", "kill", "mkdir", "mount",
	"poweroff", "sh", "sleep", "taskset", "uname",
}

// buildInitramfs returns the gzip-compressed newc archive the guest boots
// from: busybox and its applet links, the guest program, /dev/console (the
// kernel opens it for init's standard streams before anything is mounted)
// and /init. The same inputs give the same bytes.
func buildInitramfs(busybox, guest []byte, init string) ([]byte, error) {
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
	c.File("init", 0o755, []byte(init))
	if err := c.Close(); err != nil {
		return nil, fmt.Errorf("initramfs: %v", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("initramfs: %v", err)
	}
	return buf.Bytes(), nil
}
