#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/check-debug.sh — what `make check-debug` runs: perfclock under a
# debug kernel (KASAN, lockdep, UBSAN, kmemleak, DEBUG_VM, atomic-sleep
# checks, hardened usercopy, fault injection).
#
#   1. installs what is missing (scripts/deps.sh build vm lint debug: the
#      kernel build tools are the debug group);
#   2. builds a small x86_64 kernel from Debian's linux-source-6.1 tarball:
#      `make tinyconfig` plus configs/debug-guest.config. The tree is cached
#      outside the clone, in $PERFCLOCK_CACHE/debug-kernel/KEY, where KEY
#      hashes the fragment, the tarball, the compiler and this recipe: a
#      second run reuses it, a changed fragment builds a new one;
#   3. builds the module against that tree (`make module KDIR=...`, on a
#      copy of the sources, so a concurrent `make check` is not disturbed),
#      the selftests' test-only module (selftests/kmod) against it too,
#      and the selftests and the fuzzers (`make selftests fuzz`);
#   4. boots it twice under QEMU (boot() in scripts/vm-lib.sh), once per
#      clock regime (stable and unstable sched_clock), and in each runs
#      scripts/guest/debug.sh:
#        - the whole selftest suite (selftests/run.sh, as in `make check`),
#        - the interface fuzzer (fuzz/module/perfclock_fuzz.c) for
#          FUZZ_SECONDS, with unload/reload,
#        - in the stable boot only (it does not depend on the clock), the
#          fault-injection sweep of the module's load and init path
#          (fuzz/module/perfclock_fail_init.c),
#        - a forced kmemleak scan, and checks that the kernel is not
#          tainted by a warning and that lockdep is still on.
#      A KASAN, lockdep or UBSAN report, a kmemleak leak, a WARNING or a
#      BUG fails the run (scripts/vm.sh reads the console; the payload
#      reads kmemleak, the taint flags and lockdep's state).
#
# Environment:
#   FUZZ_SECONDS     fuzzing time per boot (default 60); longer on request,
#                    e.g. FUZZ_SECONDS=1800 make check-debug
#   FUZZ_SEED        the fuzzer's seed (default: the time; printed, and a
#                    failure prints the line that replays it)
#   FAULT_SWEEP      init (default): the fault sites under do_init_module;
#                    full: every site of the load path (about 330 loads,
#                    some minutes more)
#   GUEST_TIMEOUT    seconds per boot on top of FUZZ_SECONDS (default
#                    900, scripts/vm-lib.sh)
#   PERFCLOCK_CACHE  cache root (default /var/cache/perfclock)
#   JOBS             make -j for the kernel (default 2)
#   REPEAT           N: in place of the suite, the tests that once failed
#                    in these guests (scripts/guest/debug-repeat.sh), N
#                    times each, in the stable and unstable boots
#
# The kernel is 6.1 alone: KVER= naming any other (make check-debug
# KVER=6.12) is refused, saying why. A 6.12 debug kernel would cost what
# the 6.1 one does and more (docs/kernel-compat.md, "What running 6.12
# costs the checks"): a second build from source (6.1's took 8.5-17
# minutes cold on the idle 2-core machine, 3 514 s on the shared, loaded
# one), extracting linux-source-6.12, and two more guests, where .ci/run
# has about 12 minutes left of its 60.
#
# Output: TAP, one line per result, "N passed, N failed, N skipped" at the
# end; exit status non-zero if anything failed. Logs: build/debug/.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

TARBALL=${KERNEL_SRC_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
TOPDIR=linux-source-6.1
FRAGMENT=configs/debug-guest.config
CACHE=${PERFCLOCK_CACHE:-/var/cache/perfclock}
JOBS=${JOBS:-2}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_SEED=${FUZZ_SEED:-$(date +%s)}
FAULT_SWEEP=${FAULT_SWEEP:-init}
# Bump when the way the kernel is built changes (not the fragment: that
# is hashed itself).
RECIPE=1

case ${KVER:-6.1} in
6.1|6.1.*) ;;
*)
	cat >&2 <<-EOF
	check-debug.sh: KVER=$KVER: no debug kernel is built for it; make check-debug
	  runs on a debug kernel built from linux-source-6.1 only (run it without KVER=).
	  Why not 6.12: the 6.1 debug kernel alone took 3 514 s cold on the shared,
	  loaded 2-core machine (8.5-17 minutes idle); a 6.12 one (a larger tree) at
	  least as much, plus extracting linux-source-6.12 and two more guests, and
	  .ci/run (48 minutes cold with 6.12 everywhere else) has about 12 left of
	  its 60. 6.12 runs the same selftests under make check and make check-dkms.
	  docs/kernel-compat.md, "What running 6.12 costs the checks", has the figures.
	EOF
	exit 64 ;;
esac

log=build/debug
mkdir -p "$log"
TAP_PREFIX="debug: "
. scripts/tap-lib.sh
. scripts/vm-lib.sh

echo "TAP version 13"

# ---- packages ------------------------------------------------------------------
scripts/deps.sh build vm lint debug >&2
st=$?
result $st "packages installed"
[ $st -eq 0 ] || finish

# ---- the kernel ------------------------------------------------------------------
# The source, extracted once per tarball (about 40 s), shared by every tree.
src_root=$CACHE/src
src=$src_root/$TOPDIR
stamp="$(stat -c '%s %Y' "$TARBALL")"
mkdir -p "$CACHE/debug-kernel" "$src_root"
exec 9>"$CACHE/debug-kernel/.lock"
flock 9	# one build at a time per cache; a second run waits, then reuses

if [ ! -f "$src_root/.stamp" ] || [ "$(cat "$src_root/.stamp")" != "$stamp" ]; then
	echo "# extracting $TARBALL into $src_root"
	rm -rf "$src" "$src_root/.stamp"
	tar -xJf "$TARBALL" -C "$src_root" || { result 1 "extract $TARBALL"; finish; }
	echo "$stamp" > "$src_root/.stamp"
fi

key=$( { cat "$FRAGMENT"; echo "$stamp"; dpkg-query -W -f='${Version}\n' linux-source-6.1 2>/dev/null;
	gcc --version | head -n 1; echo "recipe $RECIPE"; } | sha256sum | cut -c1-16)
tree=$CACHE/debug-kernel/$key
bzimage=$tree/arch/x86/boot/bzImage
if [ -f "$tree/.perfclock-built" ]; then
	echo "# kernel: cached $tree"
	result 0 "debug kernel (cached, $key)"
else
	echo "# kernel: building $tree (tinyconfig + $FRAGMENT, make -j$JOBS)"
	rm -rf "$tree"
	mkdir -p "$tree"
	k_start=$(date +%s)
	{
		make -C "$src" O="$tree" tinyconfig &&
		"$src/scripts/kconfig/merge_config.sh" -m -O "$tree" "$tree/.config" "$top/$FRAGMENT" &&
		make -C "$src" O="$tree" olddefconfig
	} > "$log/kernel-config.log" 2>&1
	st=$?
	# Every option the fragment asks for must have survived olddefconfig:
	# a dependency that silently drops one would drop a checker.
	dropped=$(grep -E '^(CONFIG_[A-Z0-9_]+=|# CONFIG_[A-Z0-9_]+ is not set)' "$FRAGMENT" |
		while IFS= read -r line; do
			grep -qxF "$line" "$tree/.config" || echo "$line"
		done)
	if [ -n "$dropped" ]; then
		echo "$dropped" | sed 's/^/# not in the final .config: /'
		st=1
	fi
	result $st "configure: tinyconfig + $FRAGMENT, every option kept"
	[ $st -eq 0 ] || finish
	make -C "$tree" -j"$JOBS" bzImage modules > "$log/kernel-build.log" 2>&1
	st=$?
	[ $st -eq 0 ] || tail -n 30 "$log/kernel-build.log" | sed 's/^/# /'
	echo "# kernel build: $(( $(date +%s) - k_start )) s"
	result $st "build the debug kernel ($(( $(date +%s) - k_start )) s)"
	[ $st -eq 0 ] || finish
	touch "$tree/.perfclock-built"
fi
flock -u 9

# ---- the module, the selftests, the fuzzer ---------------------------------------
# A private copy of the module sources: kbuild writes its objects next to
# them, and `make check` may be building the same files for another kernel.
msrc=$log/module-src
rm -rf "$msrc"
mkdir -p "$msrc"
cp -r Makefile Kbuild VERSION module "$msrc/"
rm -f "$msrc"/module/*.o "$msrc"/module/*.ko "$msrc"/module/*.mod* "$msrc"/module/.*.cmd
# The selftests' test-only module too (perfclock_generation_test loads
# it): `make selftests` builds it for the Debian kernel, whose vermagic
# the debug kernel refuses.
mkdir -p "$msrc/kmod"
cp selftests/kmod/Kbuild selftests/kmod/*.c "$msrc/kmod/"
{
	make -C "$msrc" --no-print-directory module KDIR="$tree" &&
	make -C "$tree" --no-print-directory M="$PWD/$msrc/kmod" modules &&
	make --no-print-directory selftests fuzz &&
	make --no-print-directory -C user guest
} > "$log/build.log" 2>&1
st=$?
[ $st -eq 0 ] || tail -n 40 "$log/build.log" | sed 's/^/# /'
result $st "make module and the selftests' test module KDIR=<debug tree>, make selftests fuzz, make -C user guest"
[ $st -eq 0 ] || finish

payload=$log/payload
rm -rf "$payload"
mkdir -p "$payload/extra"
# What `make check` puts in its guests (scripts/check.sh), run.sh renamed.
cp build/selftests/* build/fuzz/* user/build/guest/* "$payload/"
mv "$payload/run.sh" "$payload/selftests.sh"
cp "$msrc/module/perfclock.ko" "$msrc"/kmod/*.ko "$payload/"
# The TSC-unstable selftest wants msr.ko; the fragment builds it.
[ -f "$tree/arch/x86/kernel/msr.ko" ] && cp "$tree/arch/x86/kernel/msr.ko" "$payload/extra/"

cp scripts/guest/debug.sh "$payload/run.sh"
REPEAT=${REPEAT:-}
boots="stable unstable reset"
if [ -n "$REPEAT" ]; then
	# The tests that once failed here, REPEAT times each, in both
	# regimes: no fuzzer, no sweep (scripts/guest/debug-repeat.sh).
	case $REPEAT in *[!0-9]*|0) echo "check-debug.sh: REPEAT=$REPEAT: a count" >&2; exit 64 ;; esac
	cp scripts/guest/debug-repeat.sh "$payload/run.sh"
	boots="stable unstable"
fi

# ---- the guests --------------------------------------------------------------------
echo "# fuzzer: seed $FUZZ_SEED, $FUZZ_SECONDS s per boot"
# The reset boot marks the TSC unstable (selftests/run_reset.sh), which the
# selftests in the other two leave to it, on one TCG thread for all vCPUs:
# the mark switches a static branch every CPU runs, and with a thread per
# vCPU a vCPU can run a stale translation of the int3 written while it is
# patched (docs/lessons.md). It has no kprobes here, so the module must
# refuse perf_clock() horizons after the mark.
for name in $boots; do
	regime=$name fault=0 reset=0 args=(--runs-for "$FUZZ_SECONDS") min=20
	[ "$name" = stable ] && fault=1
	[ "$name" = reset ] && regime=stable reset=1 args=() min=10
	# About a minute a round of the three under the debug kernel.
	[ -n "$REPEAT" ] && fault=0 args=(--runs-for $((REPEAT * 90)))
	printf 'FUZZ_SEED=%s\nFUZZ_SECONDS=%s\nFAULT_INJECT=%s\nFAULT_SWEEP=%s\nRESET_ONLY=%s\nREPEAT=%s\n' \
		"$FUZZ_SEED" "$FUZZ_SECONDS" "$fault" "$FAULT_SWEEP" "$reset" "${REPEAT:-0}" > "$payload/debug.env"
	[ "$reset" = 1 ] && args=(--tcg-threads single)
	g_start=$(date +%s)
	boot $regime "$log/$name" "${args[@]}" --kernel "$bzimage" \
		--payload "$payload" --append printk.devkmsg=on --mem 2048 \
		> "$log/guest-$name.tap" 2> "$log/guest-$name.err"
	st=$?
	before=$n
	collect "debug-$name" "$log/guest-$name.tap"
	[ $st -eq 0 ] || sed 's/^/# /' "$log/guest-$name.err"
	echo "# guest $name: $(( $(date +%s) - g_start )) s"
	guest_results "$name" $st $before "$(( $(date +%s) - g_start )) s" $min
	# A test program can fail without a TAP line of its own.
	payload_ok=0
	grep -q 'payload run.sh exited with rc=' "$log/guest-$name.err" && payload_ok=1
	result "$payload_ok" "$name: the guest payload exits 0"
done

finish
