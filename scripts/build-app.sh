#!/usr/bin/env bash
# Builds the desktop app the one way scripts/run.sh runs it and
# scripts/package.sh packages it (the suite runs both through
# scripts/test-package.sh and scripts/test.sh): the UI (ui/dist), then the
# service, the keyless UI process and the CLI in the app profile with
# Tauri's production mode (custom-protocol); with --playground, the
# playground too, in a cargo run of its own so that its dependencies' features
# never change the app's (one set of features: nothing rebuilds between the
# suite and run.sh). Prints a line per step with the time taken; cargo shows
# its own progress.
#   scripts/build-app.sh [--playground]
set -euo pipefail
cd "$(dirname "$0")/.."
playground=0
case "${1:-}" in
  --playground) playground=1 ;;
  "") ;;
  *) echo "usage: $0 [--playground]" >&2; exit 2 ;;
esac
export NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
started=$(date +%s)
step() { printf '== %s (%d s in)\n' "$*" "$(( $(date +%s) - started ))"; }

# The UI is built only when its sources are newer than ui/dist: a rebuilt
# dist (new file times) makes cargo rebuild the app that embeds it.
if [ ! -d ui/node_modules ] || [ ui/package-lock.json -nt ui/node_modules/.package-lock.json ]; then
  step "the UI's packages: npm ci (ui/)"
  (cd ui && npm ci --loglevel=error)
fi
if [ ! -f ui/dist/index.html ] ||
   [ -n "$(find ui/src ui/*.html ui/*.ts ui/*.json -newer ui/dist/index.html -print -quit)" ]; then
  step "the UI: npm run build (ui/)"
  (cd ui && npm run build --silent)
fi

step "cargo build --profile app: the service, the app's UI process, the CLI (the first build takes several minutes)"
# custom-protocol: what `tauri build` turns on (production mode).
cargo build --profile app --locked \
  -p parley-custody-app --features parley-custody-app/custom-protocol \
  -p parley-cli -p parley-custody
if [ "$playground" = 1 ]; then
  step "cargo build --profile app: the playground"
  cargo build --profile app --locked -p parley-playground
fi
step "built (target/app)"
