#!/usr/bin/env bash
# Makes OS authentication before signing work on this machine, as root:
# a system D-Bus, polkitd, and Parley Custody's polkit action installed.
# Idempotent: what already runs is left alone. A desktop with systemd has
# all of this already (the package installs the action file); this script
# is for containers and CI machines that boot without an init system.
#
# usage: scripts/start-polkit.sh [USER…]
# Each USER named becomes an owner of custody's two actions
# (org.freedesktop.policykit.owner): polkit accepts the details that fill
# the prompt ($(decision), $(change)) only from root or an action's owner,
# so without it a non-root custody's OS prompt cannot name the decision.
# Owners already installed are kept (parallel callers naming different
# users do not undo each other).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
policy="$here/packaging/polkit/org.parley.custody.policy"
[ "$(id -u)" -eq 0 ] || { echo "start-polkit: needs root" >&2; exit 1; }
for tool in dbus-daemon /usr/lib/polkit-1/polkitd pkttyagent; do
  command -v "$tool" >/dev/null || { echo "start-polkit: $tool is missing: run scripts/setup.sh" >&2; exit 1; }
done

# Tests start this script from parallel threads: one at a time.
mkdir -p /run/dbus
exec 9>/run/dbus/.parley-start-polkit.lock
flock -w 60 9 || { echo "start-polkit: another start-polkit holds the lock for over 60 s" >&2; exit 1; }

# The action first: polkitd picks up new action files while it runs.
installed=/usr/share/polkit-1/actions/org.parley.custody.policy
owners=""
if [ -f "$installed" ]; then
  owners=$(sed -n 's|.*<annotate key="org.freedesktop.policykit.owner">\(.*\)</annotate>.*|\1|p' "$installed" | head -n1)
fi
for user in "$@"; do
  id -u "$user" >/dev/null 2>&1 || { echo "start-polkit: no such user: $user" >&2; exit 1; }
  case " $owners " in *" unix-user:$user "*) ;; *) owners="${owners:+$owners }unix-user:$user" ;; esac
done
want=$(mktemp)
trap 'rm -f "$want"' EXIT
if [ -n "$owners" ]; then
  sed "s|^\(  \)</action>|    <annotate key=\"org.freedesktop.policykit.owner\">$owners</annotate>\n  </action>|" "$policy" >"$want"
else
  cp "$policy" "$want"
fi
cmp -s "$want" "$installed" 2>/dev/null || install -D -m 0644 "$want" "$installed"

bus_answers() {
  dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
    org.freedesktop.DBus.GetId >/dev/null 2>&1
}
bus_has() {
  dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
    org.freedesktop.DBus.NameHasOwner "string:$1" 2>/dev/null | grep -q 'boolean true'
}
# A socket can outlive its bus (a container restarted from a snapshot keeps
# /run): only a bus that answers counts.
if ! bus_answers; then
  rm -f /run/dbus/system_bus_socket /run/dbus/pid
  dbus-daemon --system --fork --print-pid >/dev/null 9>&-
  for _ in $(seq 1 50); do bus_answers && break; sleep 0.1; done
  bus_answers || { echo "start-polkit: the system bus did not come up" >&2; exit 1; }
fi
if ! bus_has org.freedesktop.PolicyKit1; then
  # polkitd drops to its own user; without a journal it logs to stderr.
  log=/run/parley-polkitd.log
  setsid /usr/lib/polkit-1/polkitd --no-debug >"$log" 2>&1 </dev/null 9>&- &
  for _ in $(seq 1 100); do bus_has org.freedesktop.PolicyKit1 && break; sleep 0.1; done
  bus_has org.freedesktop.PolicyKit1 || {
    echo "start-polkit: polkitd did not come up; its last words ($log):" >&2
    tail -n 20 "$log" >&2
    exit 1
  }
fi
# polkitd reads action files at start and when they change; wait until ours is known.
known() {
  local a out
  for a in org.parley.custody.sign org.parley.custody.change; do
    out=$(pkaction --verbose --action-id "$a" 2>/dev/null) || return 1
    for user in "$@"; do grep -q "policykit.owner.*unix-user:$user\b" <<<"$out" || return 1; done
  done
}
for _ in $(seq 1 50); do
  known "$@" && exit 0
  sleep 0.1
done
echo "start-polkit: polkitd does not know org.parley.custody.sign and org.parley.custody.change${1:+ owned by $*}" >&2
exit 1
