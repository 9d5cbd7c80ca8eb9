#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: `source scripts/pg-test-cluster.sh` initialises
# one in a temporary directory, starts it on 127.0.0.1 and a free port, exports
# C960_TEST_POSTGRES, and stops and removes it when the sourcing shell exits (also on failure).
# Installs Debian's postgresql first when no server binaries are found. Runs the server as the
# `postgres` user when started as root (initdb refuses root).
set -euo pipefail

pg_bin=""
for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && pg_bin="$d"
done
if [ -z "$pg_bin" ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) \
        || echo "warning: could not install postgresql" >&2
    for d in /usr/lib/postgresql/*/bin; do
        [ -x "$d/initdb" ] && pg_bin="$d"
    done
fi
if [ -z "$pg_bin" ]; then
    echo "error: no PostgreSQL server binaries (initdb) found" >&2
    return 1 2>/dev/null || exit 1
fi

C960_PG_DIR="$(mktemp -d /tmp/c960-pg.XXXXXX)"
pg_as=()
if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    chown postgres "$C960_PG_DIR"
    pg_as=(runuser -u postgres --)
fi
# A free port: bind port 0 and read what the kernel chose.
C960_PG_PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

c960_pg_stop() {
    "${pg_as[@]}" "$pg_bin/pg_ctl" -D "$C960_PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$C960_PG_DIR"
}
trap c960_pg_stop EXIT

"${pg_as[@]}" "$pg_bin/initdb" -D "$C960_PG_DIR/data" -A trust -U c960 --no-sync >/dev/null
# Durability off: the cluster lives for one test run.
"${pg_as[@]}" "$pg_bin/pg_ctl" -D "$C960_PG_DIR/data" -l "$C960_PG_DIR/log" -w start \
    -o "-c listen_addresses=127.0.0.1 -p $C960_PG_PORT -k $C960_PG_DIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" >/dev/null
export C960_TEST_POSTGRES="postgres://c960@127.0.0.1:$C960_PG_PORT/postgres"
echo "PostgreSQL test cluster on $C960_TEST_POSTGRES ($C960_PG_DIR)" >&2
