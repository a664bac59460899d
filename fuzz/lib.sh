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
TARGETS=(grant_token grant_caveats canonical lens_value lens_reply consent_code consent_review frame_reader json_fast_path)

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
  # cargo fuzz has no --locked: without this check a dependency added to the
  # workspace would be written into the tracked fuzz/Cargo.lock by the build.
  if ! (cd "$FUZZ" && cargo fetch --locked --target x86_64-unknown-linux-gnu -q); then
    echo "fuzz: fuzz/Cargo.lock is out of date with the crates it fuzzes: run 'cargo update -w' in fuzz/ and commit it" >&2
    return 1
  fi
  if [ "${1:-}" = "--dev" ]; then
    BIN_DIR="$FUZZ/target/x86_64-unknown-linux-gnu/debug"
    (cd "$FUZZ" && cargo fuzz build --dev -s none >&2)
  else
    (cd "$FUZZ" && cargo fuzz build "${FUZZ_FLAGS[@]}" >&2)
  fi
  python3 "$FUZZ/seed_corpus.py" "$CORPUS"
}

# watch_cpu PID SECONDS: sends PID a SIGINT once its CPU time (user+sys, from
# /proc/PID/stat) reaches SECONDS; libFuzzer then prints its final stats and
# exits. Polls once a second, so it overshoots by at most about a second.
watch_cpu() {
  local pid="$1" limit=$(($2 * $(getconf CLK_TCK))) line f
  while read -r line 2>/dev/null <"/proc/$pid/stat"; do
    # Fields after "(comm) ": state is f[0], utime f[11], stime f[12].
    read -ra f <<<"${line##*) }"
    if [ "${f[0]}" = Z ]; then break; fi
    if (( f[11] + f[12] >= limit )); then
      kill -INT "$pid" 2>/dev/null || true
      break
    fi
    sleep 1
  done
}

# run_target TARGET LOG LIBFUZZER-ARGS...: one target on its corpus; crashes go
# to fuzz/artifacts/TARGET/. With CPU_SECONDS set, the run is also stopped once
# the fuzzer has used that much CPU time (libFuzzer's -max_total_time counts
# wall time, which a loaded machine stretches).
run_target() {
  local t="$1" log="$2" pid watcher="" rc=0
  shift 2
  mkdir -p "$FUZZ/artifacts/$t"
  # The binary directly: `cargo fuzz run` would rebuild with its default flags.
  local bin="$BIN_DIR/$t"
  mkdir -p "$CORPUS/$t"
  "$bin" "$CORPUS/$t" -artifact_prefix="$FUZZ/artifacts/$t/" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$@" >"$log" 2>&1 &
  pid=$!
  if [ -n "${CPU_SECONDS:-}" ]; then
    watch_cpu "$pid" "$CPU_SECONDS" &
    watcher=$!
  fi
  wait "$pid" || rc=$?
  if [ -n "$watcher" ]; then
    kill "$watcher" 2>/dev/null || true
    wait "$watcher" 2>/dev/null || true
  fi
  return "$rc"
}

# summarize LOG: "execs cov ft crashes" from libFuzzer's output.
summarize() {
  local log="$1" execs cov ft crashes
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | awk '{print $2}' || true)
  cov=$(grep -oE '(DONE|pulse|NEW|REDUCE|INITED) +cov: [0-9]+' "$log" | tail -1 | awk '{print $NF}' || true)
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | awk '{print $2}' || true)
  # libFuzzer stops at the first crash, timeout or OOM and prints one SUMMARY
  # line for it (after the panic message and an ERROR line).
  crashes=$(grep -c '^SUMMARY: libFuzzer' "$log" || true)
  if [ "${crashes:-0}" = 0 ] && grep -qE '^==[0-9]+== ERROR: libFuzzer|panicked at' "$log"; then
    crashes=1
  fi
  echo "${execs:-?} ${cov:-?} ${ft:-?} ${crashes:-0}"
}
