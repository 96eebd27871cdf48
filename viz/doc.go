// Package viz draws who runs whose timers: from a recording's ftrace events
// (the kernel's, or what tmigr sim --trace writes) it derives a Timeline —
// each CPU's state in the timer-migration hierarchy over time, each group's
// migrator over time, every timer expiry with the CPU that owned it — and
// writes it as a Perfetto / Chrome trace-event JSON file and as one
// self-contained HTML page.
//
//	tl, err := viz.ReadFile("trace.txt")      // or viz.Build(hdr, events), viz.FromEvents(hdr, slice)
//	viz.WritePerfetto(w, tl)                  // ui.perfetto.dev, chrome://tracing
//	viz.WriteHTML(w, tl, viz.Extras{Title: "trace.txt"})
//	tl.Summary(viz.All, nil)                  // the answer: report.Summary
//
// It reads nothing but events, so it pictures any driver's trace: the
// simulator's, a replayed recording, and whatever later reads trace.dat.
//
// # What the events say
//
// CPU states. tmigr_cpu_active makes a CPU active, tmigr_cpu_idle idle;
// tmigr_cpu_new_timer and tmigr_cpu_new_timer_idle are printed only by an
// idle CPU; tmigr_cpu_available and tmigr_cpu_unavailable (tmigr_cpu_online
// and tmigr_cpu_offline before the 2025 rename) put it in and out of the
// hierarchy. A busy isolated CPU never goes idle and prints none of these:
// its state comes from the active mask of its level-0 group, which every
// tmigr_group_set_cpu_active/inactive line of another CPU of the group
// prints. Since every change of state prints a line on the CPU, the state a
// CPU's first line shows (for tmigr_cpu_active: idle before it) reaches back
// to where its record begins, and is marked inferred; after a lost-events
// marker nothing is inferred, since the lost events may have changed it
// anywhere before the CPU's next line.
//
// Migrators. Each tmigr_group_set_cpu_active/inactive line gives a group's
// migrator as a child bit. A level-0 group's child is a CPU; an upper
// group's child is a group, whose migrator is the CPU that carries the
// duty. So a group's migrator resolves down the tree to a CPU, and a CPU is
// migrator of its level-0 group and of every group above it whose migrator
// resolves to it.
//
// Groups. The kernel prints groups as hashed pointers. With a "# machine:"
// line the groups are the ones the kernel builds for that machine (package
// hier, CPUs prepared in order as at boot), named GRPl:i as tmigr topo
// names them, and a pointer is bound by its place: a line of CPU c about the
// group of level l names the l-th group of c's path. A pointer that would
// name two groups is a warning: the kernel built another tree. Without a
// machine line the tree is pieced together from the pointers: a CPU's
// level-0 group is the parent its per-CPU lines print, a group's parent the
// parent its walk prints, a child bit the childmask of the walk's line. It
// shows only what the trace shows (a CPU that never walks has no known bit),
// and agrees with the machine's tree wherever it shows something (tested on
// the recordings).
//
// Owners. A wheel timer's owner is the CPU whose base held it. The kernel
// prints tmigr_handle_remote_cpu on the migrator before it expires an idle
// CPU's timers, and the migrator's next tmigr line (tmigr_update_events, the
// next tmigr_handle_remote) ends that; a timer_expire_entry in between is
// the idle CPU's. Outside one, the owner is the base its timer_start named
// (cpu=), else the handler. On every recording here both rules agree where
// both apply. Hrtimers expire on the CPU whose base holds them; their
// hrtimer_start names no base, so an hrtimer's owner is its handler.
//
// # Pictures
//
// WritePerfetto: a process per CPU ("CPU 3 (isolated)") with threads for its
// hierarchy state, its migrator roles, its wheel timers and its hrtimers;
// a process for the hierarchy with a thread per group; a flow arrow from the
// owner's state track to the handler's timer slice for each timer run by
// another CPU. See WritePerfetto for how slices are placed so that viewers
// bind each arrow where it belongs.
//
// WriteHTML: the answer first (report.Summary), the hierarchy as an icicle
// (the top group above, a row per level, the CPUs below, coloured
// housekeeping / isolated / nohz_full, excluded CPUs hatched), a lane per
// group with its migrator over time, the matrix of who ran whose timers
// (isolated rows highlighted), and, from a simulated run, oslat's or
// cyclictest's histogram and each CPU's maximum. It works for 2 to 8192
// CPUs: above LargeMachine CPUs the CPUs are drawn as runs of one class and
// levels narrower than 2 px are left out; see the constants for the other
// limits. A page of 8192 CPUs is about 100 KiB.
package viz
