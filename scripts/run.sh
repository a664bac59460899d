#!/usr/bin/env bash
# Sets up and runs Parley Custody with the playground beside it.
#
# One custody service, `parley-custodyd`, with the approver that fits:
# with a display, `--approver desktop` (tray, notifications, and the windows
# as a separate, keyless UI process, `parley-custody`, started when one is
# needed); without one, `--approver terminal`, which asks you in this
# terminal before signing anything.
# Either way the playground (a local shop and calendar with a scripted agent)
# starts once custody holds a principal key, and asks you for a grant, then
# for a consent to an order over the limit.
#
# Arguments are passed to the app or the daemon (e.g. --agents-group GROUP).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -eq 0 ]; then
  cat >&2 <<'ROOT'
Note: you are running Parley Custody as root. OS authentication (the password asked after you
approve, before custody signs) cannot protect anything for root: polkit authorizes root without
asking for a password, so here your click or typed "y" alone signs, whatever the step-up setting
says. That is fine for trying it out with the playground. Real keys belong to a normal desktop
user: run this script as that user (it uses sudo only to install packages and custody's polkit
actions).

ROOT
fi
scripts/setup.sh
export CARGO_TERM_COLOR=never

# OS authentication before signing: custody's polkit actions installed from
# this tree, naming you as their owner. polkit takes the prompt's details
# (what is signed) only from root or an owner, so without it your password
# prompt would show $(decision) instead of the decision.
me=$(id -un)
if [ "$(id -u)" -eq 0 ]; then
  scripts/start-polkit.sh
elif ! grep -qE "policykit.owner\">.*unix-user:$me( |<)" /usr/share/polkit-1/actions/org.parley.custody.policy 2>/dev/null; then
  echo "Installing custody's polkit actions with $me as their owner: sudo scripts/start-polkit.sh $me"
  sudo scripts/start-polkit.sh "$me" ||
    echo "run.sh: could not install them; your password prompt will not name what it signs until root runs: scripts/start-polkit.sh $me" >&2
fi

started=$(date +%s)
step() { printf '== %s (%d s in)\n' "$*" "$(( $(date +%s) - started ))"; }
gui=0
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  gui=1
  # What the suite builds (scripts/test.sh): after it, nothing rebuilds here.
  scripts/build-app.sh --playground
  bin="$PWD/target/app"
  main=("$bin/parley-custodyd" --approver desktop)
else
  echo "No display found (neither DISPLAY nor WAYLAND_DISPLAY is set): running the headless custody"
  echo "daemon, which asks you in this terminal. Run this again on a desktop for the app."
  step "cargo build --release: the daemon, the CLI, the playground (the first build takes several minutes)"
  cargo build --release --locked -p parley-cli -p parley-custody -p parley-playground
  bin="$PWD/target/release"
  main=("$bin/parley-custodyd" --approver terminal)
fi
step "built; starting"
export PATH="$bin:$PATH"

sock_dir="${XDG_RUNTIME_DIR:-/tmp}/parley-run-$(id -u)"
mkdir -p "$sock_dir" && chmod 700 "$sock_dir"
export PARLEY_CUSTODY_SOCKET="$sock_dir/custody.sock"
echo
if [ "$gui" = 1 ]; then
  echo "Parley Custody runs as a service with a tray icon (parley-custodyd --approver desktop); its window"
  echo "opens as a separate process that holds no key. Create your principal key there (first run)."
else
  echo "Parley Custody runs in this terminal (parley-custodyd --approver terminal). Create your principal key at its prompt (first run)."
fi
echo "The playground (a shop and a calendar) then starts; its scripted agent asks you for a grant,"
echo "then for a consent to an order over the limit. Ctrl-C stops everything."
echo "Other agents use:  parley init   and   parley approve --socket $PARLEY_CUSTODY_SOCKET <pc1.code>"
echo

# The scripted agent waits until custody answers and holds a principal key
# (the services must know which principal to trust), then walks the scenarios.
# It is this script's child, not the service's: custody reads the chain of
# processes behind each request from the kernel, and shows it in the review
# (parley-playground ← bash run.sh ← your shell ← your terminal). So the
# service runs as a child of this script too (no exec), and this script
# stops the playground when the service ends.
playground() {
  has_principal() {
    parley whoami --json --socket "$PARLEY_CUSTODY_SOCKET" 2>/dev/null |
      python3 -c 'import json, sys; sys.exit(0 if json.load(sys.stdin)["custody"]["principals"] else 1)'
  }
  for _ in $(seq 1 600); do has_principal && break; sleep 2; done
  has_principal || { echo "[playground] custody has no principal key after 20 minutes; not starting" >&2; exit 0; }
  parley-playground demo --dialect "${PARLEY_PLAYGROUND_DIALECT:-parley}" \
    --custody-socket "$PARLEY_CUSTODY_SOCKET" > >(sed -u 's/^/[playground] /') 2>&1

  # Then a YEA MCP job server (a refund desk) and a scripted MCP client: custody
  # issues the server its signed policy (small store credit runs unasked); a
  # refund comes back with an approval code, which you approve with
  # `parley approve` in another terminal (review, typed phrase); the refund
  # then runs once, and the same call again is refused.
  [ "${PARLEY_PLAYGROUND_MCP:-1}" = 1 ] || exit 0
  mcp_dir="$sock_dir/mcp-jobs"; mkdir -p "$mcp_dir" && chmod 700 "$mcp_dir"
  export YEA_STORE="$mcp_dir/store"
  server_id=$(parley-playground mcp-jobs --key "$mcp_dir/server.key" --service-id)
  echo "[mcp] asking custody for the refund desk's policy (a grant to its key $server_id)"
  parley grant --socket "$PARLEY_CUSTODY_SOCKET" --to "$server_id" --can store_credit --can refund \
    --verbs COMMIT --risk low --each spend=25USD --total spend=100USD --exp 1h --label "refund desk policy" \
    --reason "let store credit up to 25.00 USD run without asking" >"$mcp_dir/policy.grant" || exit 0
  echo "[mcp] when the code appears, run in another terminal:"
  echo "[mcp]   YEA_STORE=$YEA_STORE parley approve --socket $PARLEY_CUSTODY_SOCKET \"\$(cat $mcp_dir/code)\""
  parley-playground mcp-client --store "$YEA_STORE" --code-file "$mcp_dir/code" -- \
    parley-playground mcp-jobs --key "$mcp_dir/server.key" --policy "$mcp_dir/policy.grant" \
    --store "$YEA_STORE" --custody-socket "$PARLEY_CUSTODY_SOCKET" > >(sed -u 's/^/[mcp] /') 2>&1
}
playground &
playground_pid=$!
# The playground's children first (the demo, then the MCP client), then the subshell.
trap 'pkill -P "$playground_pid" 2>/dev/null; kill "$playground_pid" 2>/dev/null || true' EXIT

if [ -n "${DBUS_SESSION_BUS_ADDRESS:-}" ] && dbus-send --session --print-reply --dest=org.freedesktop.DBus \
     /org/freedesktop/DBus org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q true; then
  status=0
  "${main[@]}" "$@" || status=$?
  exit "$status"
fi

# No keychain on a session bus (a server, or root on a fresh machine): start a
# private session bus with gnome-keyring, unlocked with a password you choose.
# The keyring persists in ~/.local/share/keyrings, so the principal key survives restarts.
echo "No OS keychain on a session bus: starting a private gnome-keyring for Parley Custody."
if [ -z "${PARLEY_KEYRING_PASSWORD:-}" ]; then
  read -r -s -p "Password for the Parley keyring (new or existing): " PARLEY_KEYRING_PASSWORD; echo
fi
export PARLEY_KEYRING_PASSWORD
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
chmod 700 "$XDG_RUNTIME_DIR"
status=0
dbus-run-session -- sh -c '
  printf "%s" "$PARLEY_KEYRING_PASSWORD" | gnome-keyring-daemon --unlock --components=secrets >/dev/null
  unset PARLEY_KEYRING_PASSWORD
  i=0
  until dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q true; do
    i=$((i+1)); [ "$i" -gt 100 ] && { echo "gnome-keyring did not start" >&2; exit 1; }; sleep 0.1
  done
  exec "$0" "$@"' "${main[@]}" "$@" || status=$?
exit "$status"
