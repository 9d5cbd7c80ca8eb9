#!/usr/bin/env bash
# The self-play demonstration of docs/balance.md: 16 starts (518 and 15 starts evenly spaced by
# rank in data/balance_sf19_d16.csv, from the most to the least balanced), GAMES games each,
# Debian's Stockfish against itself at NODES nodes a move, through the coordinator at quorum 2
# (`c960-coordinator run --self-play`, two in-process workers), in resumable chunks of 4 starts:
# one SQLite file per chunk (an interrupted chunk resumes: run the script again), each chunk's
# CSV and PGN exports kept with its wall time as soon as every row is valid at quorum 2.
#
#   scripts/selfplay-demo.sh run        # computes the chunks still missing
#   scripts/selfplay-demo.sh assemble   # joins them into data/selfplay_sf15_n$NODES.csv/.pgn
#
# C960_COORDINATOR names the binary (default target/debug/c960-coordinator: the engine does the
# work); scratch files go to .selfplay-demo/nNODES_gGAMES/ (not committed).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${C960_COORDINATOR:-target/debug/c960-coordinator}
games=${GAMES:-32}
nodes=${NODES:-1000}
engine=${ENGINE:-/usr/games/stockfish}
work=.selfplay-demo/n${nodes}_g${games}
out=data/selfplay_sf15_n$nodes
chunks=("13,63,95,236" "270,340,446,491" "495,518,552,578" "590,594,602,884")
mkdir -p "$work"
case ${1:-run} in
run)
    for k in "${!chunks[@]}"; do
        csv=$work/chunk$k.csv
        [[ -s $csv ]] && continue
        start=$(date +%s)
        /usr/bin/time -f '%e %U' -o "$work/chunk$k.time" \
            nice -n 19 "$bin" run --self-play --games "$games" --nodes "$nodes" \
            --engine "uci:$engine" --positions "${chunks[$k]}" --quorum 2 --local-workers 2 \
            --db "$work/chunk$k.db" --out "$csv.part" >"$work/chunk$k.log" 2>&1
        # Every row valid with two agreeing results before the chunk counts.
        if ! awk -F, 'NR > 1 { if ($17 != "valid" || $18 < 2) bad = 1; rows++ }
                END { exit (bad || rows != 4) }' "$csv.part"; then
            echo "chunk $k: not every row valid at quorum; see $csv.part" >&2
            exit 1
        fi
        "$bin" export --db "$work/chunk$k.db" --campaign 1 --format pgn --out "$work/chunk$k.pgn"
        mv "$csv.part" "$csv"
        read -r wall user <"$work/chunk$k.time"
        echo "chunk$k ${chunks[$k]} $wall $user $(date -u +%FT%TZ)" >>"$work/times.txt"
        echo "chunk $k (${chunks[$k]}) done in $wall s (started $(date -u -d @"$start" +%T) UTC)"
    done
    ;;
assemble)
    head -1 "$work/chunk0.csv" >"$out.csv"
    for k in "${!chunks[@]}"; do tail -n +2 "$work/chunk$k.csv"; done | sort -t, -k1,1n >>"$out.csv"
    for k in "${!chunks[@]}"; do cat "$work/chunk$k.pgn"; echo; done >"$out.pgn"
    cp "$work/times.txt" "${out}_times.txt"
    ;;
*)
    echo "usage: $0 run|assemble" >&2
    exit 2
    ;;
esac
