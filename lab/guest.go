package lab

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const (
	modulePath   = "github.com/tmigr/tmigr"
	guestPackage = "./cmd/tmigr-guest"
	// cliPackage is tmigr itself, which a guest with Spec.ToolsDir runs.
	cliPackage = "./cmd/tmigr"
)

// guestEnv builds the guest for the guest: Linux on x86-64, statically
// linked (no cgo), whatever the host.
var guestEnv = []string{"GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0"}

// guest returns the guest program: the given binary, or one built from the
// module's source. Builds are cached under a hash of everything that goes
// into them (the Go version, the source files of every package the
// program imports outside the standard library, go.mod and go.sum), so a
// recording rebuilds the guest only when its source changed.
func (f *fetcher) guest(ctx context.Context) (string, error) {
	if p := f.host.Guest; p != "" {
		if err := checkStatic(p); err != nil {
			return "", err
		}
		return p, nil
	}
	return f.program(ctx, guestPackage, "tmigr-guest")
}

// PrepareGuest finds or builds the guest program a recording with host h
// would use, and returns its path. A campaign calls it before its first
// draw so that a setup error (run outside a checkout, no go command)
// stops it at once instead of failing every draw the same way.
func PrepareGuest(ctx context.Context, h Host, progress io.Writer) (string, error) {
	f, err := newFetcher(h, newProgress(progress).printf)
	if err != nil {
		return "", err
	}
	return f.guest(ctx)
}

// cli returns tmigr itself built for the guest, cached as the guest
// program is.
func (f *fetcher) cli(ctx context.Context) (string, error) {
	return f.program(ctx, cliPackage, "tmigr")
}

// program builds the package pkg of the module for the guest, as name.
func (f *fetcher) program(ctx context.Context, pkg, name string) (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building the guest program needs the go command on PATH (or give a built tmigr-guest)")
	}
	root, err := f.moduleRoot(ctx, gobin)
	if err != nil {
		return "", err
	}
	key, err := guestKey(ctx, gobin, root, pkg)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(f.host.CacheDir, "guest", key, name)
	if checkStatic(dst) == nil {
		return dst, nil
	}
	f.log("building %s for the guest (%s, %s)", name, pkg, strings.Join(guestEnv, " "))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	tmp := dst + ".tmp"
	cmd := exec.CommandContext(ctx, gobin, "build", "-buildvcs=false", "-trimpath", "-ldflags=-s -w", "-o", tmp, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), guestEnv...)
	if err := f.runLogged(ctx, cmd); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("building %s for the guest: %v", name, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", err
	}
	return dst, nil
}

// moduleRoot returns the directory of the tmigr module: the given one or
// the working directory's.
func (f *fetcher) moduleRoot(ctx context.Context, gobin string) (string, error) {
	root := f.host.SourceDir
	if root == "" {
		out, err := exec.CommandContext(ctx, gobin, "env", "GOMOD").Output()
		if err != nil {
			return "", fmt.Errorf("go env GOMOD: %v", err)
		}
		mod := strings.TrimSpace(string(out))
		if mod == "" || mod == os.DevNull {
			return "", fmt.Errorf("the guest program is built from tmigr's source, and the working directory is outside any Go module: run from the tmigr checkout, or give its directory or a built tmigr-guest")
		}
		root = filepath.Dir(mod)
	}
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("the tmigr source: %v", err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			if strings.Trim(strings.TrimSpace(m), `"`) == modulePath {
				return root, nil
			}
			break
		}
	}
	return "", fmt.Errorf("%s is not the %s module; run from the tmigr checkout, or give its directory or a built tmigr-guest", root, modulePath)
}

// guestKey hashes what the build of pkg for the guest depends on.
func guestKey(ctx context.Context, gobin, root, pkg string) (string, error) {
	h := sha256.New()
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, gobin, args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), guestEnv...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return string(out), nil
	}
	ver, err := run("version")
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "%s%s %s\n", ver, strings.Join(guestEnv, " "), pkg)
	deps, err := run("list", "-buildvcs=false", "-deps", "-f", `{{if not .Standard}}{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{end}}`, pkg)
	if err != nil {
		return "", err
	}
	files := []string{filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum")}
	for _, l := range strings.Split(strings.TrimSpace(deps), "\n") {
		fields := strings.Fields(l)
		if len(fields) == 0 {
			continue
		}
		for _, name := range fields[1:] {
			files = append(files, filepath.Join(fields[0], name))
		}
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil && !(os.IsNotExist(err) && strings.HasSuffix(p, "go.sum")) {
			return "", fmt.Errorf("hashing the guest's source: %v", err)
		}
		rel, rerr := filepath.Rel(root, p)
		if rerr != nil || strings.HasPrefix(rel, "..") {
			rel = p // outside the module: the module cache, versioned path
		}
		fmt.Fprintf(h, "%s %d\n", rel, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
