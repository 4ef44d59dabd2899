#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/demo-plot.sh — render the flush rules' results from demo_flush
# --json summaries as one PNG (gnuplot): late events per rule, and hold
# latency (p50 and p99) per rule, one bar per summary (clock regime).
#
#   scripts/demo-plot.sh [-o OUT.png] JSON...
#
# Default JSON: those of build/demo/{host,stable,unstable}.json that exist
# (what scripts/demo.sh leaves); default output: build/demo/demo.png. Each
# summary's "label" names its bars (else the file name). Prints the table
# it plotted. Needs gnuplot (scripts/deps.sh bench).
set -euo pipefail
cd "$(dirname "$0")/.."

out=build/demo/demo.png
if [ "${1:-}" = -o ]; then
	out=$2
	shift 2
fi
if [ $# -eq 0 ]; then
	for f in build/demo/host.json build/demo/stable.json build/demo/unstable.json; do
		[ ! -s "$f" ] || set -- "$@" "$f"
	done
	[ $# -gt 0 ] || { echo "demo-plot.sh: no summaries in build/demo; run scripts/demo.sh" >&2; exit 1; }
fi
command -v gnuplot >/dev/null || { echo "demo-plot.sh: gnuplot missing; run scripts/deps.sh bench" >&2; exit 1; }

rules="ours ours-gp ahern perf-old schuchart kvm-live"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One value of a rule's line in demo_flush's JSON ("rules" has one object
# per line): field FIELD of rule RULE in FILE.
rule_field() { # FILE RULE FIELD
	grep -F "{\"name\": \"$2\"," "$1" | head -n 1 |
		sed -n "s/.*\"$3\": \([0-9][0-9]*\).*/\1/p"
}

labels=() samples=()
for f in "$@"; do
	[ -s "$f" ] || { echo "demo-plot.sh: $f missing or empty" >&2; exit 1; }
	l=$(sed -n 's/^  "label": "\(.*\)",$/\1/p' "$f")
	[ -n "$l" ] || l=$(basename "$f" .json)
	labels+=("$l")
	samples+=("$(sed -n 's/^  "samples": \([0-9]*\),$/\1/p' "$f")")
done

# data.tsv: rule, then per summary: late, hold p50 (ms), hold p99 (ms).
{
	printf 'rule'
	for l in "${labels[@]}"; do printf '\tlate_%s\tp50_%s\tp99_%s' "$l" "$l" "$l"; done
	printf '\n'
	for r in $rules; do
		printf '%s' "$r"
		for f in "$@"; do
			late=$(rule_field "$f" "$r" late)
			p50=$(grep -F "{\"name\": \"$r\"," "$f" | sed -n 's/.*"p50": \([0-9]*\).*/\1/p')
			p99=$(grep -F "{\"name\": \"$r\"," "$f" | sed -n 's/.*"p99": \([0-9]*\).*/\1/p')
			awk -v a="${late:-0}" -v b="${p50:-0}" -v c="${p99:-0}" \
				'BEGIN { printf "\t%d\t%.4f\t%.4f", a, b / 1e6, c / 1e6 }'
		done
		printf '\n'
	done
} > "$tmp/table.tsv"
column -t "$tmp/table.tsv" 2>/dev/null || cat "$tmp/table.tsv"
# gnuplot gets the rows without the header line.
sed 1d "$tmp/table.tsv" > "$tmp/data.tsv"

n=$#
title="demo_flush: the flush rules on the same live events ("
for i in "${!labels[@]}"; do
	[ "$i" -eq 0 ] || title="$title, "
	title="$title${labels[$i]}: ${samples[$i]} events"
done
title="$title)"

mkdir -p "$(dirname "$out")"
{
	cat <<EOF
set terminal pngcairo size 1400,560 font "DejaVu Sans,11" noenhanced
set output "$out"
set datafile separator "\t"
set multiplot layout 1,2 title "$title"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key below horizontal
set grid ytics
set xtics nomirror
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0
set title "late events (delivered after a later one was emitted)"
set ylabel "late events"
EOF
	printf 'plot '
	for ((i = 0; i < n; i++)); do
		c=$((2 + 3 * i))
		[ $i -eq 0 ] || printf ', '
		if [ $i -eq 0 ]; then
			printf '"%s" using %d:xtic(1) title "%s"' "$tmp/data.tsv" "$c" "${labels[$i]}"
		else
			printf '"" using %d title "%s"' "$c" "${labels[$i]}"
		fi
	done
	# The count above each bar, so that a zero is visible as a zero.
	for ((i = 0; i < n; i++)); do
		c=$((2 + 3 * i))
		printf ', "" using ($0 + (%d - (%d - 1) / 2.0) / (%d + 1.0)):%d:(sprintf("%%d", $%d)) with labels offset 0,0.7 notitle' \
			"$i" "$n" "$n" "$c" "$c"
	done
	printf '\n'
	cat <<EOF
set title "hold latency: event timestamp to delivery (solid p50, light p99)"
set ylabel "milliseconds (log scale)"
set logscale y
set yrange [0.01:*]
set offsets 0, 0, 0, 0
EOF
	printf 'plot '
	for ((i = 0; i < n; i++)); do
		c=$((3 + 3 * i))
		[ $i -eq 0 ] || printf ', '
		if [ $i -eq 0 ]; then
			printf '"%s" using %d:xtic(1) title "p50 %s" lc %d' "$tmp/data.tsv" "$c" "${labels[$i]}" $((i + 1))
		else
			printf '"" using %d title "p50 %s" lc %d' "$c" "${labels[$i]}" $((i + 1))
		fi
		printf ', "" using %d title "p99 %s" lc %d fs transparent solid 0.35' $((c + 1)) "${labels[$i]}" $((i + 1))
	done
	printf '\nunset multiplot\n'
} > "$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
echo "demo-plot.sh: wrote $out"
