#!/usr/bin/env bash
# The opening-balance table of record (docs/balance.md): Stockfish 19 (npm `stockfish` 19.0.0,
# single-threaded full-network WASM build under node) at depth 16, Hash 16 MiB, quorum 2, all 960
# starts through the coordinator in 8 resumable chunks of 120 (a chunk's database resumes).
#
#   scripts/balance-sf19.sh run        # compute the missing chunks (niced), 4 local workers
#   scripts/balance-sf19.sh assemble   # data/balance_sf19_d16.csv and _depths.csv from the chunks
#
# RUNS (default .ci/engines/runs) holds the chunk databases; WORKERS the local workers per chunk.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/debug/c960-coordinator}
JS=${JS:-.ci/engines/node_modules/stockfish/bin/stockfish-19-single.js}
RUNS=${RUNS:-.ci/engines/runs}
WORKERS=${WORKERS:-4}
mkdir -p "$RUNS"
case "${1:-}" in
run)
    for k in 0 1 2 3 4 5 6 7; do
        a=$((k * 120)); b=$((a + 119))
        [ -f "$RUNS/chunk-$k.csv" ] && continue
        echo "chunk $k ($a-$b) start $(date -u +%FT%TZ)"
        nice -n 10 "$BIN" run --analyse --engine "uci:node $JS" --depth 16 --positions "$a-$b" \
            --quorum 2 --local-workers "$WORKERS" --db "$RUNS/chunk-$k.db" --out "$RUNS/chunk-$k.csv.tmp"
        mv "$RUNS/chunk-$k.csv.tmp" "$RUNS/chunk-$k.csv"
        echo "chunk $k end $(date -u +%FT%TZ)"
    done
    ;;
assemble)
    table=data/balance_sf19_d16.csv depths=data/balance_sf19_d16_depths.csv
    first=1
    for k in 0 1 2 3 4 5 6 7; do
        [ -f "$RUNS/chunk-$k.csv" ] || continue
        "$BIN" export --db "$RUNS/chunk-$k.db" --campaign 1 --format csv --out "$RUNS/t.csv"
        "$BIN" export --db "$RUNS/chunk-$k.db" --campaign 1 --format depths --out "$RUNS/d.csv"
        if [ $first = 1 ]; then
            cp "$RUNS/t.csv" "$table.tmp"; cp "$RUNS/d.csv" "$depths.tmp"; first=0
        else
            tail -n +2 "$RUNS/t.csv" >> "$table.tmp"; tail -n +2 "$RUNS/d.csv" >> "$depths.tmp"
        fi
    done
    mv "$table.tmp" "$table"; mv "$depths.tmp" "$depths"
    echo "$(($(wc -l < "$table") - 1)) starts in $table"
    ;;
*)
    echo "usage: $0 run|assemble" >&2
    exit 2
    ;;
esac
