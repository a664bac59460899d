# Shared by scripts/fuzz.sh and scripts/fuzz-smoke.sh (sourced, not run).
# cargo-fuzz on the stable toolchain: it passes nightly-only flags
# (-Zsanitizer, -Cllvm-args), which RUSTC_BOOTSTRAP=1 lets stable rustc take.
# Sanitizer: none (the code is safe Rust, #![forbid(unsafe_code)]; panics,
# overflow and debug assertions are what we look for, and ASan would halve
# the executions). Debug assertions and overflow checks: on (-a).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FUZZ="$ROOT/fuzz"
TOOLS="$ROOT/target/tools"
export PATH="$TOOLS/bin:$PATH"
export RUSTC_BOOTSTRAP=1
FUZZ_FLAGS=(-s none -a)
TARGETS=(grant_token grant_caveats canonical lens_value lens_reply consent_code consent_review frame_reader)

ensure_cargo_fuzz() {
  if ! command -v cargo-fuzz >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz into $TOOLS" >&2
    cargo install cargo-fuzz --locked --root "$TOOLS" >&2
  fi
}

# build_targets [--dev]: release (optimized) by default; --dev builds much
# faster and runs slower, which suits the short smoke run.
BIN_DIR="$FUZZ/target/x86_64-unknown-linux-gnu/release"
# Where each target's corpus lives (<CORPUS>/<target>/); the smoke run uses a
# fresh one holding the seeds only, so it takes the same time every run.
CORPUS="${CORPUS:-$FUZZ/corpus}"
build_targets() {
  if [ "${1:-}" = "--dev" ]; then
    BIN_DIR="$FUZZ/target/x86_64-unknown-linux-gnu/debug"
    (cd "$FUZZ" && cargo fuzz build --dev -s none >&2)
  else
    (cd "$FUZZ" && cargo fuzz build "${FUZZ_FLAGS[@]}" >&2)
  fi
  python3 "$FUZZ/seed_corpus.py" "$CORPUS"
}

# run_target TARGET LOG LIBFUZZER-ARGS...: one target on its corpus; crashes go to fuzz/artifacts/TARGET/.
run_target() {
  local t="$1" log="$2"
  shift 2
  mkdir -p "$FUZZ/artifacts/$t"
  # The binary directly: `cargo fuzz run` would rebuild with its default flags.
  local bin="$BIN_DIR/$t"
  mkdir -p "$CORPUS/$t"
  "$bin" "$CORPUS/$t" -artifact_prefix="$FUZZ/artifacts/$t/" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$@" >"$log" 2>&1
}

# summarize LOG: "execs cov ft crashes" from libFuzzer's output.
summarize() {
  local log="$1" execs cov ft crashes
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  cov=$(grep -oE '(DONE|pulse|NEW|REDUCE|INITED) +cov: [0-9]+' "$log" | tail -1 | awk '{print $NF}')
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | awk '{print $2}')
  crashes=$(grep -cE '^==[0-9]+== ERROR: libFuzzer|panicked at|SUMMARY: libFuzzer' "$log" || true)
  echo "${execs:-?} ${cov:-?} ${ft:-?} ${crashes:-0}"
}
