#!/usr/bin/env bash
# Builds the Debian packages of both programs: target/debian/c960-worker_VERSION-1_ARCH.deb and
# target/debian/c960-coordinator_VERSION-1_ARCH.deb (what goes into each: [package.metadata.deb]
# in worker/Cargo.toml and coordinator/Cargo.toml). The release build, then the man pages and
# completions from the programs themselves (`install-files`), then cargo-deb (the version
# pinned here, installed when missing) packs them without building again.
#
#   scripts/package.sh            # about 6 minutes of compiling on two cores the first time
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_DEB_VERSION=3.8.0
target="${CARGO_TARGET_DIR:-target}"

if [ "$(cargo deb --version 2>/dev/null || true)" != "cargo-deb $CARGO_DEB_VERSION" ]; then
    echo "installing cargo-deb $CARGO_DEB_VERSION" >&2
    cargo install --locked "cargo-deb@$CARGO_DEB_VERSION"
fi

cargo build --release --locked -p c960-worker -p c960-coordinator

for program in c960-worker c960-coordinator; do
    rm -rf "$target/release/install-files/$program"
    "$target/release/$program" install-files --out-dir "$target/release/install-files/$program" >/dev/null
    # Debian's man pages are compressed (-n: no name or time stamp, so the same build packs the
    # same bytes).
    gzip -9n "$target/release/install-files/$program"/man/*.1
    cargo deb --no-build -p "$program" --output "$target/debian/" >/dev/null
done
ls "$target"/debian/c960-worker_*.deb "$target"/debian/c960-coordinator_*.deb
