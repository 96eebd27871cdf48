// Package lab records real Linux kernels' timer traces on machines of any
// shape: it boots a Debian kernel of any series from 6.1 to 7.3 under QEMU
// (TCG, so on any host and with any number of vCPUs and NUMA nodes), runs a
// load pinned to the guest's CPUs, changes the machine while it runs if
// asked (an isolated cpuset partition, the timer_migration sysctl, CPU
// hotplug), records the kernel's timer and timer_migration trace events,
// and writes them as ftrace text that package ftrace and "tmigr replay"
// read. These recordings are the conformance data of the model: the real
// kernel's decisions on the machine shapes the model claims to cover.
// Package conformance holds what is done with them: the comparison with
// the simulator, the conformance matrix, the boot-line check.
//
// # tmigr lab record
//
//	tmigr lab record --cpus 16 --nodes 2 --cmdline "isolcpus=1-7,9-15" \
//	    --busy 1-7,9-15 --duration 3s -o vm16-2node-isol-busy.txt
//
// Flags (each also a field of Spec):
//
//	--cpus N            vCPUs (1-288)
//	--nodes K           NUMA nodes; CPU c goes to node c*K/N (contiguous
//	                    blocks, as "tmigr topo" spreads them)
//	--node-cpus L;L     each node's CPUs instead, as cpulists
//	--cmdline "..."     kernel parameters: isolcpus=, nohz_full=, ...
//	--busy LIST         CPUs that run a busy loop
//	--sleepers LIST     CPUs that run a SCHED_OTHER task sleeping --period
//	                    (default 3ms) in a loop; --abs sleeps to absolute
//	                    deadlines (TIMER_ABSTIME)
//	--rt-sleepers LIST  the same as SCHED_FIFO, priority --fifo-prio (50)
//	--duration D        how long to record (default 3s)
//	--kernel generic|rt Debian's cloud-amd64 or rt-amd64 (PREEMPT_RT) kernel;
//	                    rt also records the hrtimer_* events (--hrtimers
//	                    asks for them on generic)
//	--kernel-version V  a series (6.1, 6.12, 6.19, 7.0, 7.2, 7.3: its newest
//	                    release cached, else the newest Debian has) or a
//	                    release (7.3.4); default 6.12 (debian.go says
//	                    where Debian keeps each series)
//	--at 'TIME CHANGE'  change the machine TIME into the recording
//	                    (repeatable): 'partition LIST|none', 'timer_migration=0|1',
//	                    'offline CPU', 'online CPU'; see ftrace.Change
//	-o FILE             the recording ("-": standard output)
//
// and --buffer-kb, --mem, --timeout, --cache, --mirror, --no-install,
// --console FILE (the whole serial log), and paths to a QEMU, busybox,
// guest program or kernel to use instead of fetching them.
//
// The sleepers of the two kinds matter on the rt kernel: PREEMPT_RT wakes a
// SCHED_FIFO sleeper from hard interrupt context and any other from the
// timer softirq. The machine line's sleepers= lists both; its note says
// which were SCHED_FIFO and the period:
//
//	# machine: cpus=8 ... busy=7 sleepers=1-6 (QEMU TCG; PREEMPT_RT; fifo-sleepers=4-6; period=3ms)
//
// # The recording
//
// The file is what /sys/kernel/tracing/trace printed, after two lines of
// ours: the "# machine:" line (see ftrace.Machine; kernel= is the release
// that booted, the upstream version of Debian's package: 6.1.192 for the
// package whose uname is 6.1.0-57-cloud-amd64) and the kernel's own boot
// message on the hierarchy it built (none before 6.9), as a comment:
//
//	# machine: cpus=16 nodes=2 node-cpus=0-7;8-15 kernel=6.12.118 hz=250 cmdline="" busy=1,9 sleepers=2-4,10-12 (QEMU TCG; period=3ms)
//	# Timer migration: 2 hierarchy levels; 8 children per group; 1 crossnode level
//	# tracer: nop
//	...
//
// The events are the wheel's (timer_init, timer_start, timer_expire_entry,
// timer_expire_exit, timer_cancel), every timer_migration event, and with
// hrtimers the hrtimer_* events. A recording is refused, not written, when
// the guest's CPUs or nodes differ from the spec, when the per-CPU trace
// buffer overran, or when the text does not read back with ftrace.
// "tmigr lab record" then compares the boot line with the hierarchy of
// package hier for the same machine and exits 1 if they differ.
//
// # How
//
//	host                                      guest (QEMU q35, TCG)
//	----                                      ---------------------
//	fetch kernel, busybox (cache)
//	build cmd/tmigr-guest (cache)
//	write /init, pack initramfs   -- boot --> /init: mount proc, sys, dev, tracefs
//	                                          enable events, size the buffer
//	                                          tmigr-guest run (loads, pinned)
//	                                          record D seconds
//	parse console, check, write  <-- ttyS0 -- sections between nonce markers:
//	                                          uname, nodes, dmesg, trace (gzip+base64)
//	                                          poweroff
//
// Debian's kernels are spread over bookworm (6.1), bookworm-backports and
// trixie (6.12), trixie-backports (6.16 to 7.3) and sid, and from 6.19 on
// the image and the config are in packages of their own (debian.go); the
// recorder keeps an apt state of its own in the cache, so "apt-get update"
// and "apt-get download" there change nothing in the system's apt
// configuration (see fetch.go). Only a missing
// QEMU is installed into the system, with apt-get, as root, and never with
// --no-install.
//
// Under TCG the guest's clock runs at the host's pace but its vCPUs do not:
// a guest's boot grows with the square of its vCPUs on a small host, from
// seconds for 2 vCPUs to minutes for 64, and newer kernels boot slower
// (docs/performance.md has the times); a recording adds the load's start,
// the recording and the dump. The kernel's decisions are real; only the vCPUs are slow, which
// changes how often things happen, not what happens. Two things keep it
// so:
//
//   - The busy CPUs' vCPU threads drop to nice 19 on the host once the
//     guest runs its /init. They only spin; without this, 38 spinning
//     vCPUs on 2 host cores starve the idle ones, whose every wakeup is a
//     decision the recording is for, and a recording lost most of its
//     events and twice its length of the guest's clock.
//   - The guest boots with tsc=unstable (see kernelArgs): without it,
//     QEMU 7.2's multi-threaded TCG sometimes crashed a 6.12 guest of 24 or
//     more vCPUs at boot, while the kernel patched its clock code. A guest
//     that still dies before its /init is booted again (Spec.Retries).
//
// A failed recording keeps its run directory (run-* in the cache: the
// console logs and the initramfs) and names it in the error; delete them
// at will.
//
// # Run-time changes
//
// Spec.At (--at) lists changes the guest makes while it is recorded, in the
// words of "tmigr sim --at"; the guest program's "at" command makes them
// (cmd/tmigr-guest/at_linux.go says how), right after tracing is switched
// on, and writes a trace marker after each ("tracing_mark_write:
// tmigr-lab: 1s partition 9-15"), so the trace holds the moment it took
// effect. The machine line's at= lists them as asked. An isolated
// partition takes the loads of its CPUs along: the guest moves their
// threads into it (a threaded cgroup), or the kernel would move them to
// the CPUs the root cgroup keeps.
//
// # Retries
//
// A guest that dies before its /init ran, or whose kernel panics while it
// records, is booted again (Spec.Retries, default 2), and the output says
// so: "recorded on attempt 2: 1 retry covered a crash (Oops: int3 ...)".
// Multi-threaded TCG races the kernel's patching of its own code at boot:
// 16-vCPU 7.3 guests sometimes die so. Guests of the campaign's draws also
// panicked in the middle of their recording (a general protection fault in
// call_timer_fn or timer_init_key, 3 of 43 draws of seed 20261207, on 6.19
// PREEMPT_RT and 7.3): the trace of such a run is lost.
//
// # API
//
// Record is the whole recording, for one Spec, and RecordFile writes it to
// a file atomically; a program that records many shapes calls it once per
// shape (conformance.RunMatrix does). The package keeps no state between
// calls: everything lasting is in the cache directory.
package lab
