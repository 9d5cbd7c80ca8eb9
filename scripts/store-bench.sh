#!/usr/bin/env bash
# The store throughput benchmark (issue 15), one command: handouts + accepted results per second
# over real HTTP against real `c960-coordinator serve` processes (release build), SQLite vs
# PostgreSQL, one coordinator vs two on one database, one workunit per request vs batches of 64,
# simulated workers answering at once with correct results at quorum 2
# (tests/examples/store_bench.rs). Prints a table of medians over REPEATS runs, with the machine,
# the commit and the load average. PostgreSQL is a throwaway cluster (scripts/pg-test-cluster.sh:
# fsync and synchronous_commit off, as SQLite's WAL with synchronous=NORMAL does not sync each
# commit either).
#
#   scripts/store-bench.sh                 # REPEATS=3 CLIENTS=32, a few minutes
#   REPEATS=5 CLIENTS=64 scripts/store-bench.sh
#   BACKENDS=postgres BATCHES=64 scripts/store-bench.sh   # only those rows (also COORDINATORS)
#   POOL=4 scripts/store-bench.sh          # PostgreSQL connections per coordinator (default 16)
#   WRITERS=4 scripts/store-bench.sh       # writing transactions at once (default: the cores)
set -euo pipefail
cd "$(dirname "$0")/.."

REPEATS="${REPEATS:-3}"
CLIENTS="${CLIENTS:-32}"
# Campaigns of 960 depth-1 workunits: fewer for one workunit per request (slower).
CAMPAIGNS_SINGLE="${CAMPAIGNS_SINGLE:-1}"
CAMPAIGNS_BATCH="${CAMPAIGNS_BATCH:-8}"

# SERVE and BENCH name other builds (then nothing is built).
serve="${SERVE:-target/release/c960-coordinator}"
bench="${BENCH:-target/release/examples/store_bench}"
if [ -z "${SERVE:-}${BENCH:-}" ]; then
    cargo build --release --quiet -p c960-coordinator --bin c960-coordinator -p c960-tests --example store_bench
fi

# shellcheck source=pg-test-cluster.sh
source scripts/pg-test-cluster.sh

median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else if (NR % 2) print a[(NR+1)/2]; else printf "%.0f\n", (a[NR/2]+a[NR/2+1])/2}'; }

echo "machine: $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) CPUs)"
echo "commit:  $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (modified)')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "coordinator: $serve; load generator: $bench"
echo "clients: $CLIENTS simulated workers, quorum 2, perft depth 1 workunits; medians of $REPEATS runs"
echo "PostgreSQL connections per coordinator: ${POOL:-16 (default)}; writers at once: ${WRITERS:-$(nproc) (default: the cores)}"
echo
printf '| %-10s | %-12s | %-17s | %-24s | %s |\n' backend coordinators "units per request" "handouts + results / s" "runs"
printf '| %-10s | %-12s | %-17s | %-24s | %s |\n' --- ---: ---: ---: ---
loads=()
for db in ${BACKENDS:-sqlite postgres}; do
    url=sqlite
    [ "$db" = postgres ] && url="$C960_TEST_POSTGRES"
    for coordinators in ${COORDINATORS:-1 2}; do
        for batch in ${BATCHES:-1 64}; do
            campaigns=$CAMPAIGNS_BATCH
            [ "$batch" = 1 ] && campaigns=$CAMPAIGNS_SINGLE
            rates=()
            for _ in $(seq "$REPEATS"); do
                pool=()
                [ "$db" = postgres ] && [ -n "${POOL:-}" ] && pool=(--pool-size "$POOL")
                [ "$db" = postgres ] && [ -n "${WRITERS:-}" ] && pool+=(--writers "$WRITERS")
                if line=$("$bench" --serve "$serve" --db "$url" --coordinators "$coordinators" \
                    --batch "$batch" --clients "$CLIENTS" --campaigns "$campaigns" "${pool[@]}" 2>/tmp/store-bench.err); then
                    rates+=("$(echo "$line" | awk -F'\t' '{print $NF}')")
                else
                    rates+=("failed")
                    tail -n 3 /tmp/store-bench.err >&2
                fi
                loads+=("$(cut -d' ' -f1 /proc/loadavg)")
            done
            med=$(printf '%s\n' "${rates[@]}" | grep -v failed | median)
            printf '| %-10s | %12s | %17s | %24s | %s |\n' "$db" "$coordinators" "$batch" "$med" "${rates[*]}"
        done
    done
done
echo
echo "load average during the runs (1-minute, sampled after each run): ${loads[*]}"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
