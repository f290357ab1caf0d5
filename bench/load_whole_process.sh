#!/usr/bin/env bash
# Whole-process `amk validate` of generated mesh programs (100k and 1M tasks): seconds, peak
# memory and the load rate (file bytes / wall time), next to the memory streaming read of
# bench_ir in the same run.
#   bench/load_whole_process.sh [BUILD_DIR]   (default build/release)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
amk=$build/cli/amk
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stream=$("$build/bench/bench_ir" --benchmark_filter=BM_MemoryStreamRead --benchmark_format=json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["benchmarks"][0]["bytes_per_second"] / 1e9)')
printf 'memory streaming read: %.1f GB/s\n' "$stream"
for n in 100000 1000000; do
  "$amk" gen --shape mesh --tasks "$n" -o "$work/p.json" >/dev/null 2>&1
  bytes=$(stat -c %s "$work/p.json")
  "$amk" validate --brief "$work/p.json" >/dev/null  # page cache warm, as for a file just written
  best=""
  for _ in 1 2 3; do
    /usr/bin/time -f '%e %M' -o "$work/t" "$amk" validate --brief "$work/p.json" >/dev/null
    read -r s kb <"$work/t"
    if [[ -z $best ]] || awk "BEGIN{exit !($s < ${best% *})}"; then best="$s $kb"; fi
  done
  read -r s kb <<<"$best"
  awk -v n="$n" -v b="$bytes" -v s="$s" -v kb="$kb" -v m="$stream" 'BEGIN {
    printf "%8d tasks, %4.0f MB: amk validate %.2f s whole process (best of 3), peak %.0f MB; %.2f GB/s of file, %.1f%% of the streaming read\n",
      n, b / 1e6, s, kb / 1e3, b / s / 1e9, 100 * b / s / 1e9 / m }'
done
