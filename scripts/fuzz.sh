#!/usr/bin/env bash
# Runs one coverage-guided fuzz target (fuzz/, cargo-fuzz on nightly) for
# SECONDS, one libFuzzer process: scripts/fuzz.sh TARGET SECONDS [LIBFUZZER
# FLAGS...]. The committed seeds (fuzz/corpus/TARGET) are read, not written:
# what the run finds goes to fuzz/work/TARGET (kept between runs, ignored by
# git) and crashes to fuzz/artifacts/TARGET. Targets and invariants:
# docs/fuzzing.md. Needs a nightly toolchain and cargo-fuzz: installs
# whichever is missing (rustup, cargo install), saying so.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: scripts/fuzz.sh TARGET SECONDS [LIBFUZZER FLAGS...]; targets: $(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v bloatbox-fuzz | tr '\n' ' ')"
target=${1:?$usage}
seconds=${2:?$usage}
shift 2
[ -d "fuzz/corpus/$target" ] || { echo "$usage" >&2; exit 2; }
if ! rustup toolchain list | grep -q '^nightly'; then
  echo "scripts/fuzz.sh: no nightly toolchain: installing it (rustup toolchain install nightly --profile minimal)" >&2
  rustup toolchain install nightly --profile minimal
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "scripts/fuzz.sh: cargo-fuzz is missing: installing it (cargo install cargo-fuzz --locked)" >&2
  cargo install cargo-fuzz --locked
fi
mkdir -p "fuzz/work/$target"
# No sanitizer (the crate is safe Rust: a bug is a panic), debug
# assertions and overflow checks on.
exec cargo +nightly fuzz run --sanitizer none --debug-assertions "$target" \
  "fuzz/work/$target" "fuzz/corpus/$target" -- \
  -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 "$@"
