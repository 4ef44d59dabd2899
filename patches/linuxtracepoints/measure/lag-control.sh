#!/bin/bash
# lag-control.sh ROUNDS SECONDS BUILD...: quiet.sh pinned, ROUNDS rounds
# of every BUILD (BUILD@LAG_MS: a plain build whose round ends are LAG_MS
# older than the clock read, the control for a horizon's age without
# libperfclock), the order rotated each round so that no build always
# runs first; then, per build, the lost records of every run, their
# median and total, CPU ticks per 100,000 samples and, for an
# instrumented build, the mean age of its round ends and how many
# flushes took over 5 ms. BIN as for quiet.sh; instrumented builds have
# instrument.patch applied.
#   lag-control.sh 10 3 stock plain plain@15 plain@60 exact
rounds=$1; secs=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
builds=("$@")
out=${OUT:-/tmp/lag-control}; mkdir -p "$out"
: > "$out/runs.txt"
n=${#builds[@]}
for ((r = 0; r < rounds; r++)); do
	order=()
	for ((k = 0; k < n; k++)); do order+=("${builds[$(( (k + r) % n ))]}"); done
	OUT=$out "$here/quiet.sh" pinned "$secs" "${order[@]}" | tee -a "$out/runs.txt"
done
echo "# lag-control: $rounds rounds of $secs s, pinned (collector on CPU 1, load on CPU 0)"
for b in "${builds[@]}"; do
	awk -v b="$b" 'BEGIN { n = 0 } $1 == b {
		for (i = 2; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] == "lost") lost[n] = kv[2]
			if (kv[1] == "samples") s += kv[2]
			if (kv[1] == "age_mean_us") { age += kv[2]; na++ }
			if (kv[1] == "cpu_ticks") t += kv[2]
			if (kv[1] == "flush_over5ms") { o += kv[2]; no++ }
		}
		n++
	} END {
		# median of the lost counts
		for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (lost[j] + 0 < lost[i] + 0) { x = lost[i]; lost[i] = lost[j]; lost[j] = x }
		m = n % 2 ? lost[int(n / 2)] : (lost[n / 2 - 1] + lost[n / 2]) / 2
		all = ""; tot = 0
		for (i = 0; i < n; i++) { all = all (i ? "," : "") lost[i]; tot += lost[i] }
		printf "# lag-control build=%s runs=%d lost_median=%d lost_total=%d lost_sorted=%s samples=%d cpu_ticks_per_100k=%.1f age_mean_ms=%s flushes_over_5ms=%s\n",
			b, n, m, tot, all, s, s ? t * 100000 / s : 0, na ? sprintf("%.1f", age / na / 1000) : "-", no ? o : "-"
	}' "$out/runs.txt"
done
