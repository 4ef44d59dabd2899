# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2154 # check-perf.sh's variables, set before these run
#
# scripts/check-perf-fixes.sh — the stock fixes (patches/perf-fixes/)
# tested alone on the tarball's perf, sourced by scripts/check-perf.sh
# (functions only). The fixes are steps 1..nfixes of its nolib chain,
# so each is built with WERROR=1 there; "fixes" perf is the chain's
# binary at step nfixes, "stock" the tarball's (step 0). Each fix's test
# runs on both, on the host (root, tracefs):
#   libperf-read-done       tools/lib/perf/tests/test-evlist.c's
#                           test_mmap_read_done(), from the fixes, built
#                           (tests-static) against the tarball's libperf
#                           and against the fixed one
#   inject-unknown-feature  tools/perf/tests/shell/inject_unknown_feature.sh
#   top-thread-fail         tools/perf/tests/shell/top_thread_fail.sh
#   kvm-stat-live-exit      scripts/guest/perf-kvm-exit.sh in a TCG guest
#                           (fixes_kvm: QEMU's emulated SVM lets kvm_amd
#                           load there)
#   record-mmap-flush       scripts/guest/perf-mmap-flush.sh STOCK FIXES
#                           (a load that makes stock's bug likely, not
#                           certain: stock 0 out of order is a SKIP)
# and prints, per test,
#   # perf-fixes test=NAME stock=FAIL fixes=PASS
# (PASS, FAIL, SKIP, or NOTRUN where the test did not get to its check),
# and one TAP result: ok when stock fails and fixes pass.
#   fixes_tests STOCK-PERF FIXES-PERF   everything above

# fixes_row NAME STOCK FIXES [DETAIL [OUTPUT]]: the line and its result.
fixes_row() {
	local name=$1 s=$2 f=$3 detail=${4:-} out=${5:-}
	echo "# perf-fixes test=$name stock=$s fixes=$f${detail:+ ($detail)}"
	if [ "$s" = FAIL ] && [ "$f" = PASS ]; then
		result 0 "perf-fixes: $name fails on stock perf and passes with the fixes${detail:+ ($detail)}"
	elif [ "$s" = SKIP ] && [ "$f" = SKIP ]; then
		skip_result "perf-fixes: $name" "${detail:-skipped on both}"
	elif [ "$name" = record-mmap-flush ] && [ "$s" = PASS ] && [ "$f" = PASS ]; then
		skip_result "perf-fixes: $name fails on stock perf and passes with the fixes" \
			"stock had 0 out of order: this load did not exercise the bug"
	else
		result 1 "perf-fixes: $name fails on stock perf and passes with the fixes (stock=$s fixes=$f${detail:+, $detail})" "$out"
	fi
}

# The libperf test: the fixes' test-evlist.c built with each libperf.
# Sets lp_verdict and lp_line from BUILD's run.
fixes_libperf() {
	local b=$1 dir=$fx_dir/libperf-$1 p st
	rm -rf "$dir" && mkdir -p "$dir" && cp -a "$src/tools" "$dir/" && git init -q "$dir"
	for p in "${fixes[@]}"; do
		case $p in /*) ;; *) p=$top/$p ;; esac
		if [ "$b" = stock ]; then
			git -C "$dir" apply --include='tools/lib/perf/tests/*' "$p"
		else
			git -C "$dir" apply "$p"
		fi || { lp_verdict=NOTRUN lp_line="$(basename "$p") does not apply"; return; }
	done
	make -C "$dir/tools/lib/perf" -j"$JOBS" tests-static > "$fx_dir/libperf-$b.build.log" 2>&1
	st=$?
	if [ $st -ne 0 ]; then
		lp_verdict=NOTRUN lp_line="libperf tests-static does not build (exit $st)"
		return
	fi
	(cd "$dir/tools/lib/perf" && timeout 300 ./tests-static -v) > "$fx_dir/libperf-$b.out" 2>&1
	lp_line=$(grep -m1 '^test_mmap_read_done: ' "$fx_dir/libperf-$b.out")
	if [ -z "$lp_line" ]; then
		lp_verdict=NOTRUN lp_line="test_mmap_read_done did not get to its count"
	elif grep -q 'FAILED .*perf_mmap__read_done' "$fx_dir/libperf-$b.out" ||
		! grep -q ': 0 skipped$' <<<"$lp_line"; then
		lp_verdict=FAIL
	else
		lp_verdict=PASS
	fi
	lp_line=${lp_line#test_mmap_read_done: }
	rm -rf "$dir"	# 100 MB of sources
}

# 4. perf kvm stat live's exit: the host has no /dev/kvm, but QEMU's
# TCG emulates SVM (-cpu max), so the guest kernel's kvm_amd loads and a
# KVM guest of our own (scripts/guest/kvm-exits.c) makes kvm:kvm_exit
# events there. One short stable-regime boot, 2 vCPUs, runs
# scripts/guest/perf-kvm-exit.sh on both builds.
fixes_kvm() {
	local stock=$1 fixed=$2 before=${3:-} pl=$fx_dir/kvm-payload mods=/lib/modules/$KVER/kernel
	local m f st line sv fv
	rm -rf "$pl" && mkdir -p "$pl"
	for m in virt/lib/irqbypass arch/x86/kvm/kvm arch/x86/kvm/kvm-amd; do
		f=$mods/$m.ko
		if [ -f "$f" ]; then
			cp "$f" "$pl/"
		elif [ -f "$f.xz" ]; then
			xz -dc "$f.xz" > "$pl/${m##*/}.ko"
		else
			fixes_row kvm-stat-live-exit SKIP SKIP "the guest kernel $KVER has no ${m##*/}.ko"
			return
		fi
	done
	if ! gcc -O2 -Wall -Wextra -Werror -static -o "$pl/kvm-exits" scripts/guest/kvm-exits.c \
		> "$fx_dir/kvm-exits.build.log" 2>&1; then
		fixes_row kvm-stat-live-exit NOTRUN NOTRUN "scripts/guest/kvm-exits.c does not build" \
			"$(head -n 5 "$fx_dir/kvm-exits.build.log")"
		return
	fi
	cp "$stock" "$pl/perf-stock" && cp "$fixed" "$pl/perf-fixes" &&
		cp scripts/guest/perf-kvm-exit.sh "$pl/"
	[ -x "$before" ] && cp "$before" "$pl/perf-before"
	printf '%s\n' '#!/bin/sh' \
		"sh /payload/perf-kvm-exit.sh /payload/perf-stock /payload/perf-fixes /payload${before:+ /payload/perf-before}" \
		'echo "# perf-kvm-exit: exit $?"' > "$pl/run.sh"
	chmod +x "$pl/run.sh"
	boot stable "$fx_dir/kvm-guest" --runs-for 240 --kernel "$VMLINUZ" --payload "$pl" --smp 2 \
		> "$fx_dir/kvm-guest.out" 2> "$fx_dir/kvm-guest.err"
	st=$?
	grep '^# perf-kvm-exit' "$fx_dir/kvm-guest.out"
	line=$(grep '^# perf-kvm-exit stock=' "$fx_dir/kvm-guest.out" | tail -n 1)
	if [ -z "$line" ] && grep -q '^# perf-kvm-exit: no /dev/kvm' "$fx_dir/kvm-guest.out"; then
		fixes_row kvm-stat-live-exit SKIP SKIP "no /dev/kvm in the guest: kvm_amd did not load"
		return
	fi
	sv=$(field stock "$line") fv=$(field fixes "$line")
	fixes_row kvm-stat-live-exit "${sv:-NOTRUN}" "${fv:-NOTRUN}" \
		"\"io\" exits counted: stock $(field stock_io "$line"), fixes $(field fixes_io "$line") of $(field want "$line"); vm.sh exit $st" \
		"$(tail -n 20 "$fx_dir/kvm-guest.err")"
	# The tarball's perf also loses what patch 1 fixes; perf with every
	# fix before this one must miss events too, or the test shows
	# nothing of this fix: in one of up to three runs (an exit after the
	# burst lets it count all, perf-kvm-exit.sh says why). Only where
	# that step was built.
	[ -x "$before" ] || return
	[ "$(field before "$line")" = FAIL ]
	result $? "perf-fixes: kvm-stat-live-exit fails with every fix before it (\"io\" exits counted: $(field before_io "$line") of $(field want "$line"))"
}

fixes_tests() {
	local stock=$1 fixed=$2 kvm_before_perf=${3:-} p t b bin st v s_v s_d line so fo
	local stock_v fixes_v stock_st fixes_st
	fx_dir=$log/fixes
	rm -rf "$fx_dir" && mkdir -p "$fx_dir"
	if [ ! -x "$stock" ] || [ ! -x "$fixed" ]; then
		result 1 "perf-fixes: the tarball's perf and the fixes' perf were built"
		return
	fi

	# 1. libperf: perf_mmap__read_done()
	fixes_libperf stock
	s_v=$lp_verdict s_d=$lp_line
	fixes_libperf fixes
	fixes_row libperf-read-done "$s_v" "$lp_verdict" "stock: $s_d; fixes: $lp_line" \
		"$(grep -h 'FAILED\|read_done' "$fx_dir"/libperf-*.out 2>/dev/null | head -n 10)"

	# 2, 3. The perf shell tests the fixes add (perf test's way: perf on
	# PATH, exit 0 pass, 1 fail, 2 skip).
	mkdir -p "$fx_dir/src" && git init -q "$fx_dir/src"
	for p in "${fixes[@]}"; do
		case $p in /*) ;; *) p=$top/$p ;; esac
		git -C "$fx_dir/src" apply --include='tools/perf/tests/shell/*' "$p" ||
			result 1 "perf-fixes: $(basename "$p"): its perf shell tests extract"
	done
	for t in $(cd "$fx_dir/src" && ls tools/perf/tests/shell/*.sh 2>/dev/null); do
		for b in stock fixes; do
			bin=$stock
			[ $b = fixes ] && bin=$fixed
			(cd "$fx_dir" && PATH=$(dirname "$bin"):$PATH timeout 120 sh "src/$t") \
				> "$fx_dir/${t##*/}.$b.out" 2>&1
			st=$?
			case $st in 0) v=PASS ;; 1) v=FAIL ;; 2) v=SKIP ;; *) v=NOTRUN ;; esac
			eval "${b}_v=\$v ${b}_st=\$st"
		done
		t=${t##*/}
		so=$(grep -v '^$' "$fx_dir/$t.stock.out" | tail -n 1)
		fo=$(grep -v '^$' "$fx_dir/$t.fixes.out" | tail -n 1)
		fixes_row "${t%.sh}" "$stock_v" "$fixes_v" "exit $stock_st and $fixes_st" \
			"$(printf 'stock: %s\nfixes: %s' "$so" "$fo")"
	done

	# 4. perf kvm stat live, in a TCG guest of its own.
	fixes_kvm "$stock" "$fixed" "$kvm_before_perf"

	# 5. perf record --mmap-flush.
	MF_DIR=$top/$fx_dir/mmap-flush \
		timeout 900 sh scripts/guest/perf-mmap-flush.sh "$stock" "$fixed" \
		> "$fx_dir/mmap-flush.out" 2>&1
	st=$?
	line=$(grep '^# perf-record-mmap-flush' "$fx_dir/mmap-flush.out" | tail -n 1)
	echo "${line/perf-record-mmap-flush/perf-fixes-mmap-flush}"
	so=$(sed -n 's/.* stock_ooo=\([0-9]*\) .*/\1/p' <<<"$line")
	fo=$(sed -n 's/.* patched_ooo=\([0-9]*\) .*/\1/p' <<<"$line")
	s_v=NOTRUN
	[ -n "$so" ] && { [ "$so" -gt 0 ] && s_v=FAIL || s_v=PASS; }
	v=NOTRUN
	[ -n "$fo" ] && { [ "$fo" -eq 0 ] && [ $st -eq 0 ] && v=PASS || v=FAIL; }
	fixes_row record-mmap-flush "$s_v" "$v" "out of order: stock ${so:-?}, fixes ${fo:-?}" \
		"$(grep -E '^(not ok|# )' "$fx_dir/mmap-flush.out" | tail -n 10)"
}
