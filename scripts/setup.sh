#!/usr/bin/env bash
# Installs what building, running and testing Parley Custody needs on Debian 12,
# as root (or with sudo). Idempotent: packages already present are skipped.
set -euo pipefail

packages=(
  build-essential pkg-config
  libdbus-1-dev libsecret-1-dev    # keyring's Secret Service backend
  gnome-keyring dbus-x11 dbus-bin  # the OS keychain, and a private session bus for it
  python3-minimal                  # /usr/bin/python3 for cross-user socket tests
  util-linux passwd                # runuser, useradd/groupadd for separate-user tests
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

command -v cargo >/dev/null || { echo "setup: cargo is missing: install the Rust toolchain (rustup)" >&2; exit 1; }
