package host

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/kernel/cmdline"
)

// Host is what a snapshot says about the machine, each file parsed. A
// field whose file was absent is marked so (Has*, nil pointers, -1).
type Host struct {
	// Release is proc/sys/kernel/osrelease without its newline, "" if
	// absent.
	Release string
	// Cmdline is proc/cmdline; HasCmdline says whether it was there.
	Cmdline    cmdline.Cmdline
	HasCmdline bool
	// TimerMigration is kernel.timer_migration (0 or 1), -1 when the file
	// is absent (a kernel without CONFIG_SMP or CONFIG_NO_HZ_COMMON).
	TimerMigration int
	// The CPU sets of sys/devices/system/cpu; Has says which were there.
	Possible, Present, Online cpumask.Mask
	HasPossible, HasPresent   bool
	HasOnline                 bool
	// Isolated is sys/devices/system/cpu/isolated, nil if absent.
	Isolated *cpumask.Mask
	// NohzFull is sys/devices/system/cpu/nohz_full, nil if absent (a
	// kernel without CONFIG_NO_HZ_FULL); empty when it reads "(null)" or
	// nothing (nohz_full not in use).
	NohzFull *cpumask.Mask
	// Capacity is each CPU's cpu_capacity, for the CPUs that have one.
	Capacity map[int]int
	// Nodes is each NUMA node's CPUs (nodeN/cpulist); nil without NUMA
	// sysfs. PossibleNodes is node/possible, nil if absent.
	Nodes         map[int]cpumask.Mask
	PossibleNodes *cpumask.Mask
	// Cgroup holds the cpusets.
	Cgroup Cgroup
	// Realtime is sys/kernel/realtime (1 on PREEMPT_RT kernels), -1 if
	// absent.
	Realtime int
	// Config is the kernel configuration, nil if neither proc/config.gz
	// nor boot/config-RELEASE was there.
	Config *Config
}

// Cgroup is the cpuset setup.
type Cgroup struct {
	// V2Root is the cgroup v2 mount ("sys/fs/cgroup", or
	// "sys/fs/cgroup/unified" on a hybrid system), "" without one.
	V2Root string
	// Controllers are the root's cgroup.controllers.
	Controllers []string
	// Partitions are the v2 cgroups with a cpuset.cpus.partition file.
	Partitions []Partition
	// RootIsolated is the root's cpuset.cpus.isolated (6.7 and later):
	// the CPUs of all valid isolated partitions; nil if absent.
	RootIsolated *cpumask.Mask
	// V1 are the cpusets of cgroup v1 cpuset hierarchies.
	V1 []Cpuset
}

// Partition is a cgroup v2 cpuset and its partition state.
type Partition struct {
	Path      string // the cgroup, relative to the v2 root ("rt/app")
	State     PartitionState
	Effective cpumask.Mask // cpuset.cpus.effective
}

// Cpuset is a cgroup v1 cpuset.
type Cpuset struct {
	Path           string // relative to sys/fs/cgroup ("cpuset/rt")
	CPUs           cpumask.Mask
	Exclusive      bool
	LoadBalance    bool // sched_load_balance (1 by default)
	HasLoadBalance bool
}

// Parse reads every file of the snapshot. An error names the file and
// what is wrong in it; absent files are not errors.
func Parse(s *Snapshot) (*Host, error) {
	h := &Host{TimerMigration: -1, Realtime: -1}
	text := func(p string) (string, bool) {
		b, ok := s.Files[p]
		return string(b), ok
	}
	mask := func(p string) (cpumask.Mask, bool, error) {
		t, ok := text(p)
		if !ok {
			return cpumask.Mask{}, false, nil
		}
		m, err := cpumask.Parse(strings.TrimRight(t, "\n"))
		if err != nil {
			return cpumask.Mask{}, true, fmt.Errorf("%s: %v", p, err)
		}
		return m, true, nil
	}
	if t, ok := text(fileRelease); ok {
		h.Release = strings.TrimSpace(t)
		if h.Release == "" || strings.ContainsAny(h.Release, " \t\n\x00") {
			return nil, fmt.Errorf("%s: %q is not a kernel release", fileRelease, clip(t))
		}
	}
	if t, ok := text(fileCmdline); ok {
		c, err := cmdline.Parse(t)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", fileCmdline, err)
		}
		h.Cmdline, h.HasCmdline = c, true
	}
	for _, f := range []struct {
		path string
		dst  *int
	}{{fileTimerMigration, &h.TimerMigration}, {fileRealtime, &h.Realtime}} {
		if t, ok := text(f.path); ok {
			switch strings.TrimSpace(t) {
			case "0":
				*f.dst = 0
			case "1":
				*f.dst = 1
			default:
				return nil, fmt.Errorf("%s: %q is not 0 or 1", f.path, clip(t))
			}
		}
	}
	var err error
	for _, f := range []struct {
		name string
		m    *cpumask.Mask
		has  *bool
	}{{"possible", &h.Possible, &h.HasPossible}, {"present", &h.Present, &h.HasPresent}, {"online", &h.Online, &h.HasOnline}} {
		if *f.m, *f.has, err = mask(dirCPU + "/" + f.name); err != nil {
			return nil, err
		}
	}
	if m, ok, err := mask(dirCPU + "/isolated"); err != nil {
		return nil, err
	} else if ok {
		h.Isolated = &m
	}
	if t, ok := text(dirCPU + "/nohz_full"); ok {
		var m cpumask.Mask
		if body := strings.TrimSpace(t); body != "(null)" && body != "" {
			if m, err = cpumask.Parse(body); err != nil {
				return nil, fmt.Errorf("%s/nohz_full: %v", dirCPU, err)
			}
		}
		h.NohzFull = &m
	}
	if m, ok, err := mask(dirNode + "/possible"); err != nil {
		return nil, err
	} else if ok {
		h.PossibleNodes = &m
	}
	paths := s.Paths()
	for _, p := range paths {
		if rest, ok := strings.CutPrefix(p, dirCPU+"/cpu"); ok {
			if n, ok := strings.CutSuffix(rest, "/cpu_capacity"); ok && numbered("cpu"+n, "cpu") {
				c, _ := strconv.Atoi(n)
				t, _ := text(p)
				v, err := strconv.Atoi(strings.TrimSpace(t))
				if err != nil || v < 0 || v > 1<<20 {
					return nil, fmt.Errorf("%s: %q is not a capacity", p, clip(t))
				}
				if h.Capacity == nil {
					h.Capacity = map[int]int{}
				}
				h.Capacity[c] = v
			}
		}
		if rest, ok := strings.CutPrefix(p, dirNode+"/node"); ok {
			if n, ok := strings.CutSuffix(rest, "/cpulist"); ok && numbered("node"+n, "node") {
				id, _ := strconv.Atoi(n)
				m, _, err := mask(p)
				if err != nil {
					return nil, err
				}
				if h.Nodes == nil {
					h.Nodes = map[int]cpumask.Mask{}
				}
				h.Nodes[id] = m
			}
		}
	}
	if err := parseCgroups(s, paths, &h.Cgroup); err != nil {
		return nil, err
	}
	if b, ok := s.Files[fileConfigGz]; ok {
		if h.Config, err = ParseConfigGz(b); err != nil {
			return nil, fmt.Errorf("%s: %v", fileConfigGz, err)
		}
		h.Config.Source = fileConfigGz
	} else if b, ok := s.Files[fileBootConfig+h.Release]; ok && h.Release != "" {
		if h.Config, err = ParseConfig(b); err != nil {
			return nil, fmt.Errorf("%s%s: %v", fileBootConfig, h.Release, err)
		}
		h.Config.Source = fileBootConfig + h.Release
	}
	return h, nil
}

func parseCgroups(s *Snapshot, paths []string, cg *Cgroup) error {
	for _, root := range []string{dirCgroup, dirCgroup + "/unified"} {
		t, ok := s.Files[root+"/cgroup.controllers"]
		if !ok {
			continue
		}
		cg.V2Root = root
		cg.Controllers = strings.Fields(string(t))
		if b, ok := s.Files[root+"/cpuset.cpus.isolated"]; ok {
			m, err := cpumask.Parse(strings.TrimRight(string(b), "\n"))
			if err != nil {
				return fmt.Errorf("%s/cpuset.cpus.isolated: %v", root, err)
			}
			cg.RootIsolated = &m
		}
		for _, p := range paths {
			dir, ok := strings.CutSuffix(p, "/cpuset.cpus.partition")
			if !ok || !strings.HasPrefix(dir, root+"/") || (root == dirCgroup && strings.HasPrefix(dir, dirCgroup+"/unified/")) {
				continue
			}
			st, err := ParsePartition(string(s.Files[p]))
			if err != nil {
				return fmt.Errorf("%s: %v", p, err)
			}
			part := Partition{Path: strings.TrimPrefix(dir, root+"/"), State: st}
			eff, ok := s.Files[dir+"/cpuset.cpus.effective"]
			if !ok && st.IsolatedValid() {
				return fmt.Errorf("%s/cpuset.cpus.effective: missing beside an isolated partition", dir)
			}
			if part.Effective, err = cpumask.Parse(strings.TrimRight(string(eff), "\n")); err != nil {
				return fmt.Errorf("%s/cpuset.cpus.effective: %v", dir, err)
			}
			cg.Partitions = append(cg.Partitions, part)
		}
		break
	}
	for _, p := range paths {
		rest, ok := strings.CutPrefix(p, dirCgroup+"/")
		if !ok {
			continue
		}
		top, _, _ := strings.Cut(rest, "/")
		if !isCpusetV1Mount(top) {
			continue
		}
		dir, base := path.Split(p)
		pre := ""
		switch base {
		case "cpuset.cpus":
			pre = "cpuset."
		case "cpus":
		default:
			continue
		}
		m, err := cpumask.Parse(strings.TrimRight(string(s.Files[p]), "\n"))
		if err != nil {
			return fmt.Errorf("%s: %v", p, err)
		}
		cs := Cpuset{Path: strings.TrimSuffix(strings.TrimPrefix(dir, dirCgroup+"/"), "/"), CPUs: m, LoadBalance: true}
		if b, ok := s.Files[dir+pre+"cpu_exclusive"]; ok {
			if cs.Exclusive, err = parseFlag(dir+pre+"cpu_exclusive", string(b)); err != nil {
				return err
			}
		}
		if b, ok := s.Files[dir+pre+"sched_load_balance"]; ok {
			if cs.LoadBalance, err = parseFlag(dir+pre+"sched_load_balance", string(b)); err != nil {
				return err
			}
			cs.HasLoadBalance = true
		}
		cg.V1 = append(cg.V1, cs)
	}
	sort.Slice(cg.V1, func(i, j int) bool { return cg.V1[i].Path < cg.V1[j].Path })
	return nil
}

// IsolatedPartitions returns the CPUs of the valid isolated cgroup v2
// partitions.
func (c *Cgroup) IsolatedPartitions() cpumask.Mask {
	var m cpumask.Mask
	for _, p := range c.Partitions {
		if p.State.IsolatedValid() {
			m = m.Or(p.Effective)
		}
	}
	return m
}

// clip shortens what an error quotes from a file.
func clip(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
