#!/usr/bin/env bash
# Joins the chunk exports that scripts/chunked-run.sh wrote (OUTDIR/spA-B.csv) and any earlier
# table of the same depth in the published form (sp,shredder_fen,dN) into one table in that
# form, sorted by start position. Refuses a chunk row that is not valid at quorum 2 and a start
# position given twice with different values.
#   scripts/join-chunks.sh DEPTH OUTDIR [earlier.csv...] > data/perft_dN_all960.csv
set -euo pipefail
(( $# >= 2 )) || { echo "usage: $0 DEPTH OUTDIR [earlier.csv...]" >&2; exit 2; }
depth=$1 out=$2
shift 2
shopt -s nullglob
chunks=()
for f in "$out"/sp*.csv; do
    [[ $f == *.replicas.csv ]] || chunks+=("$f")   # the replicas exports are provenance, not values
done
awk -F, -v depth="$depth" '
FNR == 1 {
    chunk = ($1 == "sp" && $2 == "fen" && $3 == "depth")
    if (!chunk && !($1 == "sp" && $2 == "shredder_fen" && $3 == "d" depth)) {
        print "not a depth-" depth " table or chunk export: " FILENAME > "/dev/stderr"; exit 1
    }
    next
}
{
    if (chunk) {
        if ($3 != depth || $5 != "valid" || $6 < 2) { print "row not valid at quorum 2: " $0 > "/dev/stderr"; exit 1 }
        sp = $1; fen = $2; nodes = $4
    } else { sp = $1; fen = $2; nodes = $3 }
    if ((sp in value) && value[sp] != nodes) { print "start " sp " given twice with different values" > "/dev/stderr"; exit 1 }
    value[sp] = nodes; fens[sp] = fen
}
END {
    print "sp,shredder_fen,d" depth
    for (sp = 0; sp < 960; sp++) if (sp in value) print sp "," fens[sp] "," value[sp]
}' "$@" "${chunks[@]}"
