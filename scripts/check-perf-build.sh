# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2154 # check-perf.sh's variables, set before these run
#
# scripts/check-perf-build.sh — the perf builds of scripts/check-perf.sh,
# sourced by it (functions only; its "perf builds" section says what is
# built and how it is cached):
#   patch_diffs PATCH...        the code of patches, not their messages
#   hash16                      stdin's sha256, 16 hex digits
#   chain CONFIG FIRST KEEP...  the series built step by step, as an
#                               incremental chain (nolib or lib)
#   build_perf NAME PATCH...    perf in its default configuration
# They use check-perf.sh's state (log, CACHE, src, patches, pkey, nsteps,
# base_key, lib_key, chain_bin ...) and its result, phase and ensure_lib.

# The code a series changes, not its commit messages: rewording a patch
# does not rebuild perf.
patch_diffs() {
	local p
	for p in "$@"; do
		sed -n '/^diff --git/,$p' "$p" | sed '/^-- $/,$d'
	done
}
hash16() { sha256sum | cut -c1-16; }

# chain CONFIG FIRST KEEP...: builds steps FIRST..N of the series in
# configuration CONFIG (nolib or lib), applying the ones before FIRST
# unbuilt; the binaries of the steps KEEP are kept, and chain_bin[k] set
# to them. Prints one TAP result per step built.
chain() {
	local cfg=$1 first=$2 keep=" ${*:3} " flags=($STATIC_FLAGS WERROR=1) dir ckey k i j st t0 t1
	local line tree need=0 lk desc applied_n unbuilt=()
	case $cfg in
	nolib) flags+=(NO_LIBPERFCLOCK=1) ;;
	lib)   flags+=(LIBPERFCLOCK=1) ;;
	esac
	ckey=$( { echo "$base_key ${flags[*]}"; [ "$cfg" = lib ] && echo "lib $lib_key"; } | hash16)
	dir=$CACHE/perf-chain-$cfg-$ckey
	mkdir -p "$dir/steps" "$dir/bin"
	# Other keys of this configuration are stale (another library, gcc
	# or recipe): a chain tree is 1 GB.
	for old in "$CACHE"/perf-chain-$cfg-*; do
		[ "$old" = "$dir" ] || rm -rf "$old"
	done
	# Binaries of steps no longer in the series (22 MB each).
	for old in "$dir"/bin/*; do
		[ -d "$old" ] || continue
		case " ${pkey[*]} " in *" ${old##*/} "*) ;; *) rm -rf "$old" ;; esac
	done
	tree=$dir/tree
	step_ok() { [ -f "$dir/steps/${pkey[$1]}.ok" ] &&
		{ case $keep in *" $1 "*) [ -x "$dir/bin/${pkey[$1]}/perf" ] ;; esac; }; }
	# The first step to build: the tree must be at the step before it.
	for ((k = first; k <= nsteps; k++)); do
		step_ok "$k" || { need=1; break; }
	done
	t0=$(date +%s)
	if [ $need -eq 1 ]; then
		# The tree: the tarball's perf plus the patches in applied/.
		if [ ! -f "$tree/.ok" ]; then
			rm -rf "$tree" && mkdir -p "$tree/out" "$tree/applied"
			cp -a "$src" "$tree/src"
			: > "$tree/applied.list"
			touch "$tree/.ok"
		fi
		# Its longest prefix in common with the series.
		j=0
		while read -r i lk; do
			[ "$i" -eq $((j + 1)) ] && [ "$i" -lt "$k" ] && [ "$lk" = "${pkey[$i]}" ] || break
			j=$i
		done < "$tree/applied.list"
		applied_n=$(wc -l < "$tree/applied.list")
		for ((i = applied_n; i > j; i--)); do
			if ! patch -d "$tree/src" -p1 -R -s -E --no-backup-if-mismatch \
				< "$tree/applied/$i.patch" >> "$log/chain-$cfg-patch.log" 2>&1; then
				echo "# chain $cfg: taking patch $i back failed: a new tree"
				rm -rf "$tree"
				chain "$@"
				return
			fi
		done
		head -n "$j" "$tree/applied.list" > "$tree/applied.list.new"
		mv "$tree/applied.list.new" "$tree/applied.list"
		[ $j -lt "$applied_n" ] && echo "# chain $cfg: tree taken back from step $applied_n to $j"
	fi
	for ((k = 0; k <= nsteps; k++)); do
		if [ "$k" -eq 0 ]; then
			desc="build $cfg 0/$nsteps (the tarball)"
		else
			desc="build $cfg $k/$nsteps $(basename "${patches[$((k - 1))]}")"
		fi
		if [ $need -eq 1 ] && [ "$k" -gt "$j" ]; then
			if ! patch -d "$tree/src" -p1 -s -E --no-backup-if-mismatch --dry-run \
				< "${patches[$((k - 1))]}" >> "$log/chain-$cfg-patch.log" 2>&1; then
				result 1 "$desc: applies"
				for ((i = k + 1; i <= nsteps; i++)); do
					[ "$i" -ge "$first" ] && result 1 "build $cfg $i/$nsteps: not built (patch $k does not apply)"
				done
				break
			fi
			patch -d "$tree/src" -p1 -s -E --no-backup-if-mismatch \
				< "${patches[$((k - 1))]}" >> "$log/chain-$cfg-patch.log" 2>&1
			cp "${patches[$((k - 1))]}" "$tree/applied/$k.patch"
			echo "$k ${pkey[$k]}" >> "$tree/applied.list"
		fi
		[ "$k" -ge "$first" ] || continue
		# PERF_STEPS=kept: the binaries the checks run, no other step.
		if [ "${PERF_STEPS:-every}" = kept ] && [[ $keep != *" $k "* ]] && ! step_ok "$k"; then
			unbuilt+=("$k")
			continue
		fi
		if step_ok "$k"; then
			result 0 "$desc: builds with WERROR=1 (cached)"
		else
			t1=$(date +%s)
			for try in 1 2; do
				[ "$cfg" = lib ] && ensure_lib
				make -C "$tree/src/tools/perf" O="$tree/out" -j"$JOBS" "${flags[@]}" \
					"$tree/out/perf" > "$log/chain-$cfg-$k.log" 2>&1
				st=$?
				# Once more if the library went away during the build.
				[ $st -ne 0 ] && [ "$cfg" = lib ] && ! ensure_lib || break
			done
			[ $st -eq 0 ] ||
				grep -E 'error|Error|\*\*\*' "$log/chain-$cfg-$k.log" | head -n 20 | sed 's/^/# /'
			result $st "$desc: builds with WERROR=1 ($(( $(date +%s) - t1 )) s)"
			if [ $st -eq 0 ]; then
				case $keep in *" $k "*)
					mkdir -p "$dir/bin/${pkey[$k]}"
					cp "$tree/out/perf" "$dir/bin/${pkey[$k]}/perf"
				esac
				touch "$dir/steps/${pkey[$k]}.ok"
			fi
			# The lib chain compiled against the package's header
			# (fixdep's .cmd files list every header an object included).
			if [ "$cfg" = lib ] && [ "$k" -eq "$nsteps" ] && [ $st -eq 0 ]; then
				grep -rlq --include='*.cmd' '/usr/include/perfclock/libperfclock\.h' "$tree/out"
				result $? "build lib: perf includes /usr/include/perfclock/libperfclock.h (libperfclock-dev)"
			fi
		fi
		case $keep in *" $k "*)
			# shellcheck disable=SC2034,SC2004 # check-perf.sh's associative array
			[ -x "$dir/bin/${pkey[$k]}/perf" ] && chain_bin[$cfg:$k]=$dir/bin/${pkey[$k]}/perf
		esac
	done
	[ ${#unbuilt[@]} -eq 0 ] ||
		skip_result "build $cfg: steps ${unbuilt[*]} of $nsteps with WERROR=1" \
			"PERF_STEPS=kept builds only the steps the checks run (${keep:1:-1}); make check-perf builds every step"
	phase "chain-$cfg" $(( $(date +%s) - t0 ))
}

# build_perf NAME PATCH...: perf in its default configuration (dynamic,
# every feature this machine has) with the whole series, to prove the
# series builds there; sets $perf_bin to the binary. Cached whole, in
# $CACHE/perf-KEY.
build_perf() {
	local name=$1 kind=full-patched key tree st t0
	shift
	# shellcheck disable=SC2086 # SRC_PKG: check-perf.sh's package name, one word
	key=$( { echo "$stamp"; dpkg-query -W -f='${Version}\n' $SRC_PKG 2>/dev/null;
		patch_diffs "$@"; echo "$kind $gcc_v recipe $RECIPE"; echo "lib $lib_key"; } | hash16)
	tree=$CACHE/perf-$key
	# shellcheck disable=SC2034 # read by check-perf.sh
	perf_bin=$tree/out/perf
	if [ -f "$tree/.perfclock-built" ]; then
		result 0 "$name perf (cached, $tree)"
		return 0
	fi
	rm -rf "$tree" && mkdir -p "$tree/out"
	cp -a "$src" "$tree/src"
	st=0
	for p in "$@"; do
		patch -d "$tree/src" -p1 -s -E --no-backup-if-mismatch < "$p" >> "$log/$name-patch.log" 2>&1 ||
			{ echo "# $p does not apply"; st=1; }
	done
	result $st "$name: ${#@} patches apply to $TOPDIR"
	[ $st -eq 0 ] || return 1
	t0=$(date +%s)
	# Only the perf binary: the python binding, perf-read-vdso32, the
	# JIT agent and the dlfilters that "make all" adds don't include the
	# series' code. LIBPERFCLOCK=1 for the opt-in switch; auto-detection
	# finds the installed package by itself.
	for try in 1 2; do
		ensure_lib
		make -C "$tree/src/tools/perf" O="$tree/out" -j"$JOBS" NO_LIBBFD=1 WERROR=0 \
			LIBPERFCLOCK=1 "$tree/out/perf" > "$log/$name-build.log" 2>&1
		st=$?
		[ $st -ne 0 ] && ! ensure_lib || break
	done
	[ $st -eq 0 ] || grep -E 'error|Error|\*\*\*' "$log/$name-build.log" | head -n 20 | sed 's/^/# /'
	result $st "$name perf builds ($kind, $(( $(date +%s) - t0 )) s)"
	[ $st -eq 0 ] || return 1
	grep -rlq --include='*.cmd' '/usr/include/perfclock/libperfclock\.h' "$tree/out"
	result $? "$name perf includes /usr/include/perfclock/libperfclock.h (libperfclock-dev)"
	rm -rf "$tree/src"	# the objects and the binary are what is reused
	touch "$tree/.perfclock-built"
}
