#!/usr/bin/env bash
# Whole-process `amk validate` of generated mesh programs (100k and 1M tasks), and the load alone
# (bench/load_program: the same reader and allocator settings, no proof): seconds, peak memory and
# the load rate (file bytes / wall time), next to the memory streaming read of bench_ir measured
# in the same run. Each is run RUNS times (default 5) from a warm page cache: the best and the
# median run.
#   bench/load_whole_process.sh [BUILD_DIR]   (default build/release; RUNS=N to change the count)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
runs=${RUNS:-5}
amk=$build/cli/amk
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stream=$("$build/bench/bench_ir" --benchmark_filter=BM_MemoryStreamRead --benchmark_format=json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["benchmarks"][0]["bytes_per_second"] / 1e9)')
printf 'memory streaming read: %.1f GB/s\n' "$stream"

# timed LABEL COMMAND...: runs COMMAND $runs times; prints the fastest and the median run's
# seconds (and the fastest run's peak memory) with the load rates they come to.
timed() {
  local label=$1 t0 t1
  shift
  : >"$work/runs"
  for ((i = 0; i < runs; ++i)); do
    t0=$(date +%s%N)  # nanoseconds: /usr/bin/time's %e has only hundredths
    /usr/bin/time -f '%M' -o "$work/t" "$@" >/dev/null
    t1=$(date +%s%N)
    echo "$(((t1 - t0) / 1000)) $(cat "$work/t")" >>"$work/runs"
  done
  sort -n "$work/runs" | awk -v l="$label" -v b="$bytes" -v m="$stream" -v r="$runs" '
    { s[NR] = $1 / 1e6; kb[NR] = $2 }
    END {
      med = (NR % 2) ? s[(NR + 1) / 2] : (s[NR / 2] + s[NR / 2 + 1]) / 2
      printf "  %-13s best of %d %6.3f s (%.2f GB/s of file, %.1f%% of the streaming read), peak %4.0f MB; median %6.3f s (%.2f GB/s)\n",
        l, r, s[1], b / s[1] / 1e9, 100 * b / s[1] / 1e9 / m, kb[1] / 1e3, med, b / med / 1e9 }'
}

for n in 100000 1000000; do
  "$amk" gen --shape mesh --tasks "$n" -o "$work/p.json" >/dev/null 2>&1
  bytes=$(stat -c %s "$work/p.json")
  "$amk" validate --brief "$work/p.json" >/dev/null  # page cache warm, as for a file just written
  printf '%d tasks, %.0f MB:\n' "$n" "$(awk -v b="$bytes" 'BEGIN{print b / 1e6}')"
  timed "load alone" "$build/bench/load_program" "$work/p.json"
  timed "amk validate" "$amk" validate --brief "$work/p.json"
done
