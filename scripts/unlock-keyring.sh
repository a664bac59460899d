#!/bin/sh
# Run inside a fresh D-Bus session: dbus-run-session -- sh unlock-keyring.sh CMD ARGS...
# Unlocks gnome-keyring (its login keyring, with the password in KEYRING_PW),
# waits until it answers on the session bus as org.freedesktop.secrets (exit
# 97 after 10 s), then becomes CMD. The tests that run the real daemon on a
# real keyring (custody/tests/terminal_prompt.rs, cli/tests/separate_users.rs)
# pass this text to sh -c.
printf '%s' "$KEYRING_PW" | gnome-keyring-daemon --unlock --components=secrets >/dev/null
i=0
until dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
      org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q 'boolean true'; do
  i=$((i+1)); [ "$i" -gt 100 ] && exit 97; sleep 0.1
done
exec "$@"
