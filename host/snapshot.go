package host

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// The files read, relative to the machine's root.
const (
	fileRelease        = "proc/sys/kernel/osrelease"
	fileCmdline        = "proc/cmdline"
	fileTimerMigration = "proc/sys/kernel/timer_migration"
	fileRealtime       = "sys/kernel/realtime"
	fileConfigGz       = "proc/config.gz"
	fileBootConfig     = "boot/config-" // + release
	dirCPU             = "sys/devices/system/cpu"
	dirNode            = "sys/devices/system/node"
	dirCgroup          = "sys/fs/cgroup"
)

var cpuFiles = []string{"possible", "present", "online", "isolated", "nohz_full"}

// Limits on what a snapshot holds, so that a wrong --root or a hostile
// tarball cannot exhaust memory.
const (
	maxFile      = 64 << 10 // any file but the config
	maxTotal     = 64 << 20 // all files together
	maxFiles     = 200000
	maxCgroupDir = 100000 // cgroup directories walked
)

// Snapshot is the files of a machine that tmigr host reads, by path
// relative to the machine's root ("proc/cmdline"), exactly as read. Read
// takes them from a live machine or a copy; ReadTar from a tarball that
// SaveTar wrote; Save and SaveTar write them so that another machine's
// setup can be read with --root.
type Snapshot struct {
	Files map[string][]byte
	// Notes say what could not be read and why (permission denied, a
	// cgroup tree too large); absent files are not noted.
	Notes []string
	size  int
}

func newSnapshot() *Snapshot { return &Snapshot{Files: map[string][]byte{}} }

// Wanted reports whether a path is one that tmigr host reads: the fixed
// files, cpuN/cpu_capacity, nodeN/cpulist, and the cpuset files under
// sys/fs/cgroup.
func Wanted(p string) bool {
	switch p {
	case fileRelease, fileCmdline, fileTimerMigration, fileRealtime, fileConfigGz, dirNode + "/possible":
		return true
	}
	if rest, ok := strings.CutPrefix(p, fileBootConfig); ok {
		return rest != "" && !strings.Contains(rest, "/")
	}
	if rest, ok := strings.CutPrefix(p, dirCPU+"/"); ok {
		for _, f := range cpuFiles {
			if rest == f {
				return true
			}
		}
		d, f, ok := strings.Cut(rest, "/")
		return ok && f == "cpu_capacity" && numbered(d, "cpu")
	}
	if rest, ok := strings.CutPrefix(p, dirNode+"/"); ok {
		d, f, ok := strings.Cut(rest, "/")
		return ok && f == "cpulist" && numbered(d, "node")
	}
	if rest, ok := strings.CutPrefix(p, dirCgroup+"/"); ok {
		switch path.Base(rest) {
		case "cgroup.controllers", "cpuset.cpus.partition", "cpuset.cpus.effective", "cpuset.cpus.isolated",
			"cpuset.cpus", "cpuset.cpu_exclusive", "cpuset.sched_load_balance":
			return true
		case "cpus", "cpu_exclusive", "sched_load_balance":
			// cgroup v1 mounted with noprefix, under a cpuset hierarchy.
			top, _, _ := strings.Cut(rest, "/")
			return isCpusetV1Mount(top)
		}
	}
	return false
}

// numbered reports whether s is prefix followed by a decimal number.
func numbered(s, prefix string) bool {
	n, ok := strings.CutPrefix(s, prefix)
	if !ok || n == "" || len(n) > 5 {
		return false
	}
	for i := 0; i < len(n); i++ {
		if n[i] < '0' || n[i] > '9' {
			return false
		}
	}
	return true
}

// isCpusetV1Mount reports whether a directory of sys/fs/cgroup is a cgroup
// v1 hierarchy with the cpuset controller ("cpuset", "cpu,cpuset").
func isCpusetV1Mount(name string) bool {
	for c := range strings.SplitSeq(name, ",") {
		if c == "cpuset" {
			return true
		}
	}
	return false
}

func (s *Snapshot) add(p string, b []byte) error {
	if len(s.Files) >= maxFiles {
		return fmt.Errorf("snapshot: more than %d files", maxFiles)
	}
	if s.size+len(b) > maxTotal {
		return fmt.Errorf("snapshot: more than %d MiB", maxTotal>>20)
	}
	s.size += len(b)
	s.Files[p] = b
	return nil
}

func (s *Snapshot) notef(format string, args ...any) {
	s.Notes = append(s.Notes, fmt.Sprintf(format, args...))
}

// Read collects the files tmigr host reads from fsys, a machine's root
// directory (os.DirFS("/") for this machine). A file that does not exist is
// skipped: a container may lack NUMA sysfs or cgroup v2, an older kernel
// some files. A file that exists but cannot be read is noted. The error is
// for a snapshot too large to be a machine's.
func Read(fsys fs.FS) (*Snapshot, error) {
	s := newSnapshot()
	read := func(p string, limit int) error {
		b, err := readCapped(fsys, p, limit)
		switch {
		case err == nil:
			return s.add(p, b)
		case errors.Is(err, fs.ErrNotExist):
			return nil
		default:
			s.notef("%s: %v", p, err)
			return nil
		}
	}
	for _, p := range []string{fileRelease, fileCmdline, fileTimerMigration, fileRealtime, dirNode + "/possible"} {
		if err := read(p, maxFile); err != nil {
			return nil, err
		}
	}
	for _, f := range cpuFiles {
		if err := read(dirCPU+"/"+f, maxFile); err != nil {
			return nil, err
		}
	}
	if err := read(fileConfigGz, maxConfig); err != nil {
		return nil, err
	}
	if rel, ok := s.Files[fileRelease]; ok {
		if r := strings.TrimSpace(string(rel)); r != "" && !strings.ContainsAny(r, "/\x00") {
			if err := read(fileBootConfig+r, maxConfig); err != nil {
				return nil, err
			}
		}
	}
	for _, d := range []struct{ dir, prefix, file string }{{dirCPU, "cpu", "cpu_capacity"}, {dirNode, "node", "cpulist"}} {
		ents, err := fs.ReadDir(fsys, d.dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				s.notef("%s: %v", d.dir, err)
			}
			continue
		}
		for _, e := range ents {
			if numbered(e.Name(), d.prefix) {
				if err := read(d.dir+"/"+e.Name()+"/"+d.file, maxFile); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := readCgroups(fsys, s, read); err != nil {
		return nil, err
	}
	return s, nil
}

// readCgroups collects the cpuset files: of the cgroup v2 hierarchy at
// sys/fs/cgroup (or sys/fs/cgroup/unified on a hybrid system) every
// cpuset.cpus.partition with the cpuset.cpus.effective beside it, and the
// root's cpuset.cpus.isolated; of every cgroup v1 cpuset hierarchy each
// cpuset's cpus, cpu_exclusive and sched_load_balance.
func readCgroups(fsys fs.FS, s *Snapshot, read func(string, int) error) error {
	exists := func(p string) bool { _, err := fs.Stat(fsys, p); return err == nil }
	dirs := 0
	walk := func(root string, visit func(dir string) error) error {
		return fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p != root {
					s.notef("%s: %v", p, err)
				}
				return fs.SkipDir
			}
			if !d.IsDir() {
				return nil
			}
			if dirs++; dirs > maxCgroupDir {
				s.notef("%s: more than %d cgroups; the rest were not read", dirCgroup, maxCgroupDir)
				return fs.SkipAll
			}
			return visit(p)
		})
	}
	for _, root := range []string{dirCgroup, dirCgroup + "/unified"} {
		if !exists(root + "/cgroup.controllers") {
			continue
		}
		if err := read(root+"/cgroup.controllers", maxFile); err != nil {
			return err
		}
		for _, f := range []string{"cpuset.cpus.isolated", "cpuset.cpus.effective"} {
			if err := read(root+"/"+f, maxFile); err != nil {
				return err
			}
		}
		err := walk(root, func(dir string) error {
			if dir == root || !exists(dir+"/cpuset.cpus.partition") {
				return nil
			}
			for _, f := range []string{"cpuset.cpus.partition", "cpuset.cpus.effective"} {
				if err := read(dir+"/"+f, maxFile); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		break
	}
	ents, err := fs.ReadDir(fsys, dirCgroup)
	if err != nil {
		return nil
	}
	for _, e := range ents {
		if !e.IsDir() || !isCpusetV1Mount(e.Name()) {
			continue
		}
		err := walk(dirCgroup+"/"+e.Name(), func(dir string) error {
			for _, pre := range []string{"cpuset.", ""} {
				if !exists(dir + "/" + pre + "cpus") {
					continue
				}
				for _, f := range []string{"cpus", "cpu_exclusive", "sched_load_balance"} {
					if err := read(dir+"/"+pre+f, maxFile); err != nil {
						return err
					}
				}
				break
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// readCapped reads a file of at most limit bytes. Files of /proc and /sys
// report size 0, so the limit is applied while reading.
func readCapped(fsys fs.FS, p string, limit int) ([]byte, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return b, nil
}

// Paths returns the snapshot's paths in sorted order.
func (s *Snapshot) Paths() []string {
	out := make([]string, 0, len(s.Files))
	for p := range s.Files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Save writes the snapshot under dir, which must not exist or be empty (a
// snapshot never overwrites anything), with the same relative paths, so
// that --root dir reads it back.
func (s *Snapshot) Save(dir string) error {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("save: %s exists and is not empty", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("save: %v", err)
	}
	for _, p := range s.Paths() {
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("save: %v", err)
		}
		f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("save: %v", err)
		}
		_, werr := f.Write(s.Files[p])
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("save: %s: %v", dst, werr)
		}
	}
	return nil
}

// SaveTar writes the snapshot as a gzip'd tar archive: regular files of
// mode 0644, sorted, with no owner and a zero time, so that the same
// machine gives the same bytes.
func (s *Snapshot) SaveTar(w io.Writer) error {
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	for _, p := range s.Paths() {
		b := s.Files[p]
		hdr := &tar.Header{Name: p, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// ReadTar reads a snapshot from a gzip'd (or plain) tar archive, as
// SaveTar writes it. Entries that are not wanted files (see Wanted) are
// skipped; an entry with an unsafe name (absolute, "..") or a link is an
// error.
func ReadTar(r io.Reader) (*Snapshot, error) {
	br := newPeekReader(r)
	var src io.Reader = br
	if br.gzip() {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("snapshot archive: %v", err)
		}
		src = zr
	}
	s := newSnapshot()
	tr := tar.NewReader(src)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("snapshot archive: %v", err)
		}
		name := strings.TrimPrefix(hdr.Name, "./")
		if name == "" || path.IsAbs(name) || path.Clean(name) != strings.TrimSuffix(name, "/") ||
			name == ".." || strings.HasPrefix(name, "../") {
			return nil, fmt.Errorf("snapshot archive: unsafe entry name %q", clip(hdr.Name))
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg:
		default:
			return nil, fmt.Errorf("snapshot archive: entry %q is not a regular file", clip(name))
		}
		if !Wanted(name) {
			continue
		}
		limit := maxFile
		if name == fileConfigGz || strings.HasPrefix(name, fileBootConfig) {
			limit = maxConfig
		}
		if hdr.Size > int64(limit) {
			return nil, fmt.Errorf("snapshot archive: %s: larger than %d bytes", name, limit)
		}
		b, err := io.ReadAll(io.LimitReader(tr, int64(limit)+1))
		if err != nil {
			return nil, fmt.Errorf("snapshot archive: %s: %v", name, err)
		}
		if _, dup := s.Files[name]; dup {
			return nil, fmt.Errorf("snapshot archive: %s appears twice", name)
		}
		if err := s.add(name, b); err != nil {
			return nil, err
		}
	}
	if len(s.Files) == 0 {
		return nil, fmt.Errorf("snapshot archive: none of the files tmigr host reads is in it")
	}
	return s, nil
}

// peekReader lets ReadTar look at the first bytes for gzip's magic.
type peekReader struct {
	r    io.Reader
	head []byte
}

func newPeekReader(r io.Reader) *peekReader {
	p := &peekReader{r: r}
	buf := make([]byte, 2)
	n, _ := io.ReadFull(r, buf)
	p.head = buf[:n]
	return p
}

func (p *peekReader) gzip() bool { return len(p.head) == 2 && p.head[0] == 0x1f && p.head[1] == 0x8b }

func (p *peekReader) Read(b []byte) (int, error) {
	if len(p.head) > 0 {
		n := copy(b, p.head)
		p.head = p.head[n:]
		return n, nil
	}
	return p.r.Read(b)
}
