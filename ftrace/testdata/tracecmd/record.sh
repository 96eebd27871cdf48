#!/bin/bash
# record.sh DIR SECONDS BUFFER_KB: records the timer and timer_migration
# events of this machine into DIR in every form the tests read.
#
# Run as root on a machine with trace-cmd (Debian: apt-get install
# trace-cmd) and a C compiler. The events go to a private trace instance,
# "ftin", so that nothing else using tracefs is disturbed. While tracing,
# one sleeper per CPU (CPUs 0 and 1) sleeps 3 ms at a time with
# clock_nanosleep. The kernel's text is read from the instance first (the
# trace file does not consume the buffer), then trace-cmd extract takes
# the same buffer into trace.dat. To keep that file small, extract runs in
# a private mount namespace where /proc/kallsyms holds only the functions
# the events name and the events directory only the ftrace, timer and
# timer_migration formats; the ring-buffer pages are the kernel's.
set -euo pipefail
out=$1 secs=$2 kb=$3
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T
I=$T/instances/ftin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/sleeper.c" <<'C'
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
	double secs = atof(argv[1]);
	struct timespec start, now, d = { 0, 3000000 };
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		clock_nanosleep(CLOCK_MONOTONIC, 0, &d, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < secs);
	return 0;
}
C
cc -O2 -o "$work/sleeper" "$work/sleeper.c"
mkdir -p "$out"
[ -d $I ] && rmdir $I
mkdir $I
echo 0 > $I/tracing_on
echo "$kb" > $I/buffer_size_kb
echo 0 > $I/options/hash-ptr # real addresses, as trace.dat holds them
echo 1 > $I/options/overwrite
echo 1 > $I/events/timer/enable
echo 1 > $I/events/timer_migration/enable
echo 1 > $I/tracing_on
taskset -c 0 "$work/sleeper" "$secs" & a=$!
taskset -c 1 "$work/sleeper" "$secs" & b=$!
wait $a $b
echo 0 > $I/tracing_on
cat $I/trace > "$out/tracefs.txt"
for c in 0 1; do
	cat $I/per_cpu/cpu$c/trace > "$out/cpu$c.txt"
	echo "cpu$c:"; cat $I/per_cpu/cpu$c/stats
done > "$out/stats.txt"
M=$work/meta
mkdir -p $M/events
cp $T/events/header_page $T/events/header_event $M/events/
for sys in ftrace timer timer_migration; do
	for d in $T/events/$sys/*/; do
		e=$(basename "$d"); mkdir -p $M/events/$sys/$e; cp "$d/format" $M/events/$sys/$e/format
	done
done
grep -o 'function=[^ ]*' "$out/tracefs.txt" | sort -u | sed 's/function=//' > $M/funcs
awk 'NR==FNR { want[$1] = 1; next } ($3 in want)' $M/funcs /proc/kallsyms > $M/kallsyms
unshare -m --propagation private bash -c "
	mount --bind $M/events $T/events &&
	mount --bind $M/kallsyms /proc/kallsyms &&
	trace-cmd extract -B ftin -o '$out/trace.dat'" > "$out/extract.log" 2>&1
[ -d $I ] && rmdir $I
cd "$out"
trace-cmd convert --file-version 6 -i trace.dat -o v6.dat > /dev/null 2>&1
trace-cmd convert --file-version 7 --compression none -i trace.dat -o v7none.dat > /dev/null 2>&1
trace-cmd report -i trace.dat > report.txt
trace-cmd report -N -i trace.dat > report-N.txt
trace-cmd report -l -i trace.dat > report-l.txt
trace-cmd report -t -i trace.dat > report-t.txt
trace-cmd report -N -t -i trace.dat > report-Nt.txt
trace-cmd report -N -l -i trace.dat > report-Nl.txt
uptime > uptime.txt
