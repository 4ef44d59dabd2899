#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Make sure the tools 'make check' uses are here: clang with the
# libFuzzer/ASan/UBSan runtimes (Debian: clang, libclang-rt-14-dev) and
# valgrind. Installs what is missing with apt-get when run as root;
# idempotent: does nothing (and says so) when everything is present.
# Prints only "# " lines; never fails (check.sh skips what is missing).

CLANG=${CLANG:-clang}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

have_fuzzer() {
	printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n)\n{ (void)d; (void)n; return 0; }\n' > "$tmp/f.c"
	"$CLANG" -fsanitize=fuzzer,address,undefined -o "$tmp/f" "$tmp/f.c" \
		>/dev/null 2>&1
}

missing=""
command -v "$CLANG" >/dev/null 2>&1 || missing="$missing clang"
if command -v "$CLANG" >/dev/null 2>&1 && ! have_fuzzer; then
	missing="$missing libclang-rt-14-dev"
fi
command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"

if [ -z "$missing" ]; then
	echo "# tools: clang (libFuzzer, ASan, UBSan) and valgrind present, nothing to install"
	exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "# tools: missing:$missing (not root or no apt-get: the steps that need them will SKIP)"
	exit 0
fi
echo "# tools: installing with apt-get:$missing"
if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing \
	>"$tmp/apt.log" 2>&1; then
	echo "# tools: apt-get install failed; trying apt-get update first"
	DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null 2>&1
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing \
		>"$tmp/apt.log" 2>&1 ||
		sed 's/^/# apt: /' "$tmp/apt.log" | tail -5
fi
exit 0
