package host

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Config is a kernel build configuration (.config): the options set and
// the ones explicitly not set.
type Config struct {
	// Source is the file it came from ("boot/config-6.12.118",
	// "proc/config.gz").
	Source string
	values map[string]string
}

// maxConfig bounds a configuration file: a distribution's is about 300 KiB.
const maxConfig = 8 << 20

// ParseConfig reads a kernel configuration: "CONFIG_NAME=value" lines,
// "# CONFIG_NAME is not set" lines, comments and blank lines. Any other
// line is an error naming it, so that a file that is not a kernel config
// is not taken for one that sets nothing.
func ParseConfig(b []byte) (*Config, error) {
	if len(b) > maxConfig {
		return nil, fmt.Errorf("kernel config of %d bytes: larger than any kernel's", len(b))
	}
	c := &Config{values: map[string]string{}}
	n := 0
	for line := range strings.SplitSeq(string(b), "\n") {
		n++
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# "); ok {
			if name, ok := strings.CutSuffix(rest, " is not set"); ok && validConfigName(name) {
				c.values[name] = "n"
			}
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok || !validConfigName(name) {
			return nil, fmt.Errorf("kernel config line %d: %q is not CONFIG_NAME=value", n, clip(line))
		}
		if _, dup := c.values[name]; dup && c.values[name] != "n" {
			return nil, fmt.Errorf("kernel config line %d: %s set twice", n, name)
		}
		c.values[name] = value
	}
	if len(c.values) == 0 {
		return nil, fmt.Errorf("kernel config: no CONFIG_ option in it")
	}
	return c, nil
}

// ParseConfigGz reads a gzip'd kernel configuration (/proc/config.gz).
func ParseConfigGz(b []byte) (*Config, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("kernel config: not gzip data: %v", err)
	}
	data, err := io.ReadAll(io.LimitReader(zr, maxConfig+1))
	if err != nil {
		return nil, fmt.Errorf("kernel config: %v", err)
	}
	return ParseConfig(data)
}

func validConfigName(s string) bool {
	rest, ok := strings.CutPrefix(s, "CONFIG_")
	if !ok || rest == "" {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Value returns the option's value ("y", "m", "250", "\"string\"") and
// whether the file mentions it; an option "is not set" reads "n".
func (c *Config) Value(name string) (string, bool) {
	v, ok := c.values["CONFIG_"+name]
	return v, ok
}

// Enabled reports whether the option is y or m.
func (c *Config) Enabled(name string) bool {
	v, _ := c.Value(name)
	return v == "y" || v == "m"
}

// Disabled reports whether the file says the option "is not set" (or =n).
// An option it does not mention is not disabled by this test: the
// configs of real kernels mention every visible option.
func (c *Config) Disabled(name string) bool {
	v, ok := c.Value(name)
	return ok && v == "n"
}

// Int returns an integer option's value.
func (c *Config) Int(name string) (int, bool) {
	v, ok := c.Value(name)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, false
	}
	return n, true
}
