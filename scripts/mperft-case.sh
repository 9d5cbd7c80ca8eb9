#!/usr/bin/env bash
# Runs MPerft 2.0 (abulmo/MPerft, a C perft with a hash table; standard chess only) on a
# deep_perft case and prints deep_perft's line, so that scripts/deep-bench.sh can alternate it
# with c960's builds: pass this script as a "binary" with MPERFT naming the MPerft executable
# (built by you from its sources, outside this repository; nothing here builds it).
#
#   MPERFT=/path/to/mperft scripts/mperft-case.sh 518 8 1 1024
#
# Only SP 518 (the standard start, MPerft's default position) and one thread are accepted;
# MPerft runs with bulk counting (-b) and a table of HASH_MIB MiB (-h). Times are the process's
# wall, user and system time from GNU time.
set -euo pipefail
(( $# >= 4 )) || { echo "usage: $0 518 DEPTH 1 HASH_MIB" >&2; exit 2; }
[[ $1 == 518 && $3 == 1 ]] || { echo "MPerft runs SP 518 (the standard start) on one thread only" >&2; exit 2; }
bin=${MPERFT:?set MPERFT to the mperft executable}
timing=$(mktemp)
trap 'rm -f "$timing"' EXIT
out=$(/usr/bin/time -f '%e %U %S' -o "$timing" "$bin" -d "$2" -b -h "$4")
nodes=$(awk '$1 == "perft" { print $4 }' <<<"$out")
read -r wall user sys <"$timing"
echo "nodes=$nodes wall=$wall user=$user sys=$sys"
