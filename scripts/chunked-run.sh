#!/usr/bin/env bash
# Runs a long perft table through the coordinator in resumable chunks of start positions, the
# way the depth-8 table of all 960 is computed: one `c960-coordinator run` per chunk, each with
# its own SQLite file (so an interrupted chunk resumes where it stopped: run the script again),
# each chunk's CSV export kept with its wall time as soon as it completes.
#
#   scripts/chunked-run.sh DEPTH FIRST LAST CHUNK OUTDIR [run options...]
#   e.g. scripts/chunked-run.sh 8 10 959 10 data/perft_d8_all960 --split-ply 0 --hash 512
#
# Writes OUTDIR/spA-B.csv (the campaign's export, with digests and agreeing results),
# OUTDIR/spA-B.replicas.csv (every replica with its worker, engine and Zobrist seed) and
# appends "A-B <wall seconds> <user seconds>" to OUTDIR/times.txt. A chunk whose CSV exists is
# skipped; a chunk's export is written only when every row is valid at quorum (checked below).
# C960_COORDINATOR names the binary (default target/release/c960-coordinator); the scratch
# databases go to C960_CHUNK_DB_DIR (default OUTDIR/../.chunk-db, not committed).
set -euo pipefail
if (( $# < 5 )); then
    echo "usage: $0 DEPTH FIRST LAST CHUNK OUTDIR [run options...]" >&2
    exit 2
fi
depth=$1 first=$2 last=$3 chunk=$4 out=$5
shift 5
bin=${C960_COORDINATOR:-target/release/c960-coordinator}
dbdir=${C960_CHUNK_DB_DIR:-$out/../.chunk-db}
[[ -x $bin ]] || { echo "no coordinator binary at $bin (cargo build --release -p c960-coordinator)" >&2; exit 2; }
mkdir -p "$out" "$dbdir"
for ((a = first; a <= last; a += chunk)); do
    b=$((a + chunk - 1)); ((b > last)) && b=$last
    csv=$out/sp$a-$b.csv
    [[ -s $csv ]] && continue
    tmp=$dbdir/sp$a-$b.csv.part
    start=$(date +%s)
    /usr/bin/time -f '%e %U' -o "$dbdir/sp$a-$b.time" \
        "$bin" run --depth "$depth" --positions "$a-$b" --db "$dbdir/d$depth-sp$a-$b.db" --out "$tmp" "$@" \
        >"$dbdir/sp$a-$b.log" 2>&1
    # Every row must be valid with at least two agreeing results before the chunk counts.
    if ! awk -F, -v n=$((b - a + 1)) 'NR > 1 { if ($5 != "valid" || $6 < 2) bad = 1; rows++ }
            END { exit (bad || rows != n) }' "$tmp"; then
        echo "chunk $a-$b: not every row valid at quorum; see $tmp" >&2
        exit 1
    fi
    # The chunk's provenance: every returned replica with its worker, engine and perft-table
    # Zobrist seed (workers name it since 0.2); every row's valid replicas must name at least two
    # different seeds, so a hash collision in one table cannot have passed the quorum.
    replicas=$out/sp$a-$b.replicas.csv
    "$bin" export --db "$dbdir/d$depth-sp$a-$b.db" --campaign 1 --format replicas --out "$replicas.part"
    if ! awk -F, 'NR > 1 && $10 == "valid" { rows[$1] = 1; if ($9 != "") seeds[$1 "," $9] = 1 }
            END { for (k in seeds) { split(k, p, ","); n[p[1]]++ } for (r in rows) if (n[r] < 2) bad = 1; exit bad }' \
            "$replicas.part"; then
        echo "chunk $a-$b: a row's valid replicas do not name two different Zobrist seeds; see $replicas.part" >&2
        exit 1
    fi
    mv "$replicas.part" "$replicas"
    mv "$tmp" "$csv"
    read -r wall user <"$dbdir/sp$a-$b.time"
    echo "$a-$b $wall $user $(date -u +%FT%TZ)" >>"$out/times.txt"
    echo "chunk $a-$b done in ${wall} s (started $(date -u -d @"$start" +%T) UTC)"
done
