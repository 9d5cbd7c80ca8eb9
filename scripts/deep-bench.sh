#!/usr/bin/env bash
# Deep hashed perft side by side (issue 35): two or more builds of the `deep_perft` bench
# binary run the same cases, alternating build by build within each round, so that every build
# sees the same machine state; prints each build's medians over the rounds.
#
#   scripts/deep-bench.sh ROUNDS "CASE" ["CASE" ...] -- BIN [BIN ...]
#   CASE = "SP|FEN DEPTH THREADS HASH_MIB [SEED]"   (the arguments of deep_perft)
#   e.g. scripts/deep-bench.sh 3 "518 8 1 1024" "518 8 2 1024" -- /tmp/old /tmp/new
#
# Build a binary with `cargo bench -p c960-common --bench deep_perft --no-run` (release, LTO,
# CPU features chosen at run time) and copy target/release/deps/deep_perft-* aside per commit.
# Every run's node count must agree across builds and rounds (the script stops otherwise).
# Each run is its own process, so a table's page faults are in its `sys` time. The raw lines go
# to stderr as they come: `round case build nodes wall user sys`.
set -euo pipefail
if (( $# < 4 )); then
    echo "usage: $0 ROUNDS CASE... -- BIN..." >&2
    exit 2
fi
rounds=$1
shift
cases=()
while (( $# )) && [[ $1 != -- ]]; do cases+=("$1"); shift; done
[[ ${1:-} == -- ]] || { echo "missing -- before the binaries" >&2; exit 2; }
shift
bins=("$@")
(( ${#cases[@]} && ${#bins[@]} )) || { echo "give at least one case and one binary" >&2; exit 2; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for ((r = 1; r <= rounds; r++)); do
    for c in "${!cases[@]}"; do
        # Alternate the order within a round, so that no build always runs first.
        order=("${!bins[@]}")
        (( r % 2 == 0 )) && order=($(printf '%s\n' "${order[@]}" | tac))
        for b in "${order[@]}"; do
            # shellcheck disable=SC2086 # a case is its words
            line=$("${bins[$b]}" ${cases[$c]})
            eval "${line// /;}" # nodes= wall= user= sys=
            echo "$r $c $b $nodes $wall $user $sys" | tee -a "$results" >&2
        done
    done
done
awk -v nb=${#bins[@]} '
    function median(list,   n, a, i, j, t) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { k = $2 " " $3; if (!(($2) in nodes)) nodes[$2] = $4; else if (nodes[$2] != $4) { print "node counts differ in case " $2; bad = 1 }
      wall[k] = wall[k] " " $5; user[k] = user[k] " " $6; sys[k] = sys[k] " " $7; cpu[k] = cpu[k] " " ($6 + $7) }
    END {
        if (bad) exit 1
        for (c in nodes) for (b = 0; b < nb; b++) { k = c " " b
            printf "case %s build %d  nodes %s  median wall %.2f s  user %.2f s  sys %.2f s  user+sys %.2f s\n",
                c, b, nodes[c], median(wall[k]), median(user[k]), median(sys[k]), median(cpu[k]) }
    }' "$results" | sort
for c in "${!cases[@]}"; do echo "case $c: ${cases[$c]}"; done
for b in "${!bins[@]}"; do echo "build $b: ${bins[$b]}"; done
