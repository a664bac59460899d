#!/usr/bin/env bash
# Sets up and runs Parley Custody.
#
# With a display, the desktop app with the playground is the main job (it
# arrives with the desktop-app issue); until then, and on a machine without a
# display, this runs the headless daemon `parley-custodyd`, which asks you in
# this terminal before signing anything.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --locked -q -p parley-cli -p parley-custody -p parley-playground
bin="$PWD/target/release"
export PATH="$bin:$PATH"

if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  echo "No display found: running the headless custody daemon with its terminal prompt."
else
  echo "The desktop app is not built yet: running the headless custody daemon with its terminal prompt."
fi
sock_dir="${XDG_RUNTIME_DIR:-/tmp}/parley-run-$(id -u)"
mkdir -p "$sock_dir" && chmod 700 "$sock_dir"
export PARLEY_CUSTODY_SOCKET="$sock_dir/custody.sock"
echo "The playground (a shop and a calendar) starts beside it; its scripted agent asks you for a grant,"
echo "then for a consent to an order over the limit. Answer at the prompts. Ctrl-C stops everything."
echo "Other agents use:  parley init   and   parley approve --socket $PARLEY_CUSTODY_SOCKET <pc1.code>"
echo
# The scripted agent waits for the daemon's socket, then walks the scenarios.
(
  for _ in $(seq 1 600); do [ -S "$PARLEY_CUSTODY_SOCKET" ] && break; sleep 0.2; done
  parley-playground demo --custody-socket "$PARLEY_CUSTODY_SOCKET" 2>&1 | sed -u 's/^/[playground] /'
) &

if [ -n "${DBUS_SESSION_BUS_ADDRESS:-}" ] && dbus-send --session --print-reply --dest=org.freedesktop.DBus \
     /org/freedesktop/DBus org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q true; then
  exec "$bin/parley-custodyd" "$@"
fi

# No keychain on a session bus (a server, or root on a fresh machine): start a
# private session bus with gnome-keyring, unlocked with a password you choose.
# The keyring persists in ~/.local/share/keyrings, so the principal key survives restarts.
if [ -z "${PARLEY_KEYRING_PASSWORD:-}" ]; then
  read -r -s -p "Password for the Parley keyring (new or existing): " PARLEY_KEYRING_PASSWORD; echo
fi
export PARLEY_KEYRING_PASSWORD
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
chmod 700 "$XDG_RUNTIME_DIR"
exec dbus-run-session -- sh -c '
  printf "%s" "$PARLEY_KEYRING_PASSWORD" | gnome-keyring-daemon --unlock --components=secrets >/dev/null
  unset PARLEY_KEYRING_PASSWORD
  i=0
  until dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q true; do
    i=$((i+1)); [ "$i" -gt 100 ] && { echo "gnome-keyring did not start" >&2; exit 1; }; sleep 0.1
  done
  exec "$0" "$@"' "$bin/parley-custodyd" "$@"
