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
#   3. the live demo's scenarios in both regimes (scripts/demo.sh:
#      DEMO_SCENARIOS, default busy,half,sampling,bounded,overcommit; add
#      busy-exp for horizon_expedited=1), one guest boot each, DEMO_SECONDS
#      long (default 180: ~36 min for the 10 boots on this 2-core host, on
#      top of ~12 min for parts 1-2), then issue 10's targets per run with
#      their verdicts (scripts/demo-report.sh --targets) and a plot
#      (build/bench-demo/demo.png).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/vm-lib.sh

scripts/deps.sh build vm user bench >&2 || exit 1
guest_kernel || exit 1
make --no-print-directory KDIR="$KDIR" module >&2 || exit 1
make --no-print-directory -C bench >&2 || exit 1
make --no-print-directory -C selftests >&2 || exit 1

payload=build/guest/bench
rm -rf "$payload" && mkdir -p "$payload"
cp build/bench/perfclock_bench build/bench/perfclock_horizon_bench build/bench/bench_membarrier \
	build/selftests/perfclock_stress build/selftests/perfclock_drain module/perfclock.ko "$payload/"
cp scripts/guest/bench.sh "$payload/run.sh"

rc=0
echo "== clock paths (guest, TCG: compare ratios within a regime only)"
for regime in stable unstable; do
	boot $regime "build/guest/bench-$regime" --runs-for 300 --kernel "$VMLINUZ" \
		--payload "$payload" || rc=1
done

echo "== clock paths natively (host, no module: the page's readers on a stand-in page)"
build/bench/perfclock_bench --host || rc=1

echo "== the membarrier horizon natively (host, no module)"
build/bench/bench_membarrier host 5 || rc=1

if [ -f user/Makefile ]; then
	echo "== library queue throughput (host)"
	make --no-print-directory -C user bench || rc=1
fi
echo "== library queue vs perf's own util/ordered-events.c (host)"
bench/perf-ordered-events/run.sh || rc=1
echo "== the live demo: every scenario, both regimes, ${DEMO_SECONDS:-180}s each"
rm -rf build/bench-demo
scripts/demo.sh --scenarios "${DEMO_SCENARIOS:-busy,half,sampling,bounded,overcommit}" \
	--duration "${DEMO_SECONDS:-180}" --out build/bench-demo || rc=1
echo "== the demo's targets"
scripts/demo-report.sh --targets build/bench-demo/stable-*.json build/bench-demo/unstable-*.json |
	sed -n '/^targets/,$p' || rc=1
scripts/demo-plot.sh -o build/bench-demo/demo.png build/bench-demo/stable-*.json \
	build/bench-demo/unstable-*.json || rc=1
exit $rc
