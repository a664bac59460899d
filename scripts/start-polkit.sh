#!/usr/bin/env bash
# Makes OS authentication before signing work on this machine, as root:
# a system D-Bus, polkitd, and Parley Custody's polkit action installed.
# Idempotent: what already runs is left alone. A desktop with systemd has
# all of this already (the package installs the action file); this script
# is for containers and CI machines that boot without an init system.
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
install -D -m 0644 "$policy" /usr/share/polkit-1/actions/org.parley.custody.policy

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
for _ in $(seq 1 50); do
  pkaction --action-id org.parley.custody.sign >/dev/null 2>&1 && pkaction --action-id org.parley.custody.change >/dev/null 2>&1 && exit 0
  sleep 0.1
done
echo "start-polkit: polkitd does not know org.parley.custody.sign and org.parley.custody.change" >&2
exit 1
