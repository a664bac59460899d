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
step() { printf '\n== %s (%d s in)\n' "$*" "$(( $(date +%s) - started ))"; }

step "cargo fmt --check"
cargo fmt --all -- --check

# The app embeds ui/dist at compile time: build the UI before any cargo step.
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

step "fuzz smoke run (every target, briefly)"
scripts/fuzz-smoke.sh

echo
echo "test: everything passed in $(( $(date +%s) - started )) s"
