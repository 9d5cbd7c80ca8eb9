#!/usr/bin/env bash
# Runs every cargo-fuzz target for a bounded time (default 60 s each) and prints a summary.
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Without them, the same
# properties are checked on stable by `cargo test -p c960-common --test suite decode_fuzz::` (proptest).
#
#   scripts/fuzz.sh            # 60 s per target
#   FUZZ_SECS=600 scripts/fuzz.sh
set -euo pipefail
SECS=${FUZZ_SECS:-60}
cd "$(dirname "$0")/../fuzz"
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "cargo-fuzz on nightly is not available; run: rustup toolchain install nightly && cargo install cargo-fuzz" >&2
  exit 2
fi
status=0
for t in $(cargo +nightly fuzz list); do
  echo "== $t: ${SECS} s"
  if cargo +nightly fuzz run "$t" -- -max_total_time="$SECS" -max_len=4096 2>&1 | tee "/tmp/c960-fuzz-$t.log" | grep -E "^(#[0-9]+.*DONE|==[0-9]+==|SUMMARY|Done)"; then :; fi
  if grep -q "ERROR: libFuzzer\|panicked" "/tmp/c960-fuzz-$t.log"; then
    echo "$t: CRASH (artifacts in fuzz/artifacts/$t)"; status=1
  else
    echo "$t: no crash"
  fi
done
exit $status
