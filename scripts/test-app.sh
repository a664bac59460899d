#!/usr/bin/env bash
# Tests the desktop app (src-tauri + ui):
#  1. the UI logic in headless Chromium (playwright-core + Debian's chromium),
#     against the built ui/dist with the Tauri IPC mocked;
#  2. end to end through the real windows under Xvfb: the custody service
#     (parley-custodyd --approver desktop) in one process, the keyless UI
#     (parley-custody) started by tauri-driver + WebKitWebDriver and connected
#     to it over the UI channel, with a private D-Bus session, an unlocked
#     gnome-keyring, dunst as the notification daemon, temporary HOME/XDG
#     dirs, a real agent on the real socket and `parley verify` on the tokens.
#     (Session `wayland`: the same under sway's headless backend, with a
#     seat, swaybar's tray and dunst on Wayland, no X server; see
#     src-tauri/README.md, "Wayland".)
#     Screenshots land in target/screenshots/; with UPDATE_SCREENSHOTS=1 they
#     replace the README's in docs/screenshots/ (tests never touch tracked files).
#
# Debug builds (fast to build on 2 cores). Run as root on Debian 12, like
# scripts/test.sh; scripts/setup.sh installs the system packages.
#   scripts/test-app.sh            both
#   scripts/test-app.sh --ui       only the UI tests
#   scripts/test-app.sh --e2e      only the end-to-end test
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
run_ui=1 run_e2e=1
case "${1:-}" in
  --ui) run_e2e=0 ;;
  --e2e) run_ui=0 ;;
  "") ;;
  *) echo "usage: $0 [--ui | --e2e]" >&2; exit 2 ;;
esac
scripts/setup-app.sh
export CARGO_TERM_COLOR=never

step() { printf '\n== %s\n' "$*"; }
started=$(date +%s)

step "UI: npm ci + build (ui/)"
(cd ui && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent)

if [ "$run_ui" = 1 ]; then
  step "UI tests (headless Chromium, IPC mocked)"
  (cd ui && node --test --test-concurrency=1 tests/*.test.mjs)
fi
[ "$run_e2e" = 1 ] || { echo "test-app: UI tests passed in $(( $(date +%s) - started )) s"; exit 0; }

step "cargo build (custody service, app UI, parley CLI, playground)"
cargo build --locked -q -p parley-custody -p parley-custody-app -p parley-cli -p parley-playground
# The tests' own login1 for the lock session (test support, not shipped).
cargo build --locked -q -p parley-custody --example fake_login1

step "the UI process cannot hold a key: no custody, core, key store, SQLite or signature crate in its tree"
if linked=$(cargo tree --locked -p parley-custody-app -e normal --prefix none |
    grep -E '^(parley-custody|parley-core|keyring|rusqlite|ed25519-dalek|argon2|chacha20poly1305|zbus_polkit) v'); then
  echo "test-app: the UI process links what only the service may: $linked" >&2
  exit 1
fi

if [ ! -x target/tools/bin/tauri-driver ]; then
  step "cargo install tauri-driver (into target/tools)"
  cargo install tauri-driver --locked --root "$repo/target/tools"
fi

step "End to end (the real app under Xvfb, tauri-driver + WebKitWebDriver)"
ROOT=$(mktemp -d /tmp/parley-app-e2e.XXXXXX)
cleanup() {
  status=$?
  if [ "$status" -ne 0 ]; then
    echo "--- logs in $ROOT (kept because the run failed) ---" >&2
    for f in "$ROOT"/*/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 40 "$f" >&2; }; done
  else
    rm -rf "$ROOT"
  fi
  exit "$status"
}
trap cleanup EXIT
export PARLEY_APP="${PARLEY_APP:-$repo/target/debug/parley-custody}" PARLEY_CLI="${PARLEY_CLI:-$repo/target/debug/parley}"
export CUSTODY_SERVICE="${CUSTODY_SERVICE:-$repo/target/debug/parley-custodyd}"
if [ "${UPDATE_SCREENSHOTS:-}" = 1 ]; then
  export SCREENSHOTS="$repo/docs/screenshots"
else
  export SCREENSHOTS="${SCREENSHOTS:-$repo/target/screenshots}"
fi
mkdir -p "$SCREENSHOTS"
export TAURI_DRIVER="$repo/target/tools/bin/tauri-driver"
export LOGIN1_FAKE="${LOGIN1_FAKE:-$repo/target/debug/examples/fake_login1}"
export NOTIFY_MATCH="type='method_call',interface='org.freedesktop.Notifications',member='Notify'"
export RUST_LOG="${RUST_LOG:-info,tao=warn,wry=warn}"

# One private desktop session: Xvfb, a D-Bus session bus, an unlocked
# gnome-keyring, optionally dunst, tauri-driver; fresh HOME/XDG dirs, keychain
# namespace, data dir and socket. $1: "notifications" or "no-notifications";
# $2: the test file.
session() {
  local kind=$1 file=$2
  # E2E_ONLY="stepup pause": run only these sessions (for iterating on one).
  if [ -n "${E2E_ONLY:-}" ] && [[ " $E2E_ONLY " != *" $kind "* ]]; then return 0; fi
  local T="$ROOT/$kind"
  mkdir -p "$T/home" "$T/data" "$T/config" "$T/cache" "$T/run"
  chmod 700 "$T/run"
  # Free ports for tauri-driver and WebKitWebDriver (never a fixed 4444 another run may hold).
  local ports
  ports=$(python3 -c '
import socket
a, b = socket.socket(), socket.socket()
a.bind(("127.0.0.1", 0)); b.bind(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1])')
  local bus_config=() as_user=() screen=1280x800x24
  # Wide enough for two review windows beside a centred one (sandbox.e2e.mjs).
  [[ "$kind" = sandbox* ]] && screen=1920x1080x24
  # A new user's walk-through on a small screen (and, on demand, a common laptop's).
  [ "$kind" = walkthrough ] && screen=1024x600x24
  [ "$kind" = walkthrough-1366 ] && screen=1366x768x24
  if [ "$kind" = stepup ] || [ "$kind" = sandbox-user ]; then
    # The app as an ordinary user with a password (polkit asks root nothing),
    # next to a real polkitd; no notification daemon, so the review opens itself.
    # (sandbox-user: the web engine's sandbox as a normal user has, with a user namespace.)
    id -u "$STEPUP_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /bin/sh "$STEPUP_USER"
    # The user an owner of custody's actions: polkit then takes the details
    # that make the OS prompt name the request.
    if [ "$kind" = stepup ]; then scripts/start-polkit.sh "$STEPUP_USER"; fi
    printf '%s:%s\n' "$STEPUP_USER" "$STEPUP_PASSWORD" | chpasswd
    chown -R "$STEPUP_USER" "$T"
    chmod 755 "$ROOT"
    as_user=(runuser -p -u "$STEPUP_USER" --)
  fi
  if [ "$kind" = no-notifications ] || [ "$kind" = stepup ] || [ "$kind" = crowd ] || [ "$kind" = lock ] || [[ "$kind" = sandbox* ]]; then
    # No notification daemon, and none started on demand: a session bus
    # without service activation (dunst is D-Bus activatable).
    sed 's|<standard_session_servicedirs */>||' /usr/share/dbus-1/session.conf >"$T/session.conf"
    bus_config=(--config-file="$T/session.conf")
  fi
  (
    export T KIND="$kind" HOME="$T/home" XDG_DATA_HOME="$T/data" XDG_CONFIG_HOME="$T/config" \
      XDG_CACHE_HOME="$T/cache" XDG_RUNTIME_DIR="$T/run" \
      PARLEY_CUSTODY_NAMESPACE="e2e-$$-$kind" PARLEY_CUSTODY_SOCKET="$T/run/custody.sock" \
      PARLEY_CUSTODY_DATA="$T/custody" NOTIFY_LOG="$T/notify.log" FILE="$file" \
      PARLEY_CUSTODY_UI="$repo/src-tauri/tests/e2e/ui-handoff.py" PARLEY_E2E_HANDOFF="$T/run/handoff.sock"
    read -r DRIVER_PORT NATIVE_PORT <<<"$ports"
    export DRIVER_PORT NATIVE_PORT WEBDRIVER_URL="http://127.0.0.1:$DRIVER_PORT"
    # The display: an Xvfb X server, or (the wayland session) a Wayland
    # compositor started inside the session below, with no X server at all.
    local display=(xvfb-run -a -s "-screen 0 $screen")
    if [ "$kind" = wayland ]; then
      display=(env -u DISPLAY)
      id -u "$SWAY_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$SWAY_USER"
      chmod 711 "$ROOT" "$T"
    fi
    timeout 900 "${as_user[@]}" "${display[@]}" dbus-run-session "${bus_config[@]}" -- bash -c '
      set -euo pipefail
      # Whatever this session starts in the background (sway, dunst,
      # dbus-monitor, the service, tauri-driver) ends with it, also when a
      # wait below gives up.
      trap "kill \$(jobs -p) 2>/dev/null || true" EXIT
      if [ "$KIND" = wayland ]; then
        # sway (wlroots), headless: an output of 1366x768 in memory, no X
        # server (DISPLAY is unset, so GTK can only speak Wayland), and a
        # seat: a virtual keyboard (wtype, held open) gives it the keyboard
        # sway hands to the window it focuses. sway refuses to run as root,
        # so it runs as $SWAY_USER; everything else stays in this session
        # and reaches it through the socket, linked as wl-test. swaybar is
        # the tray host (StatusNotifierWatcher) and dunst shows notifications
        # (layer-shell), both in this session, on its bus.
        mkdir -m 700 "$T/sway"; chown "$SWAY_USER" "$T/sway"
        printf "%s\n" "xwayland disable" "output HEADLESS-1 resolution 1366x768" \
          "bar {" "  id tray" "  swaybar_command true" "  tray_output *" "}" >"$T/sway.config"
        chmod 644 "$T/sway.config"
        runuser -u "$SWAY_USER" -- env -i PATH="$PATH" XDG_RUNTIME_DIR="$T/sway" \
          WLR_BACKENDS=headless WLR_LIBINPUT_NO_DEVICES=1 WLR_RENDERER=pixman \
          sway -c "$T/sway.config" >"$T/sway.log" 2>&1 &
        i=0
        until [ -S "$T/sway/wayland-1" ] && SWAYSOCK=$(compgen -G "$T/sway/sway-ipc.*.sock"); do
          i=$((i+1)); [ "$i" -gt 100 ] && { echo "sway did not start" >&2; cat "$T/sway.log" >&2; exit 1; }
          sleep 0.1
        done
        ln -s "$T/sway/wayland-1" "$XDG_RUNTIME_DIR/wl-test"
        export SWAYSOCK WAYLAND_DISPLAY=wl-test GDK_BACKEND=wayland; unset DISPLAY
        swaybar -s "$SWAYSOCK" -b tray >"$T/swaybar.log" 2>&1 &
        wtype -s 3600000 &
        i=0
        until swaymsg -t get_seats | grep -q "\"type\": \"keyboard\""; do
          i=$((i+1)); [ "$i" -gt 100 ] && { echo "no keyboard on the seat" >&2; exit 1; }
          sleep 0.1
        done
      fi
      on_bus() {
        dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
          org.freedesktop.DBus.NameHasOwner "string:$1" 2>/dev/null | grep -q "boolean true"
      }
      wait_for() { i=0; until on_bus "$1"; do i=$((i+1)); [ "$i" -gt 100 ] && { echo "$1 did not appear on the session bus" >&2; exit 1; }; sleep 0.1; done; }
      printf "%s" "e2e-keyring-password" | gnome-keyring-daemon --unlock --components=secrets >/dev/null
      wait_for org.freedesktop.secrets
      if [ "$KIND" = notifications ] || [ "$KIND" = pause ] || [ "$KIND" = wayland ]; then
        dunst >"$T/dunst.log" 2>&1 &
        wait_for org.freedesktop.Notifications
      fi
      if [ "$KIND" = lock ]; then
        # A login1 of the tests on this session bus; the test locks and
        # unlocks the session through its command fifo.
        mkfifo "$T/login1.ctl"
        "$LOGIN1_FAKE" <>"$T/login1.ctl" >"$T/login1.log" 2>&1 &
        wait_for org.freedesktop.login1
        export PARLEY_CUSTODY_LOGIN1_BUS="$DBUS_SESSION_BUS_ADDRESS" XDG_SESSION_ID=c7 LOGIN1_CTL="$T/login1.ctl"
      fi
      # What the service asks the notification daemon to show, for the test to read.
      dbus-monitor --session "$NOTIFY_MATCH" >"$NOTIFY_LOG" 2>&1 &
      if [ "$KIND" != installed ]; then
        # The custody service (key, engine, tray, notifications) in its own
        # process; tauri-driver then starts the keyless UI, which connects to it.
        # (The installed session starts the app alone: it starts the service.)
        "$CUSTODY_SERVICE" --approver desktop --hidden >"$T/service.log" 2>&1 &
        i=0
        until [ -S "$XDG_RUNTIME_DIR/parley-custody-ui/ui.sock" ]; do
          i=$((i+1)); [ "$i" -gt 150 ] && { echo "the custody service did not start" >&2; cat "$T/service.log" >&2; exit 1; }
          sleep 0.1
        done
      fi
      "$TAURI_DRIVER" --port "$DRIVER_PORT" --native-port "$NATIVE_PORT" \
        --native-driver /usr/bin/WebKitWebDriver >"$T/tauri-driver.log" 2>&1 &
      node --test --test-concurrency=1 "$FILE"
    '
  )
}

export STEPUP_USER=parley-t-desk STEPUP_PASSWORD="desk-Passw0rd-$$"
# sway (the wayland session's compositor) will not run as root.
export SWAY_USER=parley-t-sway
session notifications src-tauri/tests/e2e/app.e2e.mjs
session pause src-tauri/tests/e2e/pause.e2e.mjs
session no-notifications src-tauri/tests/e2e/no-notifications.e2e.mjs
session playground src-tauri/tests/e2e/playground.e2e.mjs
session playground-yea src-tauri/tests/e2e/playground-yea.e2e.mjs
session stepup src-tauri/tests/e2e/stepup.e2e.mjs
# The web engine's sandbox and the review windows' places, as root (as CI
# runs) and as an ordinary user.
session sandbox src-tauri/tests/e2e/sandbox.e2e.mjs
session sandbox-user src-tauri/tests/e2e/sandbox.e2e.mjs
session crowd src-tauri/tests/e2e/crowd.e2e.mjs
# The same app under a Wayland compositor (sway, headless, with a seat) instead of X.
session wayland src-tauri/tests/e2e/wayland.e2e.mjs
# A YEA MCP job server's refund approved in the review window with its phrase (issue 29).
session mcp src-tauri/tests/e2e/mcp.e2e.mjs
# Approve for a while from the review window (issue 30, item 4).
session for-a-while src-tauri/tests/e2e/for-a-while.e2e.mjs
# A review window disarmed while the session is locked, armed from the start after unlock (issue 30).
session lock src-tauri/tests/e2e/lock.e2e.mjs
# A new user's whole story on a 1024×600 screen: every window fits, Deny and
# Approve in view (screenshots walk-*.png); walkthrough-1366 only on demand.
session walkthrough src-tauri/tests/e2e/walkthrough.e2e.mjs
if [ -n "${E2E_ONLY:-}" ]; then session walkthrough-1366 src-tauri/tests/e2e/walkthrough.e2e.mjs; fi

# The app as the package installed it: only when asked for by name
# (scripts/test-package.sh, with PARLEY_APP=/usr/bin/parley-custody).
if [ "${E2E_ONLY:-}" = installed ]; then
  session installed src-tauri/tests/e2e/installed.e2e.mjs
fi

echo
echo "test-app: all passed in $(( $(date +%s) - started )) s; screenshots in $SCREENSHOTS"
