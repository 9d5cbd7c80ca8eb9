#!/usr/bin/env bash
# Measures what BENCHMARKS.md reports, on this machine, at this commit:
#   1. perft against cozy-chess side by side (cargo bench, medians of C960_BENCH_RUNS runs);
#   2. the perft hash table: SP 518 to depth 7 on one thread, 256 MiB table vs none;
#   3. threads: SP 518 to depth 7 without a table, 1 vs 2 threads;
#   4. peak RSS of each run (GNU time).
# Usage: scripts/bench.sh [RUNS]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "commit:  $(git rev-parse --short HEAD)"
echo
C960_BENCH_RUNS=$runs cargo bench -q -p c960-common --bench perft_vs_cozy 2>/dev/null
cargo build -q --release -p c960-worker
worker=target/release/c960-worker

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
measure() { # label, args...: prints the median wall seconds, user seconds and max RSS
    local label=$1; shift
    local walls=() users=() rss=0
    for _ in $(seq "$runs"); do
        out=$( { /usr/bin/time -f '%e %U %M' "$worker" perft --sp 518 --depth 7 "$@" >/dev/null; } 2>&1 | tail -1)
        read -r w u m <<<"$out"
        walls+=("$w"); users+=("$u"); (( m > rss )) && rss=$m
    done
    printf '%-28s wall %6.2f s  user %6.2f s  peak RSS %4d MiB\n' "$label" \
        "$(printf '%s\n' "${walls[@]}" | median)" "$(printf '%s\n' "${users[@]}" | median)" $((rss / 1024))
}
echo
echo "perft(7) of SP 518 (3,195,901,860 nodes), medians of $runs runs"
measure "1 thread, no table" --threads 1 --hash 0
measure "1 thread, 256 MiB table" --threads 1 --hash 256
measure "2 threads, no table" --threads 2 --hash 0
measure "2 threads, 256 MiB table" --threads 2 --hash 256
