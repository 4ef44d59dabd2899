# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2154 # check-perf.sh's variables, set before these run
#
# scripts/check-perf-report.sh — how scripts/check-perf.sh reads its runs:
# the PERF* lines scripts/guest/perf.sh and scripts/guest/perf-top.sh
# print, turned into "# perf-trace", "# perf-lag", "# perf-top" and
# "# perf-record" lines and TAP results. Sourced by check-perf.sh
# (functions only):
#   num, lag, field             one value out of such a line
#   report WHERE REGIME FILE [top]  perf trace's (or perf top's) run pairs
#   report_record GUEST FILE    perf record's runs of one boot
# They count into check-perf.sh's stock_seen, stock_top_seen,
# stock_rec_seen and compat_rec_seen, and read its order_check_state.

# field LINE NAME: the number after "NAME" in perf's "Sorted events:" line.
num() { echo "$1" | sed -n "s/.* \([0-9][0-9.]*\) $2.*/\1/p"; }
lag() { echo "$1" | sed -n "s/.*$2 \([0-9.]*\) ms.*/\1/p"; }
# report WHERE REGIME FILE [top]: the PERFRUN lines of one run of
# scripts/guest/perf.sh (perf trace), or with "top" the PERFTOP lines of
# scripts/guest/perf-top.sh (perf top: one "# perf-top" line per run pair,
# its lag on the same line).
report() {
	local where=$1 regime=$2 file=$3 tool=${4:-trace} pairs sc be s p so po ev se rule desc st sl pl
	local runl=PERFRUN rulel=PERFRULE counts lags
	[ "$tool" = top ] && runl=PERFTOP rulel=PERFTOPRULE
	pairs=$(sed -n "s/^$runl scenario=\([^ ]*\) backend=\([^ ]*\) .*/\1:\2/p" "$file" | sort -u)
	for pair in $pairs; do
		sc=${pair%:*} be=${pair#*:}
		s=$(grep "^$runl scenario=$sc backend=$be build=stock " "$file" | tail -n 1)
		p=$(grep "^$runl scenario=$sc backend=$be build=patched " "$file" | tail -n 1)
		rule=$(grep "^$rulel scenario=$sc backend=$be build=patched " "$file" | tail -n 1 |
			sed 's/.*Flushed at: //')
		so=$(num "$s" 'out of order') po=$(num "$p" 'out of order')
		ev=$(num "$p" 'events,') se=$(num "$s" 'events,')
		sl=$(num "$s" lost) pl=$(num "$p" lost)
		counts="stock_ooo=${so:-?} patched_ooo=${po:-?} stock_lost=$sl patched_lost=$pl events=${ev:-?}"
		lags="stock_lag_mean_ms=$(lag "$s" mean) stock_lag_max_ms=$(lag "$s" max) patched_lag_mean_ms=$(lag "$p" mean) patched_lag_max_ms=$(lag "$p" max) stock_events=$se patched_rule=\"$rule\""
		if [ "$tool" = top ]; then
			echo "# perf-top scenario=$sc regime=$regime backend=$be $counts $lags"
			[ -n "$so" ] && [ "$so" -gt 0 ] && stock_top_seen=$((stock_top_seen + 1))
		else
			echo "# perf-trace scenario=$sc regime=$regime backend=$be $counts"
			echo "# perf-lag scenario=$sc regime=$regime backend=$be $lags"
			[ -n "$so" ] && [ "$so" -gt 0 ] && stock_seen=$((stock_seen + 1))
		fi
		desc="$where $regime $sc $be"
		st=1
		[ -n "$so" ] && [ "$se" -gt 0 ] 2>/dev/null && st=0
		result $st "$desc: stock perf $tool ran (${so:-no} out-of-order events)"
		st=1
		[ -n "$po" ] && [ "$po" -eq 0 ] && [ "${ev:-0}" -gt 0 ] && st=0
		result $st "$desc: patched perf $tool ran with no out-of-order event (${po:-no run}, ${ev:-0} events)"
		# Records lost (the kernel's PERF_RECORD_LOST sums the tool
		# prints) beside the records delivered, both builds: issue 37's
		# item 7 asks for no more lost than stock. Not asserted (the
		# cause is in patch 11 and docs/perf-client.md, "Records
		# lost"): on the KVM host the load slows by each record
		# written, and its length is set by the few per cent of CPU
		# left to it, which prompt delivery raises: half the length,
		# half the records ("where the CPU goes"); and a ring's
		# losses are reported only with the next record that fits
		# (kernel/events/ring_buffer.c: __perf_output_begin()), so the
		# losses after a reader's last read of a ring are never told:
		# *_accounted (delivered + lost) shows how much of the load
		# each build heard of: in the TCG guests up to four times
		# more for one build than the other on the same load.
		[ -n "$sl" ] && [ -n "$pl" ] &&
			echo "# perf-lost tool=$tool where=$where regime=$regime scenario=$sc backend=$be stock_lost=$sl patched_lost=$pl stock_events=$se patched_events=${ev:-?} stock_accounted=$((sl + ${se:-0})) patched_accounted=$((pl + ${ev:-0}))"
		# Every horizon is exact: the device backend's; -k mono's with
		# the module loaded (libperfclock takes the clockid's horizon
		# from it); and -k mono's without the module (mono-nomod in the
		# guest, the host): libperfclock's membarrier horizon; and
		# mono-nolib's, perf's own membarrier horizon (no library).
		case $where:$be in
		guest:*|*:device|host:mono|host:mono-nolib)
			echo "$rule" | grep -q 'exact'
			result $? "$desc: patched perf $tool used an exact horizon ($rule)"
			;;
		esac
	done
}

# field NAME LINE: the value of NAME=VALUE in a PERF* line.
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
# report_record GUEST FILE: the perf record runs of one boot
# (scripts/guest/perf.sh's PERFREC/PERFREAD/PERFOE/PERFNEW lines).
report_record() {
	local guest=$1 file=$2 pairs pair sc be tag desc st ss sp ps pp oe_ps oe_pp
	local so po co peak_c peak_p rule_p rule_s new rec_s rec_p oe_ooo oe_ss oc
	local queued_p target
	pairs=$(sed -n 's/^PERFREC scenario=\([^ ]*\) backend=\([^ ]*\) .*/\1:\2/p' "$file" | sort -u)
	for pair in $pairs; do
		sc=${pair%:*} be=${pair#*:}
		tag="scenario=$sc backend=$be"
		desc="$guest record $sc $be"
		rec_s=$(grep "^PERFREC $tag file=stock " "$file" | tail -n 1)
		rec_p=$(grep "^PERFREC $tag file=patched " "$file" | tail -n 1)
		ss=$(grep "^PERFREAD $tag file=stock reader=stock " "$file" | tail -n 1)
		sp=$(grep "^PERFREAD $tag file=stock reader=patched " "$file" | tail -n 1)
		ps=$(grep "^PERFREAD $tag file=patched reader=stock " "$file" | tail -n 1)
		pp=$(grep "^PERFREAD $tag file=patched reader=patched " "$file" | tail -n 1)
		oe_ps=$(grep "^PERFOE $tag file=patched reader=stock " "$file" | tail -n 1)
		oe_pp=$(grep "^PERFOE $tag file=patched reader=patched " "$file" | tail -n 1)
		oe_ss=$(grep "^PERFOE $tag file=stock reader=stock " "$file" | tail -n 1)
		so=$(field ooo "$ss") po=$(field ooo "$pp") co=$(field ooo "$ps")
		peak_c=$(sed -n 's/.* peak \([0-9]*\) queued.*/\1/p' <<<"$oe_ps")
		peak_p=$(sed -n 's/.* peak \([0-9]*\) queued.*/\1/p' <<<"$oe_pp")
		rule_p=$(sed -n 's/.*flushed at: //p' <<<"$oe_pp")
		rule_s=$(sed -n 's/.*flushed at: //p' <<<"$oe_ss")
		echo "# perf-record regime=$guest scenario=$sc backend=$be stock_ooo=${so:-?} patched_ooo=${po:-?} compat_ooo=${co:-?} compat_peak=${peak_c:-?} patched_peak=${peak_p:-?} compat_s=$(field script_s "$ps") patched_s=$(field script_s "$pp") events=$(field lines "$pp") stock_events=$(field lines "$ss") stock_below=$(field below "$ss") bytes=$(field bytes "$rec_s")/$(field bytes "$rec_p") rule=\"${rule_p:-none}\""
		[ -n "$so" ] && [ "$so" -gt 0 ] && stock_rec_seen=$((stock_rec_seen + 1))
		[ -n "$co" ] && [ "$co" -gt 0 ] && compat_rec_seen=$((compat_rec_seen + 1))
		[ "$(field rc "$rec_s")" = 0 ] && [ "$(field bytes "$rec_s")" -gt 0 ] 2>/dev/null
		result $? "$desc: stock perf record ran ($(field bytes "$rec_s") bytes, $(field seconds "$rec_s") s)"
		[ "$(field rc "$rec_p")" = 0 ] && [ "$(field bytes "$rec_p")" -gt 0 ] 2>/dev/null
		result $? "$desc: patched perf record --flush-horizon ran ($(field bytes "$rec_p") bytes, $(field seconds "$rec_p") s)"
		# Patched + patched: nothing out of order, by perf's counter
		# (perf script's warning, and the report line's count) and by
		# the text of perf script's output.
		oe_ooo=$(sed -n 's/.*, \([0-9]*\) out of order.*/\1/p' <<<"$oe_pp")
		[ "$(field rc "$pp")" = 0 ] && [ "${po:-x}" = 0 ] && [ "${oe_ooo:-0}" = 0 ] &&
			[ "$(field lines "$pp")" -gt 0 ] 2>/dev/null
		result $? "$desc: patched file read by patched perf: 0 out of order (perf script ${po:-?}, report line ${oe_ooo:-none}; $(field lines "$pp") events)"
		oc=$(field order_check "$pp")
		[ "$(field below "$pp")" = 0 ] && [ "$(field lines "$pp")" -gt 0 ] 2>/dev/null &&
			case ${oc:--} in -|0) true ;; *) false ;; esac
		result $? "$desc: patched perf script output in timestamp order (scripts/guest/perf-order.awk: $(field below "$pp") of $(field lines "$pp") lines below the one before; scripts/perf-order-check.sh: $(case ${oc:--} in -) echo "not run ($order_check_state)" ;; *) echo "$oc out of order" ;; esac))"
		# A stock file: read the same by both builds.
		[ -n "$ss" ] && [ "$(field md5 "$ss")" = "$(field md5 "$sp")" ] &&
			[ "$(field stats_md5 "$ss")" = "$(field stats_md5 "$sp")" ] &&
			[ "$(field ooo "$ss")" = "$(field ooo "$sp")" ] && [ "$(field rc "$sp")" = 0 ]
		result $? "$desc: stock file read identically by stock and patched perf (perf script output $(field md5 "$ss" | cut -c1-8)/$(field md5 "$sp" | cut -c1-8), report --stats, ${so:-?}/$(field ooo "$sp") out of order)"
		# A patched file read by stock perf: as a stock file is.
		new=$(grep "^PERFNEW $tag " "$file" | sed "s/^PERFNEW $tag //")
		[ -n "$ps" ] && [ "$(field rc "$ps")" = 0 ] && [ -z "$new" ]
		result $? "$desc: patched file read by stock perf (script, report --stats, inject): no new warning (rc $(field rc "$ps"), $co out of order)" "$new"
		# The queue the horizon holds. Asserted: the reader delivered
		# events before the end of the file, so its horizons moved (a
		# reader that holds everything to the end is never out of order
		# either). Measured, not asserted: its peak against stock's
		# round rule on the same file, with the target the series was
		# built to (at most 10 % above). That ratio follows the age of
		# the horizons, which follows the guest's scheduling: the
		# membarrier reader (nolib) gave 0.79-1.13 in six runs on
		# 7 December 2026, 1.13 in CI (docs/check-perf.md).
		queued_p=$(sed -n 's/.*Ordered events: \([0-9]*\) events queued.*/\1/p' <<<"$oe_pp")
		if [ -n "$peak_c" ] && [ -n "$peak_p" ] && [ -n "$queued_p" ]; then
			[ "$peak_p" -lt "$queued_p" ]
			result $? "$desc: the patched reader delivered events before the end of the file (peak $peak_p of $queued_p queued)"
			if [ $((peak_p * 10)) -le $((peak_c * 11)) ]; then target=PASS; else target=MISS; fi
			echo "# perf-record-peak regime=$guest scenario=$sc backend=$be patched_peak=$peak_p stock_rule_peak=$peak_c ratio=$(awk -v a="$peak_p" -v b="$peak_c" 'BEGIN { printf "%.2f", a / b }') target=\"at most 1.10\" $target (measured, not asserted; perf script $(field script_s "$pp") s vs $(field script_s "$ps") s)"
		else
			result 1 "$desc: both readers print the ordered-events report (peak queue: patched ${peak_p:-none} of ${queued_p:-none} queued, stock ${peak_c:-none})"
		fi
		grep -q 'recorded horizons' <<<"$rule_p"
		result $? "$desc: the patched reader flushed at the recorded horizons (${rule_p:-no report line})"
		# A reader outside perf that insists on an 8-byte FINISHED_ROUND
		# (linux-perf-data, samply's importer) reads both files.
		for f in stock patched; do
			st=$(grep "^PERFSTRICT $tag file=$f " "$file" | tail -n 1)
			[ "$(field rc "$st")" = 0 ]
			result $? "$desc: the $f file passes tools/perf-data-strict ($(sed -n 's/^PERFSTRICT .* rc=[0-9]* //p' <<<"${st:-PERFSTRICT rc=0 no PERFSTRICT line}"))"
		done
	done
}
