#!/usr/bin/env bash
# Side-by-side perft against the fastest standard-chess programs and cozy-chess, single thread,
# no hash table, bulk counting. Every engine runs as its own process on the same position; runs
# alternate engine by engine, and the figures are medians of RUNS runs.
#
#   engines: c960 and cozy-chess 0.3.4, each built portable (x86-64 baseline) and with
#            `-C target-cpu=native` (both through `common/examples/perft_one.rs`);
#            perft_cpu_2026 (ankan-ban, MIT) built as its CMakeLists says (-O3 -flto -mpopcnt
#            -mbmi) and with -march=native; Gigantua (Daniel Infuehr) built as its
#            Compile_linux.bat says (-march=native -O3; it needs BMI2 PEXT).
#   cases:   standard chess — start position depth 6 (and 7 with FULL=1), Kiwipete depth 5;
#            Chess960 (c960 and cozy-chess only; the leaders know no Chess960 castling) —
#            SP 518, 0, 959 depth 6, Chess960 Kiwipete depth 5, CPW Chess960 positions 1–20
#            depth 5 (as in common/benches/perft_vs_cozy.rs).
#
# The leaders are never vendored: their sources are expected in a scratch folder outside the
# repository, LEADERS_DIR (default /tmp/c960-leaders):
#   $LEADERS_DIR/perft_cpu_2026   a checkout of https://github.com/ankan-ban/perft_cpu_2026
#   $LEADERS_DIR/Gigantua         a checkout of https://github.com/Gigantua/Gigantua
# A missing one is cloned with git when the network allows; one that cannot be had or built is
# reported with the reason and left out of the table.
#
# Times are each process's user + system CPU time from GNU time (so other load on a shared
# machine stretches them less than the wall clock; wall is printed too). Process start-up is
# included for every engine alike (a few ms); perft_cpu_2026 also counts depths 1..D-1 first,
# which adds about 3 % to its time.
#
# The last case is hashed (perft(7) of SP 518, one thread, PERFT_HASH_MIB MiB tables, default
# 256): c960.tt against cozy.tt, cozy-chess with a plain always-replace table of the same size;
# its ratio column is to cozy.tt. HASHED=0 leaves it out.
#
# Usage: scripts/leaders-bench.sh [RUNS]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
runs=${1:-5}
leaders=${LEADERS_DIR:-/tmp/c960-leaders}
build=$leaders/build
mkdir -p "$build"

echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(lscpu | sed -n 's/^Vendor ID: *//p')"
echo "cpu flags (perft-relevant): $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -xE 'popcnt|bmi1|bmi2|avx2|avx512f|avx512bw' | xargs)"
echo "commit:  $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (modified)')"
echo "rustc:   $(rustc --version)"
echo "g++:     $(g++ --version | head -1)"
echo

# --- c960 and cozy-chess, portable and native -------------------------------------------------
cargo build -q --release -p c960-common --example perft_one
cp target/release/examples/perft_one "$build/perft_one.portable"
RUSTFLAGS="-C target-cpu=native" CARGO_TARGET_DIR=target/native \
    cargo build -q --release -p c960-common --example perft_one
cp target/native/release/examples/perft_one "$build/perft_one.native"

# --- the leaders ------------------------------------------------------------------------------
declare -A built=()
fetch() { # dir url
    [[ -d $leaders/$1 ]] || timeout 60 git clone -q --depth 1 "$2" "$leaders/$1" 2>/dev/null || true
}
fetch perft_cpu_2026 https://github.com/ankan-ban/perft_cpu_2026
fetch Gigantua https://github.com/Gigantua/Gigantua

perft_cpu_sources=(perft.cpp launcher.cpp move_gen_init.cpp util.cpp GlobalVars.cpp Magics.cpp
    zobrist.cpp randoms.cpp)
src=$leaders/perft_cpu_2026
if [[ ! -d $src ]]; then
    echo "perft_cpu_2026: not built: no sources in $src and git clone failed"
else
    missing=()
    for f in "${perft_cpu_sources[@]}"; do [[ -f $src/$f ]] || missing+=("$f"); done
    if ((${#missing[@]})); then
        echo "perft_cpu_2026: not built: $src lacks ${missing[*]}"
    else
        for flavour in portable native; do
            flags=(-mpopcnt -mbmi)
            [[ $flavour == native ]] && flags=(-march=native)
            if (cd "$src" && g++ -std=c++20 -O3 -flto "${flags[@]}" -I. "${perft_cpu_sources[@]}" \
                -o "$build/perft_cpu.$flavour" -lpthread) 2>"$build/perft_cpu.$flavour.log"; then
                built[perft_cpu.$flavour]=1
            else
                echo "perft_cpu_2026 ($flavour): build failed: $(grep -m1 error "$build/perft_cpu.$flavour.log")"
            fi
        done
    fi
fi
src=$leaders/Gigantua/Gigantua
if [[ ! -f $src/Gigantua.cpp ]]; then
    echo "Gigantua: not built: no sources in $src and git clone failed"
elif [[ ! -f $src/Movemap.hpp ]]; then
    echo "Gigantua: not built: $src lacks Movemap.hpp (its slider tables)"
elif (cd "$src" && g++ Gigantua.cpp -std=c++2a -march=native -O3 -fomit-frame-pointer \
    -foptimize-sibling-calls -o "$build/gigantua") 2>"$build/gigantua.log"; then
    built[gigantua]=1
else
    echo "Gigantua: build failed: $(grep -m1 error "$build/gigantua.log")"
fi
echo

# --- runs -------------------------------------------------------------------------------------
# Each runner: ENGINE FEN DEPTH -> prints "nodes cpu_seconds wall_seconds". c960 and cozy-chess
# print only the count; the leaders print more (counts per depth, times), so for them the count
# is the expected one (c960's, which runs first) if their output contains it, else 0.
expected=0
timed() { # command...
    local out nodes
    out=$(/usr/bin/time -f 'TIME %U %S %e' -o "$build/time.txt" "$@" 2>/dev/null; cat "$build/time.txt")
    if [[ $1 == *perft_one* ]]; then
        nodes=$(grep -v '^TIME' <<<"$out" | grep -oE '^[0-9]+$' | tail -1 || true)
    elif grep -v '^TIME' <<<"$out" | tr -d ',' | grep -qw "$expected"; then
        nodes=$expected
    fi
    read -r _ u s e < <(grep '^TIME' <<<"$out")
    echo "${nodes:-0} $(awk -v u="$u" -v s="$s" 'BEGIN{print u+s}') $e"
}
run_engine() { # engine fen depth
    local engine=$1 fen=$2 depth=$3
    case $engine in
        c960.portable) timed "$build/perft_one.portable" c960 "$fen" "$depth" ;;
        c960.native) timed "$build/perft_one.native" c960 "$fen" "$depth" ;;
        cozy.portable) timed "$build/perft_one.portable" cozy "$fen" "$depth" ;;
        cozy.native) timed "$build/perft_one.native" cozy "$fen" "$depth" ;;
        # Hashed, one thread, PERFT_HASH_MIB (default 256) MiB tables: c960's own table
        # against cozy-chess (native) with a plain always-replace table.
        c960.tt) timed "$build/perft_one.portable" c960-tt "$fen" "$depth" ;;
        cozy.tt) timed "$build/perft_one.native" cozy-tt "$fen" "$depth" ;;
        # The leaders read classical castling letters only.
        perft_cpu.*) timed "$build/$engine" "${fen/ HAha / KQkq }" "$depth" -nott ;;
        gigantua) timed "$build/gigantua" "${fen/ HAha / KQkq }" "$depth" ;;
    esac
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Shredder-FEN castling (cozy-chess in Chess960 mode wants it; the leaders get KQkq).
start_fen="rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1"
kiwipete="r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w HAha - 0 1"
sp_fen() { # Shredder-FEN of a start position, from the reference table
    awk -F, -v n="$1" '$1 == n {print $2}' common/tests/data/chess960_startpos_perft.csv
}
mapfile -t cpw < <(head -20 common/tests/data/chess960_cpw.epd | cut -d';' -f1 | sed 's/ *$//')

# case name | depth | engines | fens (separated by ';')
cases=()
add_case() { cases+=("$1|$2|$3|$4"); }
leaders_list="${built[perft_cpu.portable]:+perft_cpu.portable }${built[perft_cpu.native]:+perft_cpu.native }${built[gigantua]:+gigantua}"
ours="c960.portable c960.native cozy.portable cozy.native"
add_case "startpos d6" 6 "$ours $leaders_list" "$start_fen"
[[ ${FULL:-0} == 1 ]] && add_case "startpos d7" 7 "$ours $leaders_list" "$start_fen"
add_case "kiwipete d5" 5 "$ours $leaders_list" "$kiwipete"
add_case "sp 518 d6" 6 "$ours" "$(sp_fen 518)"
add_case "sp 0 d6" 6 "$ours" "$(sp_fen 0)"
add_case "sp 959 d6" 6 "$ours" "$(sp_fen 959)"
add_case "kiwipete960 d5" 5 "$ours" "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w HAha - 0 1"
add_case "cpw960 1-20 d5" 5 "$ours" "$(IFS=';'; echo "${cpw[*]}")"
# The hashed target: perft(7) of SP 518 with a 256 MiB table, one thread (ratio to cozy.tt).
[[ ${HASHED:-1} == 1 ]] && add_case "sp 518 d7 tt" 7 "c960.tt cozy.tt" "$(sp_fen 518)"

printf 'single thread, no hash table; %s alternating runs, medians of CPU time (user+sys)\n' "$runs"
printf '%-15s %-19s %13s %9s %9s %10s %10s\n' case engine nodes "cpu s" "wall s" "Mn/s" "÷cozy-nat/tt"
for c in "${cases[@]}"; do
    IFS='|' read -r name depth engines fens <<<"$c"
    IFS=';' read -ra fen_list <<<"$fens"
    declare -A cpu=() wall=() nodes=() per_fen=()
    for _ in $(seq "$runs"); do
        for e in $engines; do
            tn=0 tc=0 tw=0
            for f in "${fen_list[@]}"; do
                expected=${per_fen[$f]:-0}
                read -r n cs ws < <(run_engine "$e" "$f" "$depth")
                [[ $e == c960.portable || $e == c960.tt ]] && per_fen[$f]=$n
                tn=$((tn + n)); tc=$(awk -v a="$tc" -v b="$cs" 'BEGIN{print a+b}')
                tw=$(awk -v a="$tw" -v b="$ws" 'BEGIN{print a+b}')
            done
            cpu[$e]+="$tc "; wall[$e]+="$tw "; nodes[$e]=$tn
        done
    done
    ref_engine=cozy.native
    [[ " $engines " == *" cozy.tt "* ]] && ref_engine=cozy.tt
    ref=$(tr ' ' '\n' <<<"${cpu[$ref_engine]}" | grep . | median)
    for e in $engines; do
        mc=$(tr ' ' '\n' <<<"${cpu[$e]}" | grep . | median)
        mw=$(tr ' ' '\n' <<<"${wall[$e]}" | grep . | median)
        printf '%-15s %-19s %13s %9.3f %9.3f %10.1f %9.2fx\n' "$name" "$e" "${nodes[$e]}" "$mc" "$mw" \
            "$(awk -v n="${nodes[$e]}" -v t="$mc" 'BEGIN{print n/t/1e6}')" \
            "$(awk -v r="$ref" -v t="$mc" 'BEGIN{print r/t}')"
    done
    # Node counts must agree between engines.
    first=""
    for e in $engines; do
        [[ -z $first ]] && first=${nodes[$e]}
        [[ ${nodes[$e]} == "$first" ]] || echo "  !! $name: $e counted ${nodes[$e]}, expected $first"
    done
    unset cpu wall nodes per_fen
done
