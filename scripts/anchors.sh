#!/usr/bin/env bash
# Side by side against the two anchors of issue 57: MPerft 5.x (Richard Delorme's C perft, with
# its null-move counting at the penultimate ply, `-n`) and motors/CAPS (toanth/motors, a Rust
# engine whose command line runs `perft N`). Every engine runs as its own process; the engines
# alternate within each round (reversed every other round, so that none always runs first) and
# the table gives the medians over the rounds.
#
#   scripts/anchors.sh build DIR     c960's deep_perft (release, LTO, kernel chosen at run time)
#                                    into DIR/deep_perft; then checks DIR/mperft and DIR/motors
#   ANCHORS_DIR=DIR scripts/anchors.sh run ROUNDS
#
# The anchors are never built, vendored or fetched here: build MPerft and motors yourself from
# their own sources, outside this repository, and put the executables at DIR/mperft and
# DIR/motors (BENCHMARKS.md, "Against MPerft 5.x and motors", says how they were built; an
# optional DIR/versions.txt, one line an anchor, is printed with the table). A missing anchor
# is reported and its column reads "not built".
#
# Cases (single thread and no table unless the case says; MPerft always with bulk counting `-b`,
# and `-n` where its build has it; motors with `threads 1` and no table):
#   start position perft 7; SP 0 (BBQNNRKR) perft 7 (MPerft knows no Chess960: "—");
#   Kiwipete perft 6; start position perft 8 with a 256 MiB table (c960 and MPerft);
#   with ANCHORS_DEEP=1 also SP 518 perft 9, 8 GiB table, 2 threads (c960 and MPerft; MPerft
#   needs its `-t`, from 3.0 on).
# Times are each process's wall and user+system CPU time from GNU time (start-up and the
# table's allocation included for every engine alike). Node counts must agree with c960's
# (a disagreement is marked in the table and makes the script exit 1).
# MPerft silently caps its table at 90 % of the *free* memory (page cache not counted): the
# script prints the size MPerft reports when it is smaller than asked.
# Two tables: the medians over the rounds, and the fastest round of each engine (its least CPU
# time). On a shared VM whose other tenants slow a whole run down by up to 2x, the fastest of
# several alternated rounds is the figure least disturbed; the medians show the spread.
# ANCHORS_BEFORE=PATH adds a second c960 deep_perft (an older build) as its own column: before
# and after, side by side in the same rounds.
# ANCHORS_SMOKE=1 runs every case 3 plies shallower with 16 MiB tables: it checks this script
# and the binaries, and measures nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "anchors: $*" >&2; exit 1; }
usage() { echo "usage: $0 build DIR | ANCHORS_DIR=DIR $0 run ROUNDS" >&2; exit 2; }
(( $# == 2 )) || usage

check_anchors() { # DIR: 0 if both anchors are there, else one line each on stderr
    local ok=0 a
    for a in mperft motors; do
        if [[ ! -x $1/$a ]]; then
            echo "anchors: $1/$a is missing: build it from its sources outside this repository (see the header of $0)" >&2
            ok=1
        fi
    done
    return $ok
}

if [[ $1 == build ]]; then
    dir=$2
    mkdir -p "$dir"
    json=$(mktemp)
    trap 'rm -f "$json"' EXIT
    nice -n 19 cargo bench -q -p c960-common --bench deep_perft --no-run --message-format=json >"$json" ||
        die "c960's deep_perft did not build (cargo bench -p c960-common --bench deep_perft --no-run)"
    exe=$(grep -o '"executable":"[^"]*/deep_perft-[^"]*"' "$json" | tail -1 | cut -d'"' -f4)
    [[ -n $exe && -x $exe ]] || die "cargo built deep_perft but named no executable"
    cp "$exe" "$dir/deep_perft"
    echo "c960	$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- common || echo ' (common/ modified)')	deep_perft (cargo bench profile: release, LTO)" >"$dir/deep_perft.version"
    echo "built $dir/deep_perft ($(cut -f2 "$dir/deep_perft.version"))"
    check_anchors "$dir"
    exit
fi
[[ $1 == run && $2 =~ ^[1-9][0-9]*$ ]] || usage
rounds=$2
dir=${ANCHORS_DIR:-/tmp/c960-anchors}
[[ -x $dir/deep_perft ]] || die "$dir/deep_perft is missing: run '$0 build $dir' first (or set ANCHORS_DIR)"
[[ -x /usr/bin/time ]] || die "GNU time (/usr/bin/time) is needed"
check_anchors "$dir" || true
smoke=0
[[ ${ANCHORS_SMOKE:-0} == 1 ]] && smoke=3

# What this MPerft build offers: an unknown option makes every version print its usage.
mperft_flags=(-b) mperft_threads=0 mperft_version="not built"
if [[ -x $dir/mperft ]]; then
    usage_text=$("$dir/mperft" --anchors-probe 2>&1 || true)
    grep -q -- '--nullmove' <<<"$usage_text" && mperft_flags+=(-n)
    grep -q -- '--threads' <<<"$usage_text" && mperft_threads=1
    mperft_version=$("$dir/mperft" -d 1 2>/dev/null | grep -m1 -io 'version [0-9.]*' || echo 'version ?')
fi
motors_version="not built"
[[ -x $dir/motors ]] && motors_version=$(NO_COLOR=1 "$dir/motors" "position startpos" "perft 1 threads 1" 2>&1 | head -1)

echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg), $(free -g | awk '/^Mem:/ {print $2 " GiB, " $4 " GiB free"}')"
echo "c960:    $(cut -f2- "$dir/deep_perft.version" 2>/dev/null || echo 'deep_perft, commit unknown')"
echo "MPerft:  $dir/mperft, $mperft_version, run with ${mperft_flags[*]}"
echo "motors:  $dir/motors, $motors_version"
[[ -f $dir/versions.txt ]] && sed 's/^/         /' "$dir/versions.txt"
echo

kiwipete='r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1'
sp0_fen=$(awk -F, '$1 == 0 {print $2}' common/tests/data/chess960_startpos_perft.csv) # Shredder-FEN

# name|depth|threads|hash MiB|c960 position|MPerft position ("" none, "-" its default)|motors position ("" none)
cases=(
    "start position, perft 7|7|1|0|518|-|startpos"
    "SP 0 (BBQNNRKR), perft 7|7|1|0|0||fen $sp0_fen"
    "Kiwipete, perft 6|6|1|0|$kiwipete|$kiwipete|fen $kiwipete"
    "start position, perft 8, 256 MiB table|8|1|256|518|-|"
)
[[ ${ANCHORS_DEEP:-0} == 1 ]] && cases+=("SP 518, perft 9, 8 GiB table, 2 threads|9|2|8192|518|-|")

results=$(mktemp) timing=$(mktemp) output=$(mktemp)
trap 'rm -f "$results" "$timing" "$output"' EXIT
declare -A note=()
# run CASE ENGINE: one timed process; appends "case engine nodes wall cpu" to $results.
# Returns 1 when the engine does not run this case.
run() {
    local c=$1 e=$2 name depth threads hash cpos mpos opos nodes
    IFS='|' read -r name depth threads hash cpos mpos opos <<<"${cases[$c]}"
    depth=$((depth - smoke))
    (( smoke && hash )) && hash=16
    local cmd=()
    case $e in
        c960) cmd=("$dir/deep_perft" "$cpos" "$depth" "$threads" "$hash") ;;
        before) cmd=("$ANCHORS_BEFORE" "$cpos" "$depth" "$threads" "$hash") ;;
        mperft)
            [[ -x $dir/mperft && -n $mpos ]] || return 1
            (( threads == 1 || mperft_threads )) || { note[$c,$e]="— (no -t in this build)"; return 1; }
            cmd=("$dir/mperft" -d "$depth" "${mperft_flags[@]}")
            [[ $mpos != - ]] && cmd+=(-f "$mpos")
            (( hash )) && cmd+=(-h "$hash")
            (( threads > 1 )) && cmd+=(-t "$threads")
            ;;
        motors)
            [[ -x $dir/motors && -n $opos ]] || return 1
            (( threads == 1 && hash == 0 )) || return 1
            cmd=(env NO_COLOR=1 "$dir/motors" "position $opos" "perft $depth threads 1")
            ;;
    esac
    /usr/bin/time -f '%e %U %S' -o "$timing" "${cmd[@]}" >"$output" 2>&1 ||
        die "$e failed on '$name': $(tail -1 "$output")"
    case $e in
        c960 | before) nodes=$(sed -n 's/^nodes=\([0-9]*\).*/\1/p' "$output") ;;
        mperft)
            nodes=$(sed -nE 's/^perft +[0-9]+ *: +([0-9,]+).*/\1/p' "$output" | tail -1 | tr -d ,)
            local got
            got=$(sed -nE 's/.*hashtable size: ([0-9]+) Mbytes.*/\1/p' "$output" | head -1)
            (( hash == 0 || ${got:-0} >= hash )) || note[$c,$e]="table ${got:-?} MiB, not $hash"
            ;;
        motors) nodes=$(sed 's/\x1b\[[0-9;]*m//g' "$output" | sed -nE 's/^Nodes searched: *([0-9]+).*/\1/p' | tail -1) ;;
    esac
    local wall user sys
    read -r wall user sys <"$timing"
    echo "$c $e ${nodes:-0} $wall $(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}')" | tee -a "$results" >&2
}

engines=(c960 mperft motors)
if [[ -n ${ANCHORS_BEFORE:-} ]]; then
    [[ -x $ANCHORS_BEFORE ]] || die "ANCHORS_BEFORE=$ANCHORS_BEFORE is not an executable"
    engines+=(before)
    echo "before:  $ANCHORS_BEFORE (an older c960 deep_perft)"
fi
for ((r = 1; r <= rounds; r++)); do
    order=("${engines[@]}")
    if (( r % 2 == 0 )); then
        order=()
        for ((i = ${#engines[@]} - 1; i >= 0; i--)); do order+=("${engines[$i]}"); done
    fi
    for c in "${!cases[@]}"; do
        for e in "${order[@]}"; do
            run "$c" "$e" || true
        done
    done
done

fastest() { sort -g | head -1; }
median() { sort -g | awk '{a[NR] = $1} END {if (NR == 0) exit; print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
field() { awk -v c="$1" -v e="$2" -v f="$3" '$1 == c && $2 == e {print $f}' "$results"; }
group() { sed -E ':a; s/^([0-9]+)([0-9]{3})/\1,\2/; ta' <<<"$1"; }

bad=0
columns=(mperft motors)
[[ -n ${ANCHORS_BEFORE:-} ]] && columns+=(before)
# table STAT TITLE: one row per case, STAT (median or fastest) of each engine's times.
table() {
    local stat=$1
    printf '%s\n\n' "$2"
    local head="| case | nodes | c960 wall / CPU | MPerft $mperft_version (${mperft_flags[*]}) wall / CPU | ÷ c960 | motors wall / CPU | ÷ c960 |"
    local rule="| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    [[ -n ${ANCHORS_BEFORE:-} ]] && head+=" c960 before wall / CPU | ÷ c960 |" rule+=" ---: | ---: |"
    echo "$head"
    echo "$rule"
    for c in "${!cases[@]}"; do
        IFS='|' read -r name _ <<<"${cases[$c]}"
        ref_nodes=$(field "$c" c960 3 | head -1)
        ref_cpu=$(field "$c" c960 5 | $stat)
        row="| $name | $(group "$ref_nodes") | $(field "$c" c960 4 | $stat) s / $ref_cpu s"
        for e in "${columns[@]}"; do
            if [[ -z $(field "$c" "$e" 3) ]]; then
                cell=${note[$c,$e]:-—}
                [[ $cell == — && $e != before && ! -x $dir/$e ]] && cell="not built"
                row+=" | $cell | "
                continue
            fi
            cpu=$(field "$c" "$e" 5 | $stat)
            row+=" | $(field "$c" "$e" 4 | $stat) s / $cpu s"
            [[ -n ${note[$c,$e]:-} ]] && row+=" (${note[$c,$e]})"
            while read -r n; do
                [[ $n == "$ref_nodes" ]] || { row+=" **nodes $(group "$n")!**"; bad=1; break; }
            done < <(field "$c" "$e" 3 | sort -u)
            row+=" | $(awk -v a="$cpu" -v b="$ref_cpu" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')"
        done
        echo "$row |"
    done
    echo
}
smoke_note=""
if ((smoke)); then smoke_note='; SMOKE RUN: 3 plies shallower, 16 MiB tables, no measurement'; fi
table median "$rounds rounds, medians of wall and CPU (user+sys) seconds; \"÷ c960\" is the anchor's CPU time over c960's (above 1: c960 is faster)$smoke_note"
table fastest "The same rounds, each engine's fastest: its least CPU time and, on its own, its least wall time$smoke_note"
exit $bad
