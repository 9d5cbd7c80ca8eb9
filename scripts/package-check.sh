#!/usr/bin/env bash
# The Debian packages, end to end on this Debian machine (as root; `.ci/run` runs it): builds
# them (scripts/package.sh), inspects them (dpkg-deb --info/--contents: binaries, units, man
# pages, completions, conffiles), installs them with apt-get, checks the installed programs
# (`--version`, `man -w`, the bash completion of `c960-worker wo<TAB>`, `systemd-analyze verify`
# on both units), starts the installed coordinator with its packaged config (directly, as the
# user c960: systemd is not PID 1 on CI machines) and lets a worker from the package complete a
# small campaign, then checks that `apt-get remove` keeps /var/lib/c960 and purge deletes it.
# The machine is left as it was found: the packages purged, the user c960 deleted when this
# script made it. It refuses to run where c960 is installed or /var/lib/c960 or /etc/c960 exist.
#
#   sudo scripts/package-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
started=$SECONDS
PACKAGES=(c960-worker c960-coordinator)

fail() {
    echo "package-check: FAILED: $*" >&2
    exit 1
}
step() {
    echo "package-check: $*"
}

[ "$(id -u)" = 0 ] || fail "run it as root: it installs and removes packages"
command -v apt-get >/dev/null || fail "no apt-get: this check needs a Debian machine"
installed() {
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" = "installed" ]
}
for p in "${PACKAGES[@]}"; do
    if [ -n "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -v not-installed || true)" ]; then
        fail "$p is installed here already; this check would remove it"
    fi
done
[ ! -e /var/lib/c960 ] || fail "/var/lib/c960 exists; this check would delete it"
[ ! -e /etc/c960 ] || fail "/etc/c960 exists; this check would delete it"
[ ! -e /var/backups/c960 ] || fail "/var/backups/c960 exists; this check would delete it"
made_user=0
getent passwd c960 >/dev/null || made_user=1

# What the checks use, from Debian when missing (kept afterwards, like .ci/run's other tools).
missing=()
command -v man >/dev/null || missing+=(man-db)
[ -f /usr/share/bash-completion/bash_completion ] || missing+=(bash-completion)
command -v systemd-analyze >/dev/null || missing+=(systemd)
command -v curl >/dev/null || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
    step "installing ${missing[*]}"
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi

pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    for p in "${PACKAGES[@]}"; do
        if [ -n "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -v not-installed || true)" ]; then
            apt-get purge -y -qq "$p" >/dev/null 2>&1 || true
        fi
    done
    rm -rf /var/lib/c960 /etc/c960 /var/backups/c960
    if [ "$made_user" = 1 ] && getent passwd c960 >/dev/null; then
        userdel c960 2>/dev/null || true
        getent group c960 >/dev/null && groupdel c960 2>/dev/null || true
    fi
    rm -rf "${scratch:-/nonexistent}"
}
trap cleanup EXIT
scratch=$(mktemp -d)

# --- Build and inspect ---------------------------------------------------------------------
step "building the packages (scripts/package.sh)"
bash scripts/package.sh >/dev/null
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
arch=$(dpkg --print-architecture)
target=$(realpath "${CARGO_TARGET_DIR:-target}")
deb() { echo "$target/debian/$1_${version}-1_${arch}.deb"; }

for p in "${PACKAGES[@]}"; do
    file=$(deb "$p")
    [ -f "$file" ] || fail "no $file"
    info=$(dpkg-deb --info "$file")
    grep -q "^ Package: $p$" <<<"$info" || fail "$file: not the package $p"
    grep -q "^ Version: ${version}-1$" <<<"$info" || fail "$file: not version $version"
    contents=$(dpkg-deb --contents "$file" | awk '{print $NF}')
    for want in \
        "./usr/bin/$p" \
        "./usr/lib/systemd/system/$p.service" \
        "./usr/share/man/man1/$p.1.gz" \
        "./usr/share/bash-completion/completions/$p" \
        "./usr/share/zsh/vendor-completions/_$p" \
        "./usr/share/fish/vendor_completions.d/$p.fish"; do
        grep -qxF "$want" <<<"$contents" || fail "$file has no $want"
    done
    # A page for every subcommand, nested ones too (c960-coordinator-campaign-add.1.gz).
    pages=$(grep -c "^./usr/share/man/man1/$p-.*\.1\.gz$" <<<"$contents" || true)
    subcommands=$("$target/release/$p" --help | sed -n '/^Commands:/,/^$/p' | grep -cvE '^Commands:|^$|^  help ')
    [ "$pages" -ge "$subcommands" ] || fail "$file: $pages subcommand pages for $subcommands subcommands"
    for script in postinst postrm; do
        dpkg-deb --info "$file" "$script" >/dev/null || fail "$file has no $script"
    done
    step "$p: $(grep -c . <<<"$contents") paths, $pages subcommand man pages, $(stat -c %s "$file") bytes"
done
grep -qxF /etc/c960/worker.env <<<"$(dpkg-deb --info "$(deb c960-worker)" conffiles)" \
    || fail "c960-worker: /etc/c960/worker.env is not a conffile"
for conf in /etc/c960/c960.toml /etc/c960/backup.env; do
    grep -qxF "$conf" <<<"$(dpkg-deb --info "$(deb c960-coordinator)" conffiles)" \
        || fail "c960-coordinator: $conf is not a conffile"
done
for unit in c960-coordinator-backup.service c960-coordinator-backup.timer; do
    grep -qxF "./usr/lib/systemd/system/$unit" <<<"$(dpkg-deb --contents "$(deb c960-coordinator)" | awk '{print $NF}')" \
        || fail "c960-coordinator has no $unit"
done

# --- Install and check what was installed ----------------------------------------------------
step "installing with apt-get"
apt-get install -y -qq "$(deb c960-worker)" "$(deb c960-coordinator)" >/dev/null
for p in "${PACKAGES[@]}"; do installed "$p" || fail "$p did not install"; done
getent passwd c960 >/dev/null || fail "no user c960"
[ "$(stat -c %U /var/lib/c960)" = c960 ] || fail "/var/lib/c960 is not c960's"
[ "$(stat -c %a /etc/c960/coordinator.env)" = 600 ] || fail "/etc/c960/coordinator.env is not 0600"
[ "$(stat -c %a /etc/c960/worker.env)" = 600 ] || fail "/etc/c960/worker.env is not 0600"

want="c960-worker $version (commit $commit, protocol "
line=$(c960-worker --version)
[[ "$line" == "$want"* ]] || fail "c960-worker --version: $line (wanted $want…)"
line=$(c960-coordinator --version)
[[ "$line" == "c960-coordinator $version (commit $commit, protocol "* ]] || fail "c960-coordinator --version: $line"
[ "$(command -v c960-worker)" = /usr/bin/c960-worker ] || fail "c960-worker is not /usr/bin's"
for page in c960-worker c960-worker-work c960-coordinator c960-coordinator-serve c960-coordinator-campaign-add; do
    man -w "$page" >/dev/null || fail "man -w $page finds nothing"
done
# The completion as a shell would load it: bash-completion's loader finds the installed file.
completion=$(bash -c '
    source /usr/share/bash-completion/bash_completion
    __load_completion c960-worker || exit 1
    f=$(complete -p c960-worker | sed -E "s/.* -F ([^ ]+) .*/\1/")
    COMP_WORDS=(c960-worker wo); COMP_CWORD=1; COMP_LINE="c960-worker wo"; COMP_POINT=${#COMP_LINE}
    "$f" c960-worker wo c960-worker
    echo "${COMPREPLY[*]}"')
[ "$completion" = work ] || fail "bash completes 'c960-worker wo' to '$completion', not 'work'"
verify=$(systemd-analyze verify /usr/lib/systemd/system/c960-worker.service \
    /usr/lib/systemd/system/c960-coordinator.service \
    /usr/lib/systemd/system/c960-coordinator-backup.service \
    /usr/lib/systemd/system/c960-coordinator-backup.timer 2>&1) || fail "systemd-analyze verify: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify warns: $verify"
step "installed: --version, man -w, bash completion ('wo' → $completion), systemd-analyze verify: ok"

# --- The installed coordinator and worker run a campaign -----------------------------------
# The packaged config as it is, but on a free port (this machine may serve 8960 already); the
# secrets from the file the package made, as the unit would read them.
step "serve --config /etc/c960/c960.toml (as c960), a campaign of depth 3, a packaged worker"
set -a
# shellcheck source=/dev/null
source /etc/c960/coordinator.env
set +a
# setpriv execs (runuser would stay in between), so $! of a program started in the background
# is the program's own pid, for its SIGTERM.
as_c960=(setpriv --reuid=c960 --regid=c960 --init-groups)
"${as_c960[@]}" env C960_ENROL_SECRET="$C960_ENROL_SECRET" C960_ADMIN_TOKEN="$C960_ADMIN_TOKEN" \
    c960-coordinator serve --config /etc/c960/c960.toml --listen 127.0.0.1:0 \
    >"$scratch/serve.out" 2>"$scratch/serve.err" &
pids+=($!)
url=""
for _ in $(seq 100); do
    url=$(sed -n 's/^listening on //p' "$scratch/serve.out")
    [ -n "$url" ] && break
    sleep 0.1
done
[ -n "$url" ] || fail "the coordinator did not start: $(cat "$scratch/serve.err")"
[ "$(curl -fsS "$url/healthz")" = ok ] || fail "$url/healthz"
curl -fsS "$url/api/v1/status" | grep -q "\"version\":\"$version\"" || fail "status has no version $version"
[ -f /var/lib/c960/c960.db ] || fail "the packaged config did not put the database in /var/lib/c960"
db=/var/lib/c960/c960.db
"${as_c960[@]}" c960-coordinator campaign add --db "$db" --depth 3 --positions 0-3 --quorum 1 \
    >/dev/null 2>&1 || fail "campaign add"
"${as_c960[@]}" env C960_ENROL_SECRET="$C960_ENROL_SECRET" \
    c960-worker work --server "$url" --state-file /var/lib/c960/worker.json --threads 1 --hash 16 \
    >"$scratch/worker.out" 2>&1 &
worker=$!
pids+=("$worker")
valid=0
for _ in $(seq 300); do
    valid=$("${as_c960[@]}" c960-coordinator export --db "$db" --campaign 1 --format csv | grep -c ',valid,' || true)
    [ "$valid" = 4 ] && break
    sleep 0.2
done
[ "$valid" = 4 ] || fail "the campaign did not complete ($valid of 4 valid): $(tail -5 "$scratch/worker.out")"
kill -TERM "$worker"
wait "$worker" || fail "the worker did not stop cleanly on SIGTERM: $(tail -5 "$scratch/worker.out")"
# The daily backup as its unit runs it (systemd is not PID 1 here: its command, as c960, with the
# packaged environment file, keeping 2 copies instead of 7), while serve still runs on the
# database.
[ "$(stat -c %U /var/backups/c960)" = c960 ] || fail "/var/backups/c960 is not c960's"
backup_cmd=$(sed -n 's/^ExecStart=//p' /usr/lib/systemd/system/c960-coordinator-backup.service)
for _ in 1 2 3; do
    "${as_c960[@]}" env $(grep -v '^#' /etc/c960/backup.env | xargs) C960_BACKUP_KEEP=2 \
        sh -c "exec $backup_cmd" >>"$scratch/backup.out" 2>&1 || fail "backup: $(cat "$scratch/backup.out")"
    sleep 1.1
done
grep -q "integrity ok" "$scratch/backup.out" || fail "backup said: $(cat "$scratch/backup.out")"
copies=$(find /var/backups/c960 -name 'c960-*Z.sqlite' | wc -l)
[ "$copies" = 2 ] || fail "$copies copies in /var/backups/c960 after three backups keeping 2"
copy=$(find /var/backups/c960 -name 'c960-*Z.sqlite' | sort | tail -1)
[ "$("${as_c960[@]}" c960-coordinator export --db "$copy" --campaign 1 --format csv | grep -c ',valid,')" = 4 ] \
    || fail "the copy does not hold the campaign"
step "backup (as its unit runs it, beside serve): $(tail -1 "$scratch/backup.out")"
build=$("${as_c960[@]}" c960-coordinator worker list --db "$db" | awk -F'\t' 'NR == 2 {print $9}')
[ "$build" = "$version ($commit)" ] || fail "worker list shows the build '$build'"
kill -TERM "${pids[0]}"
wait "${pids[0]}" || true
pids=()
[ -f /var/lib/c960/worker.json ] || fail "the worker kept no identity in /var/lib/c960"
step "campaign of 4 starts at depth 3 valid; worker build shown as $build"

# --- Remove keeps the data; purge deletes it ---------------------------------------------------
apt-get remove -y -qq "${PACKAGES[@]}" >/dev/null
[ ! -e /usr/bin/c960-worker ] || fail "remove left /usr/bin/c960-worker"
[ -f /var/lib/c960/c960.db ] && [ -f /var/lib/c960/worker.json ] || fail "remove deleted /var/lib/c960's data"
[ -f /etc/c960/c960.toml ] || fail "remove deleted the conffile"
apt-get purge -y -qq "${PACKAGES[@]}" >/dev/null
[ ! -e /var/lib/c960 ] || fail "purge left /var/lib/c960: $(ls -A /var/lib/c960)"
[ ! -e /etc/c960 ] || fail "purge left /etc/c960: $(ls -A /etc/c960)"
step "remove kept /var/lib/c960; purge deleted it and /etc/c960"

step "ok in $((SECONDS - started)) s"
