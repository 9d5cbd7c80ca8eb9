#!/usr/bin/env bash
# Joins the CSV exports of one family's perft campaigns at depths 1..N (one file per depth, in
# depth order, as `c960-coordinator run --family F --depth D --out dD.csv` writes them) into
# one table: number,arrangement,fen,d1,...,dN. Refuses a row that is not valid at quorum.
#   scripts/family-table.sh d1.csv d2.csv ... > data/perft_shuffle5040_d1-N.csv
set -euo pipefail
n=$#
awk -F, -v n="$n" '
FNR == 1 {
    file++
    if ($1 != "family" || $2 != "number") { print "not a family export: " FILENAME > "/dev/stderr"; exit 1 }
    next
}
{
    if ($6 != "valid" || $7 < 2) { print "row not valid at quorum 2: " $0 > "/dev/stderr"; bad = 1; exit 1 }
    if (file == 1) { fen[$2] = $3; order[++rows] = $2 }
    else if (fen[$2] != $3) { print "FEN differs for number " $2 > "/dev/stderr"; bad = 1; exit 1 }
    count[$2, file] = $5
}
END {
    if (bad) exit 1
    header = "number,arrangement,fen"
    for (d = 1; d <= n; d++) header = header ",d" d
    print header
    for (i = 1; i <= rows; i++) {
        k = order[i]
        split(fen[k], parts, " ")
        m = split(parts[1], ranks, "/")
        line = k "," ranks[m] "," fen[k]
        for (d = 1; d <= n; d++) line = line "," count[k, d]
        print line
    }
}' "$@"
