#!/usr/bin/env bash
# Temporary: which test leaves an arrayport Stream alive at exit (nanobind's leak report)?
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
CMAKE_BUILD_PARALLEL_LEVEL=16 python3 -m pip install --no-build-isolation -q . 2>&1 | tail -3
leaky() { timeout 300 python3 -m pytest -q -p no:cacheprovider -x "$@" > /tmp/leak.log 2>&1; grep -q "leaked [0-9]* instances" /tmp/leak.log; }
culprit=""
for f in tests/python/test_array.py tests/python/test_array_copy.py tests/python/test_cuda.py tests/python/test_consume.py tests/python/test_ops.py tests/python/test_array_views.py tests/python/test_examples.py; do
  t0=$(date +%s)
  if leaky $f; then echo "LEAK in $f ($(( $(date +%s)-t0 )) s)"; [ -z "$culprit" ] && culprit=$f; else echo "clean $f ($(( $(date +%s)-t0 )) s)"; fi
done
[ -z "$culprit" ] && exit 0
mapfile -t ids < <(python3 -m pytest --collect-only -q -p no:cacheprovider $culprit 2>/dev/null | grep "::")
echo "${#ids[@]} tests in $culprit"
while [ ${#ids[@]} -gt 1 ]; do
  half=$(( ${#ids[@]} / 2 ))
  first=("${ids[@]:0:half}"); second=("${ids[@]:half}")
  if leaky "${first[@]}"; then ids=("${first[@]}"); elif leaky "${second[@]}"; then ids=("${second[@]}"); else echo "needs both halves"; break; fi
  echo "narrowed to ${#ids[@]}"
done
printf 'CULPRIT %s\n' "${ids[@]}" | head -20
grep -A3 "leaked" /tmp/leak.log | head
