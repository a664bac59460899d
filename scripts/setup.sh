#!/usr/bin/env bash
# Installs what building, running and testing Parley Custody needs on Debian 12,
# as root (or with sudo). Idempotent: packages already present are skipped.
set -euo pipefail

packages=(
  build-essential pkg-config
  libdbus-1-dev libsecret-1-dev    # keyring's Secret Service backend
  gnome-keyring dbus-x11 dbus-bin  # the OS keychain, and a private session bus for it
  tmux  # a real terminal for the headless daemon's prompt tests (custody/tests/terminal_prompt.rs)
  python3-minimal                  # /usr/bin/python3 for cross-user socket tests
  util-linux passwd                # runuser, useradd/groupadd for separate-user tests
  # The desktop app (src-tauri, Tauri v2 on WebKitGTK) and its tests:
  libwebkit2gtk-4.1-dev libgtk-3-dev libayatana-appindicator3-dev librsvg2-dev libssl-dev
  xvfb xauth                       # a display for the app in tests and headless runs
  webkit2gtk-driver                # WebKitWebDriver, behind tauri-driver
  bubblewrap xdg-dbus-proxy        # WebKitGTK's web-process sandbox (src-tauri/src/webkit.rs)
  libsecret-tools                  # secret-tool: the sandbox test searches the Secret Service from inside it
  libnotify-bin dunst              # a notification daemon for the notification test
  sway wtype                       # the wayland e2e session: a headless Wayland compositor with a seat, and a virtual keyboard for it
  imagemagick                      # screenshots and icon checks
  chromium                         # the UI tests (playwright-core drives Debian's Chromium)
  # OS authentication before signing: polkitd (pkcheck, pkttyagent, the
  # setuid helper), a system bus for it where no init system runs one.
  polkitd pkexec dbus-daemon dbus-system-bus-common
  xdotool                          # a synthesized click (XTEST) in the step-up test
  x11-utils                        # xwininfo: which window is where, in the review-window test
  hyperfine valgrind               # scripts/bench-lens.sh: whole-process timing and instruction counts
  desktop-file-utils               # scripts/test-package.sh: the installed desktop entry is valid
  man-db                           # scripts/test-package.sh: man parley, from the package
  lintian                          # scripts/test-package.sh: Debian's checks of the package
  libxml2-utils                    # xmllint: the rewritten polkit policy is valid XML (test-package.sh, prompt_owners_upgrade)
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

# The UI is built with Node.js 20+ and npm 10+ (Vite 8); Debian 12's own nodejs is 18.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "setup: node and npm are missing: install Node.js 20 or later (e.g. NodeSource) for the desktop app's UI" >&2
elif [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
  echo "setup: Node.js $(node --version) is too old for the UI build: install Node.js 20 or later" >&2
fi
