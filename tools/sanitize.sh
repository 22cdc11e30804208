#!/usr/bin/env bash
# Build cyscatter with AddressSanitizer + UndefinedBehaviorSanitizer (CYSCATTER_SANITIZE=1) in a scratch copy of
# the working tree, so the normal in-place build is left alone, and run the tests against it.
#
#   tools/sanitize.sh                          # the suite (see the default below)
#   tools/sanitize.sh tests/robustness/test_hostile.py    # any pytest arguments
#
# CPython itself is not instrumented, so the ASan runtime is preloaded, and its leak checker is off: the
# interpreter keeps memory alive at exit on purpose; a failed allocation returns NULL (the tests ask NumPy for
# 8 TiB and expect a MemoryError). Any ASan or UBSan report aborts the run (non-zero exit); pass -s to see it.
# CYSCATTER_SANITIZE_DIR=DIR keeps the copy (and its build) in DIR for a rerun.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${CYSCATTER_SANITIZE_DIR:-$(mktemp -d -t cyscatter-sanitize.XXXXXX)}"
mkdir -p "$work"
echo "sanitizer build in $work"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents --preserve=timestamps -t "$work")
cd "$work"
CYSCATTER_SANITIZE=1 python setup.py -q build_ext --inplace
so="$(ls cyscatter/kernels*.so)"
nm -D "$so" | grep __asan_ >/dev/null || { echo "error: $so is not instrumented" >&2; exit 1; }

# libstdc++ too: C++ extensions that throw (matplotlib's ft2font) otherwise trip ASan's __cxa_throw interceptor
export LD_PRELOAD="$("${CC:-gcc}" -print-file-name=libasan.so) $("${CC:-gcc}" -print-file-name=libstdc++.so)"
export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:abort_on_error=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export PYTHONMALLOC=malloc   # every Python allocation through malloc, so ASan sees them too
if [ "$#" -eq 0 ]; then
    # not here: a LocalCluster's worker processes stall under ASan, and nvcc segfaults with libasan preloaded
    set -- tests -m "not stress and not distributed" --ignore=tests/toolchain/test_cuda_build.py
fi
python -m pytest -q -p no:cacheprovider "$@"
