#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/bench.sh — what `make bench` runs. Benchmarks, not tests: they
# print tables and assert nothing.
#   1. the clock paths (bench/module/perfclock_bench.c) and the flush horizon's
#      costs (bench/module/perfclock_horizon_bench.c), in one guest boot per
#      clock regime, so that ratios within a boot compare paths, then the
#      long liburcu stress runs (2 min of clock torture, 30 s per drain
#      mode) in the same boot (scripts/guest/bench.sh);
#   2. the library's queue throughput (make -C user bench), on the host,
#      and against perf's own util/ordered-events.c compiled from
#      linux-source-6.1 (bench/perf-ordered-events/run.sh);
#   3. the live demo's scenarios in both regimes (scripts/demo-bench.sh:
#      busy, half, sampling, bounded, overcommit, irq-mixed, quiet and
#      per-thread, one guest boot each, each run long enough for about
#      1 M events, 60-330 s; DEMO_SECONDS=N for N s each; ~75 min for the
#      16 boots on this 2-core host, on top of ~12 min for parts 1-2),
#      then the targets of issues 10 and 18 per run, each PASS or MISS
#      (scripts/demo-report.sh --targets), and a plot
#      (build/bench-demo/demo.png);
#   4. the per-CPU horizon H_c (scripts/percpu-bench.sh, issue 25): ours'
#      hold p99 against the best safe rule and H_c's age against the
#      grace-period horizon's, from part 3's guest summaries and from
#      demo_flush runs on the host without the module (~2.5 min), and the
#      threaded reader's events/s with 0 lost and its context switches
#      per reader thread count (~1 min), and the two tool loops of
#      README's "Write a tool" on the same loads (~30 s).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/vm-lib.sh

scripts/deps.sh build vm user bench >&2 || exit 1
guest_kernel || exit 1
make --no-print-directory KDIR="$KDIR" module >&2 || exit 1
make --no-print-directory -C bench KDIR="$KDIR" >&2 || exit 1
make --no-print-directory -C selftests >&2 || exit 1

payload=build/guest/bench
rm -rf "$payload" && mkdir -p "$payload"
cp build/bench/perfclock_bench build/bench/perfclock_horizon_bench build/bench/bench_membarrier \
	build/bench/perfclock_floor.ko build/selftests/perfclock_stress build/selftests/perfclock_drain \
	module/perfclock.ko "$payload/"
cp scripts/guest/bench.sh "$payload/run.sh"

rc=0
# --hold-events '': the read and ioctl costs below are measured with no
# tracepoint held, so syscalls take their usual path (vm-lib.sh,
# GUEST_HOLD_EVENTS); these boots keep the TCG text-patching risk.
echo "== clock paths (guest, TCG: compare ratios within a regime only)"
for regime in stable unstable; do
	boot $regime "build/guest/bench-$regime" --runs-for 300 --kernel "$VMLINUZ" \
		--payload "$payload" --hold-events '' || rc=1
done

echo "== the horizon's cost with nohz_full=1-3 (guest, stable regime)"
nohz=build/guest/bench-nohz-payload
rm -rf "$nohz" && mkdir -p "$nohz"
cp build/bench/perfclock_horizon_bench module/perfclock.ko "$nohz/"
cp scripts/guest/bench-nohz.sh "$nohz/run.sh"
boot stable build/guest/bench-nohz --runs-for 120 --kernel "$VMLINUZ" \
	--payload "$nohz" --append nohz_full=1-3 --hold-events '' || rc=1

echo "== clock paths natively (host, no module: the page's readers on a stand-in page; three processes)"
for run in 1 2 3; do
	build/bench/perfclock_bench --host 1 $run || rc=1
done

echo "== the membarrier horizon natively (host, no module)"
build/bench/bench_membarrier host 5 || rc=1

if [ -f user/Makefile ]; then
	echo "== library queue throughput (host)"
	make --no-print-directory -C user bench || rc=1
fi
echo "== library queue vs perf's own util/ordered-events.c (host)"
bench/perf-ordered-events/run.sh || rc=1
echo "== the live demo: every scenario, both regimes"
rm -rf build/bench-demo
scripts/demo-bench.sh --out build/bench-demo || rc=1
echo "== the per-CPU horizon (host without the module, the guests of part 3, the threaded reader)"
scripts/percpu-bench.sh --guest-json build/bench-demo || rc=1
exit $rc
