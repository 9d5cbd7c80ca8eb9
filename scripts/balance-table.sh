#!/usr/bin/env bash
# An opening-balance table (docs/balance.md): a WASM Stockfish of the npm `stockfish` package
# (single-threaded full-network build, run by node) at a fixed depth, Hash 16 MiB, quorum 2,
# all 960 starts through the coordinator in resumable chunks (a chunk's database resumes; a
# finished chunk is kept as its CSV).
#
#   scripts/balance-table.sh sf18-d20 run        # compute the missing chunks (niced)
#   scripts/balance-table.sh sf18-d20 assemble   # data/balance_sf18_d20.csv and _depths.csv
#   scripts/balance-table.sh sf19-d16 run|assemble
#   scripts/balance-table.sh sf15-d16 run|assemble
#
# Tables:
#   sf19-d16  npm stockfish 19.0.0, depth 16, chunks of 120 (.ci/run installs this engine)
#   sf18-d20  npm stockfish 18.0.8, depth 20, chunks of 60 (installed here into
#             .ci/engines/sf18 when missing): the engine and settings of the published
#             Stockfish 18 depth-25 table, whose searches pass through these depth-20 ones
#   sf15-d16  Debian's stockfish 15.1 (/usr/games/stockfish, native), depth 16, chunks of 240:
#             the cheap third engine of the estimator of record (docs/balance.md)
#
# RUNS (default .ci/engines/runs/TABLE) holds the chunk databases; WORKERS the local workers
# per chunk (quorum 2 needs at least 2); BIN the coordinator binary; NICE the niceness.
# sf18-d20 and sf15-d16 also keep each finished chunk's rows in the repository
# (data/balance_sf18_d20/chunk-K.csv and chunk-K-depths.csv, to be committed as they come):
# a chunk found there is not computed again, on any machine, and `assemble` joins them.
set -euo pipefail
cd "$(dirname "$0")/.."
table=${1:-}
case "$table" in
sf19-d16)
    JS=${JS:-.ci/engines/node_modules/stockfish/bin/stockfish-19-single.js}
    depth=16 chunk=120 runs_default=.ci/engines/runs keep=""
    ;;
sf18-d20)
    JS=${JS:-.ci/engines/sf18/node_modules/stockfish/bin/stockfish-18-single.js}
    depth=20 chunk=60 runs_default=.ci/engines/runs/sf18-d20 keep=data/balance_sf18_d20
    if [ ! -f "$JS" ] && [ "$JS" = .ci/engines/sf18/node_modules/stockfish/bin/stockfish-18-single.js ]; then
        mkdir -p .ci/engines/sf18
        [ -f .ci/engines/sf18/package.json ] || echo '{}' > .ci/engines/sf18/package.json
        (cd .ci/engines/sf18 && npm install --no-audit --no-fund --ignore-scripts stockfish@18.0.8 >/dev/null)
    fi
    ;;
sf15-d16)
    ENGINE=${ENGINE:-uci:/usr/games/stockfish}
    depth=16 chunk=240 runs_default=.ci/engines/runs/sf15-d16 keep=data/balance_sf15_d16
    ;;
*)
    echo "usage: $0 sf19-d16|sf18-d20|sf15-d16 run|assemble" >&2
    exit 2
    ;;
esac
ENGINE=${ENGINE:-uci:node $JS}
BIN=${BIN:-target/debug/c960-coordinator}
RUNS=${RUNS:-$runs_default}
WORKERS=${WORKERS:-4}
NICE=${NICE:-10}
chunks=$((960 / chunk))
mkdir -p "$RUNS"
case "${2:-}" in
run)
    for k in $(seq 0 $((chunks - 1))); do
        a=$((k * chunk)); b=$((a + chunk - 1))
        [ -n "$keep" ] && [ -f "$keep/chunk-$k.csv" ] && continue
        if [ ! -f "$RUNS/chunk-$k.csv" ]; then
            echo "chunk $k ($a-$b) start $(date -u +%FT%TZ)"
            nice -n "$NICE" "$BIN" run --analyse --engine "$ENGINE" --depth "$depth" --positions "$a-$b" \
                --quorum 2 --local-workers "$WORKERS" --db "$RUNS/chunk-$k.db" --out "$RUNS/chunk-$k.csv.tmp"
            mv "$RUNS/chunk-$k.csv.tmp" "$RUNS/chunk-$k.csv"
            echo "chunk $k end $(date -u +%FT%TZ)"
        fi
        if [ -n "$keep" ]; then
            mkdir -p "$keep"
            "$BIN" export --db "$RUNS/chunk-$k.db" --campaign 1 --format depths --out "$keep/chunk-$k-depths.csv"
            "$BIN" export --db "$RUNS/chunk-$k.db" --campaign 1 --format csv --out "$keep/chunk-$k.csv.tmp"
            mv "$keep/chunk-$k.csv.tmp" "$keep/chunk-$k.csv"
        fi
    done
    ;;
assemble)
    name=${table/-/_}
    out=data/balance_$name.csv depths=data/balance_${name}_depths.csv
    first=1
    for k in $(seq 0 $((chunks - 1))); do
        if [ -n "$keep" ]; then
            [ -f "$keep/chunk-$k.csv" ] || continue
            cp "$keep/chunk-$k.csv" "$RUNS/t.csv"; cp "$keep/chunk-$k-depths.csv" "$RUNS/d.csv"
        else
            [ -f "$RUNS/chunk-$k.csv" ] || continue
            "$BIN" export --db "$RUNS/chunk-$k.db" --campaign 1 --format csv --out "$RUNS/t.csv"
            "$BIN" export --db "$RUNS/chunk-$k.db" --campaign 1 --format depths --out "$RUNS/d.csv"
        fi
        if [ $first = 1 ]; then
            cp "$RUNS/t.csv" "$out.tmp"; cp "$RUNS/d.csv" "$depths.tmp"; first=0
        else
            tail -n +2 "$RUNS/t.csv" >> "$out.tmp"; tail -n +2 "$RUNS/d.csv" >> "$depths.tmp"
        fi
    done
    mv "$out.tmp" "$out"; mv "$depths.tmp" "$depths"
    echo "$(($(wc -l < "$out") - 1)) starts in $out"
    ;;
*)
    echo "usage: $0 sf19-d16|sf18-d20|sf15-d16 run|assemble" >&2
    exit 2
    ;;
esac
