#!/usr/bin/env bash
# Where PostgreSQL's CPU goes in one store benchmark run (issue 15): runs the load generator
# (tests/examples/store_bench.rs) once against a throwaway cluster with `log_statement_stats`,
# which logs the CPU time (getrusage) of every parse, bind (planning) and execute, and prints
# the statements by CPU-seconds. Wall-clock figures (pg_stat_statements, auto_explain) mislead
# here: with dozens of backends on two cores they count lock waits and time in the run queue.
#
#   scripts/store-profile.sh                          # 2 coordinators, batches of 256
#   COORDINATORS=1 BATCH=64 POOL=4 WRITERS=1 scripts/store-profile.sh
set -euo pipefail
cd "$(dirname "$0")/.."

serve="${SERVE:-target/release/c960-coordinator}"
bench="${BENCH:-target/release/examples/store_bench}"
if [ -z "${SERVE:-}${BENCH:-}" ]; then
    cargo build --release --quiet -p c960-coordinator --bin c960-coordinator -p c960-tests --example store_bench
fi

# shellcheck source=pg-test-cluster.sh
source scripts/pg-test-cluster.sh
cat >>"$C960_PG_DIR/data/postgresql.conf" <<CONF
log_statement_stats = on
log_min_error_statement = log
CONF
"${pg_as[@]}" "$pg_bin/pg_ctl" -D "$C960_PG_DIR/data" -w reload >/dev/null

pool=()
[ -n "${POOL:-}" ] && pool=(--pool-size "$POOL")
[ -n "${WRITERS:-}" ] && pool+=(--writers "$WRITERS")
"$bench" --serve "$serve" --db "$C960_TEST_POSTGRES" --coordinators "${COORDINATORS:-2}" \
    --batch "${BATCH:-256}" --clients "${CLIENTS:-32}" --campaigns "${CAMPAIGNS:-8}" "${pool[@]}"

python3 - "$C960_PG_DIR/log" "${TOP:-20}" <<'PY'
import collections, re, sys
entries = re.split(r"\n(?=\d{4}-\d\d-\d\d )", open(sys.argv[1], errors="replace").read())
per_statement = collections.defaultdict(lambda: [0, 0.0])
per_phase = collections.defaultdict(float)
phase = cpu = None
for e in entries:
    if m := re.search(r"LOG:  (\w+)(?: MESSAGE)? STATISTICS", e):
        phase = m.group(1).lower()
    elif m := re.search(r"!\s*([\d.]+) s user, ([\d.]+) s system", e):
        cpu = float(m.group(1)) + float(m.group(2))
    elif (m := re.search(r"STATEMENT:  (.*)", e, re.S)) and cpu is not None:
        s = per_statement[re.sub(r"\s+", " ", m.group(1))[:120]]
        s[0] += 1
        s[1] += cpu
        per_phase[phase] += cpu
        cpu = None
total = sum(per_phase.values())
print(f"\nPostgreSQL CPU in statements: {total:.2f} s ("
      + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(per_phase.items())) + ")")
print(f"{'messages':>8} {'CPU s':>7} {'share':>6}  statement")
for text, (n, t) in sorted(per_statement.items(), key=lambda x: -x[1][1])[: int(sys.argv[2])]:
    print(f"{n:8d} {t:7.2f} {100 * t / total:5.1f}%  {text}")
PY
