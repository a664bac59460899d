#!/usr/bin/env bash
# Sets up and runs the whole test suite: format, lints, every Rust test, the
# desktop app's UI tests (headless Chromium) and its end-to-end tests through
# the real window (Xvfb, tauri-driver + WebKitWebDriver), the Debian package
# (built, installed with apt, used, purged), and a short run of every fuzz target.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
scripts/setup.sh
export CARGO_TERM_COLOR=never
# One full run builds each crate once per profile and never edits and
# rebuilds: incremental caches (GiBs: the debug target's and the package's
# app profile's) would only take disk (the profiles' debug info is trimmed
# for the same reason, see Cargo.toml). Developers' own builds keep them.
export CARGO_INCREMENTAL=0
# Each step says how long the run has taken and the disk left for target/
# (a full disk once ended a CI run midway; the log then shows which step ate it).
step() {
  printf '\n== %s (%d s in, %s free)\n' "$*" "$(( $(date +%s) - started ))" \
    "$(df -h --output=avail . | tail -n1 | tr -d ' ')"
}

step "cargo fmt --check"
cargo fmt --all -- --check

# The trust boundary (issue 13): agent-side code links parley-custody-client
# only. The playground's agent is such code; none of its dependencies, its
# tests' included (the story against a real engine is custody's test,
# custody/tests/playground_scenario.rs), may reach custody, a key store,
# SQLite or the key file's cipher and KDF.
step "the playground's agent cannot hold a key: no custody, key store or SQLite in its tree"
# Every target platform, not only this one (the key store crates are
# per-platform). The tree is taken first so that a failing `cargo tree` stops
# the script instead of reading as "nothing found".
tree=$(cargo tree --locked -p parley-playground -e normal,build,dev --target all --prefix none)
linked=$(grep -E '^(parley-custody|keyring|rusqlite|argon2|chacha20poly1305) v' <<<"$tree" | sort -u || true)
if [ -n "$linked" ]; then
  echo "test: parley-playground links what only custody may:" >&2
  echo "$linked" | sed 's/^/  /' >&2
  echo "test: agent-side code depends on parley-custody-client only; find who pulls each in with: cargo tree -p parley-playground -i <crate>" >&2
  exit 1
fi

# The app embeds ui/dist at compile time: build the UI before any cargo step
# that compiles (`cargo tree` above does not).
step "UI: npm ci + build (ui/)"
(cd ui && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent)

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test"
mkdir -p target
cargo test --workspace --locked 2>&1 | tee target/test-output.txt
# One line for the Rust tests.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "cargo test: %d passed, %d failed\n", p, f }' target/test-output.txt

step "the desktop app: UI tests and end to end through the real window"
scripts/test-app.sh

step "the Debian package: build it, install it with apt, use it, purge it"
scripts/test-package.sh

# What scripts/run.sh runs, built as it builds it: the package's build above
# plus the playground, so that run.sh after this suite starts in seconds.
step "what scripts/run.sh runs: scripts/build-app.sh --playground"
CARGO_TERM_QUIET=true scripts/build-app.sh --playground

step "fuzz smoke run (every target, briefly)"
scripts/fuzz-smoke.sh

echo
echo "test: everything passed in $(( $(date +%s) - started )) s; target/ holds $(du -sh target | cut -f1), fuzz/target $(du -sh fuzz/target | cut -f1)"
