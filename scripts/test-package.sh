#!/usr/bin/env bash
# Tests the Debian package for real: builds it (scripts/package.sh, unless
# DEB=path is given), checks its control fields and contents, installs it
# with apt on this machine, checks what was installed (binaries run, man
# pages, completions, polkit reads both actions, the desktop entry is valid),
# starts the installed app hidden in a private desktop session and talks to
# it with the installed CLI, then purges it and checks that nothing is left.
#
# Installs into /usr: run it as root on a test machine (CI), like test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
[ "$(id -u)" -eq 0 ] || { echo "test-package: run as root (it installs the package)" >&2; exit 2; }

if [ -z "${DEB:-}" ]; then
  scripts/package.sh
  DEB=$(ls -t target/package/parley-custody_*_"$(dpkg --print-architecture)".deb | head -n1)
fi
fail() { echo "test-package: FAIL: $*" >&2; exit 1; }
ok() { echo "ok - $*"; }

echo "== control fields of $DEB"
field() { dpkg-deb --field "$DEB" "$1"; }
[ "$(field Package)" = parley-custody ] || fail "Package is '$(field Package)'"
depends=$(field Depends)
for need in libwebkit2gtk-4.1-0 libgtk-3-0 polkitd libdbus-1-3 bubblewrap xdg-dbus-proxy; do
  [[ "$depends" == *"$need"* ]] || fail "Depends lacks $need: $depends"
done
ok "Depends: $depends"
[[ "$(field Recommends)" == *gnome-keyring* ]] || fail "Recommends lacks a Secret Service provider: $(field Recommends)"
ok "Recommends: $(field Recommends)"
# The tray icon is the service's StatusNotifierItem over D-Bus (ksni): no AppIndicator library.
for unwanted in nodejs npm cargo rustc libwebkit2gtk-4.1-dev libayatana-appindicator3-1 libappindicator3-1; do
  [[ " $depends " != *" $unwanted"* ]] || fail "Depends names $unwanted, which it does not need at run time"
done

echo "== lintian"
# Kept warnings: no-manual-page for parley-custodyd and parley-custody-setup
# (their --help is the manual; parley's pages are generated from clap).
lint_rc=0
lint=$(lintian --fail-on error --tag-display-limit 0 "$DEB" 2>&1) || lint_rc=$?
grep -v 'running with root privileges' <<<"$lint" || true
[ "$lint_rc" -eq 0 ] || fail "lintian reports errors"
ok "lintian: no errors"

echo "== contents"
contents=$(dpkg-deb --contents "$DEB")
for path in /usr/bin/parley-custody /usr/bin/parley /usr/bin/parley-custodyd /usr/bin/parley-custody-setup \
    /usr/share/polkit-1/actions/org.parley.custody.policy /usr/share/polkit-1/actions/org.parley.custody.setup.policy \
    /usr/share/man/man1/parley.1.gz /usr/share/man/man1/parley-approve.1.gz \
    /usr/share/bash-completion/completions/parley /usr/share/zsh/vendor-completions/_parley \
    /usr/share/fish/vendor_completions.d/parley.fish /usr/share/doc/parley-custody/copyright; do
  # dpkg-deb lists paths as "usr/…" or "./usr/…" depending on the tool that built it.
  grep -qE " (\./)?${path#/}( |$)" <<<"$contents" || fail "$path is not in the package"
done
grep -qE ' (\./)?usr/share/applications/[^/]+\.desktop$' <<<"$contents" || fail "no desktop entry in the package"
grep -qE ' (\./)?usr/share/icons/hicolor/[^/]+/apps/parley-custody\.png$' <<<"$contents" || fail "no icon in the package"
bins=$(grep -E ' (\./)?usr/bin/.' <<<"$contents")
[ "$(wc -l <<<"$bins")" -eq 4 ] || fail "expected 4 programs in /usr/bin: $bins"
if grep -qv '^-rwxr-xr-x' <<<"$bins"; then fail "a program in /usr/bin is not mode 0755: $bins"; fi
ok "every file is in the package, binaries 0755"

cleanup() {
  status=$?
  [ -n "${app_pid:-}" ] && kill "$app_pid" 2>/dev/null || true
  if dpkg-query -W -f='${Status}' parley-custody 2>/dev/null | grep -q "install ok installed"; then
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq parley-custody >/dev/null || true
  fi
  [ -n "${T:-}" ] && { [ "$status" -ne 0 ] && [ -f "$T/app.log" ] && tail -n 40 "$T/app.log" >&2; rm -rf "$T"; }
  exit "$status"
}
trap cleanup EXIT

echo "== apt install"
install_started=$(date +%s.%N)
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$root/$DEB" >/dev/null 2>&1 ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$DEB"
dpkg-query -W -f='${Status}\n' parley-custody | grep -q "install ok installed" || fail "not installed"
install_secs=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$install_started" "$(date +%s.%N)")
ok "installed $(dpkg-query -W -f='${Version}' parley-custody) in $install_secs s (package $(du -h "$DEB" | cut -f1), installed size $(dpkg-query -W -f='${Installed-Size}' parley-custody) KiB)"

for b in parley parley-custodyd parley-custody-setup parley-custody; do
  v=$(env -u DISPLAY "/usr/bin/$b" --version) || fail "$b --version failed"
  ok "$v"
done
zcat /usr/share/man/man1/parley.1.gz | grep -q '^\.TH' || fail "parley.1 is not a man page"
man -w parley >/dev/null || fail "man does not find parley"
MANPAGER=cat MANWIDTH=80 man parley 2>/dev/null | grep -q 'parley' || fail "man parley shows nothing"
ok "man pages: $(ls /usr/share/man/man1/parley*.1.gz | wc -l)"
bash -c 'source /usr/share/bash-completion/completions/parley && complete -p parley' >/dev/null ||
  fail "the bash completion does not register"
ok "bash completion registers"
desktop=$(grep -l '^Exec=parley-custody' /usr/share/applications/*.desktop | head -n1)
[ -n "$desktop" ] || fail "no desktop entry runs parley-custody"
desktop-file-validate "$desktop" || fail "$desktop is not a valid desktop entry"
ok "desktop entry $desktop is valid"
ls /usr/share/icons/hicolor/*/apps/parley-custody.png >/dev/null || fail "no icon installed"
unit=/usr/lib/systemd/user/parley-custodyd.service
[ -f "$unit" ] || fail "no systemd user unit for parley-custodyd"
systemd-analyze verify "$unit" || fail "systemd-analyze does not accept $unit"
grep -q '^ExecStart=/usr/bin/parley-custodyd --approver desktop --hidden$' "$unit" || fail "$unit does not start the desktop service hidden"
ok "systemd user unit $unit: systemd-analyze verify accepts it"

scripts/start-polkit.sh >/dev/null
for a in org.parley.custody.sign org.parley.custody.change org.parley.custody.setup-agent-user; do
  pkaction --action-id "$a" --verbose >/dev/null || fail "polkit does not know $a"
done
pkaction --action-id org.parley.custody.setup-agent-user --verbose | grep -q 'org.freedesktop.policykit.exec.path.*/usr/bin/parley-custody-setup' ||
  fail "the setup action does not name /usr/bin/parley-custody-setup"
pkaction --action-id org.parley.custody.setup-prompt-owner --verbose | grep -q 'org.freedesktop.policykit.exec.argv1.*prompt-owner' ||
  fail "polkit does not know the prompt-owner setup action"
ok "polkit reads all four actions"

echo "== prompt owners: named by the setup step, kept by a reinstall"
owner_user=owner-pkg
id -u "$owner_user" >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin "$owner_user"
named_in_both() {
  local a
  for a in org.parley.custody.sign org.parley.custody.change; do
    pkaction --verbose --action-id "$a" | grep -qE "policykit.owner.*unix-user:$owner_user( |$)" || return 1
  done
}
/usr/bin/parley-custody-setup prompt-owner --user "$owner_user" || fail "the prompt-owner step failed"
grep -qx "$owner_user" /etc/parley-custody/prompt-owners || fail "/etc/parley-custody/prompt-owners does not list $owner_user"
[ "$(stat -c '%U %a' /etc/parley-custody/prompt-owners)" = "root 644" ] || fail "the owners list is not root's 0644"
xmllint --noout /usr/share/polkit-1/actions/org.parley.custody.policy || fail "the rewritten policy is not valid XML"
for _ in $(seq 1 50); do named_in_both && break; sleep 0.1; done
named_in_both || fail "polkit does not name $owner_user as owner of both custody actions"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --reinstall --no-install-recommends "$root/$DEB" >/dev/null 2>&1 ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --reinstall --no-install-recommends "$DEB" >/dev/null
for _ in $(seq 1 50); do named_in_both && break; sleep 0.1; done
named_in_both || fail "after a reinstall, polkit no longer names $owner_user as owner"
ok "$owner_user is an owner of both actions after the setup step and after a reinstall"

echo "== the installed app, hidden in the tray, serves agents"
T=$(mktemp -d /tmp/parley-pkg.XXXXXX)
mkdir -p "$T/home" "$T/run" && chmod 700 "$T/run"
export T
HOME="$T/home" XDG_RUNTIME_DIR="$T/run" XDG_CONFIG_HOME="$T/home/.config" XDG_DATA_HOME="$T/home/.local/share" \
PARLEY_CUSTODY_NAMESPACE="pkg-$$" PARLEY_CUSTODY_SOCKET="$T/run/custody.sock" \
  timeout 300 xvfb-run -a -s "-screen 0 1366x768x24" dbus-run-session -- bash -c '
    set -euo pipefail
    printf "%s" "pkg-keyring" | gnome-keyring-daemon --unlock --components=secrets >/dev/null
    i=0
    until dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q true; do
      i=$((i+1)); [ "$i" -gt 100 ] && { echo "no keychain" >&2; exit 1; }; sleep 0.1
    done
    # The app with --hidden starts the custody service (the tray only) and exits.
    /usr/bin/parley-custody --hidden >"$T/app.log" 2>&1 || { cat "$T/app.log" >&2; echo "parley-custody --hidden failed" >&2; exit 1; }
    service=$(pgrep -n -u "$(id -u)" -x parley-custodyd) || { echo "no custody service runs" >&2; exit 1; }
    i=0
    reachable() {
      /usr/bin/parley whoami --json --socket "$PARLEY_CUSTODY_SOCKET" >"$T/whoami.json" 2>"$T/whoami.err" &&
        python3 -c "import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))[\"custody\"][\"reachable\"] else 1)" "$T/whoami.json"
    }
    until reachable; do
      i=$((i+1)); [ "$i" -gt 600 ] && { echo "the installed service never answered on its socket" >&2; cat "$T/whoami.err" >&2; exit 1; }
      kill -0 "$service" 2>/dev/null || { echo "the installed service exited" >&2; exit 1; }
      sleep 0.1
    done
    [ "$(readlink "/proc/$service/exe")" = /usr/bin/parley-custodyd ] || { echo "the service is not the installed one" >&2; exit 1; }
    # Hidden: no window was opened.
    if command -v xdotool >/dev/null && xdotool search --name "Parley Custody" >/dev/null 2>&1; then
      echo "--hidden opened a window" >&2; exit 1
    fi
    kill "$service"; while kill -0 "$service" 2>/dev/null; do sleep 0.1; done
  ' || fail "the installed app did not serve its socket (log: above)"
ok "the installed app started the installed service hidden, which answered the installed CLI on its socket"

echo "== the installed app through WebDriver: its window, start at login, the entry's Exec line"
PARLEY_APP=/usr/bin/parley-custody PARLEY_CLI=/usr/bin/parley E2E_ONLY=installed scripts/test-app.sh --e2e ||
  fail "the installed app's end-to-end test failed"
ok "the installed app's window, the first-run autostart offer, the entry starting it hidden, Settings removing it"

echo "== apt purge"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq parley-custody >/dev/null
for f in /usr/bin/parley /usr/bin/parley-custody /usr/bin/parley-custodyd /usr/share/polkit-1/actions/org.parley.custody.policy /usr/lib/systemd/user/parley-custodyd.service; do
  [ ! -e "$f" ] || fail "$f is left after purge"
done
[ ! -e /etc/parley-custody ] || fail "/etc/parley-custody is left after purge"
userdel "$owner_user" 2>/dev/null || true
ok "purged; nothing of it is left in /usr or /etc"
echo "test-package: everything passed"
