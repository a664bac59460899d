#!/usr/bin/env bash
# The desktop split's figures (issue 16): the custody service's start to
# its tray icon, its idle memory, request → review window p95 (the UI
# process started each time) and the memory with one review window, under
# Xvfb with a private session bus and an unlocked gnome-keyring, no
# notification daemon (so the service opens the review itself). Release-like
# build (the app profile). Prints figures; writes them to target/bench-app.txt.
#   scripts/bench-app.sh            BENCH_RUNS=20 by default (UI sessions: the
#     service's idle RSS is printed after each; BENCH_DECIDE below)
#   BENCH_PROFILE=debug scripts/bench-app.sh   the debug build the tests made
#     (no release-like build; the WebKit processes, most of the memory, are
#     the system's either way; the times are not comparable)
#   BENCH_DETAIL=1   also the service's largest mappings after each session
#   BENCH_SERVICE_WRAP=/path/to/wrapper   starts the service through a
#     wrapper that execs it (e.g. with heaptrack's preload, to see its heap)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
scripts/setup.sh
case ${BENCH_PROFILE:-app} in
  dev | debug)
    dir=debug
    (cd ui && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent)
    cargo build --locked -q -p parley-custody -p parley-custody-app -p parley-cli ;;
  # The build scripts/run.sh runs (and the package ships), nothing rebuilt.
  *) dir=app; CARGO_TERM_QUIET=true scripts/build-app.sh ;;
esac
T=$(mktemp -d /tmp/parley-bench-app.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/home" "$T/run" "$T/data" "$T/config"
chmod 700 "$T/run"
sed 's|<standard_session_servicedirs */>||' /usr/share/dbus-1/session.conf >"$T/session.conf"
export HOME="$T/home" XDG_RUNTIME_DIR="$T/run" XDG_DATA_HOME="$T/data" XDG_CONFIG_HOME="$T/config" \
  PARLEY_CUSTODY_NAMESPACE="bench-$$" PARLEY_CUSTODY_SOCKET="$T/run/custody.sock" PARLEY_CUSTODY_DATA="$T/custody" \
  CUSTODY_SERVICE="${BENCH_SERVICE_WRAP:-$repo/target/$dir/parley-custodyd}" PARLEY_CLI="$repo/target/$dir/parley" \
  BENCH_OUT="$repo/target/bench-app.txt" RUST_LOG="${RUST_LOG:-warn}"
mkdir -p "$PARLEY_CUSTODY_DATA" && chmod 700 "$PARLEY_CUSTODY_DATA"
# BENCH_DECIDE=1 (the default): each UI session also approves a request
# (with OS authentication: polkit, silent as root) and denies one, each
# opened from its notification (dunst). BENCH_DECIDE=0: open, review, close
# only, with no OS authentication and no notification daemon.
export BENCH_DECIDE="${BENCH_DECIDE:-1}"
if [ "$BENCH_DECIDE" = 1 ]; then
  scripts/start-polkit.sh
else
  printf '{"step_up": {"rule": "never"}}\n' >"$PARLEY_CUSTODY_DATA/settings.json"
fi
xvfb-run -a -s "-screen 0 1366x768x24" dbus-run-session --config-file="$T/session.conf" -- bash -c '
  set -euo pipefail
  printf "%s" "bench-keyring-password" | gnome-keyring-daemon --unlock --components=secrets >/dev/null
  i=0
  until dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
      org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q "boolean true"; do
    i=$((i+1)); [ "$i" -gt 100 ] && { echo "gnome-keyring did not start" >&2; exit 1; }; sleep 0.1
  done
  if [ "$BENCH_DECIDE" = 1 ]; then
    dunst >/dev/null 2>&1 &
    i=0
    until dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.Notifications 2>/dev/null | grep -q "boolean true"; do
      i=$((i+1)); [ "$i" -gt 100 ] && { echo "dunst did not start" >&2; exit 1; }; sleep 0.1
    done
  fi
  node scripts/bench-app.mjs
  kill $(jobs -p) 2>/dev/null || true
'
