#!/usr/bin/env bash
# Builds the Debian package target/package/parley-custody_<version>_amd64.deb
# with Tauri's own bundler (@tauri-apps/cli, pinned in packaging/tauri-cli):
#
#   /usr/bin/parley-custody          the desktop app (the bundler's main binary,
#                                    with its desktop entry and icons)
#   /usr/bin/parley                  the CLI, with man pages and bash/zsh/fish
#                                    completions generated from its clap definitions
#   /usr/bin/parley-custodyd         the headless daemon
#   /usr/bin/parley-custody-setup    the one privileged helper (agent users)
#   /usr/share/polkit-1/actions/     the step-up actions and the helper's actions
#   postinst / postrm                packaging/debian/: the administrator's prompt
#                                    owners named again after every install or
#                                    upgrade; their list removed on purge
#
# Start at login is the app's own opt-in (Settings; offered once at first
# run): it writes an XDG autostart entry for the user, so nothing here starts
# anything for every user.
#
# usage: scripts/package.sh        (as root on Debian 12, like scripts/run.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
scripts/setup.sh
export CARGO_TERM_COLOR=never

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
arch=$(dpkg --print-architecture)
out="$root/target/package"
stage="$out/stage"
rm -rf "$stage"
mkdir -p "$stage/man" "$stage/completions" "$stage/target/release"

echo "== the app: scripts/build-app.sh (what scripts/run.sh runs; the first build takes several minutes)"
CARGO_TERM_QUIET=true scripts/build-app.sh
echo "== the bundler (packaging/tauri-cli)"
(cd packaging/tauri-cli && NPM_CONFIG_UPDATE_NOTIFIER=false npm ci --no-audit --no-fund --loglevel=error)
bin="$root/target/app"

echo "== man pages and completions, generated from parley's clap definitions"
"$bin/parley" manpages "$stage/man" >/dev/null
gzip -9n "$stage"/man/*.1
"$bin/parley" completions bash >"$stage/completions/parley"
"$bin/parley" completions zsh >"$stage/completions/_parley"
"$bin/parley" completions fish >"$stage/completions/parley.fish"

# The bundler takes the main binary from <target dir>/release: a staging
# target dir holds this build's app binary, so the package is made from
# exactly what was just built (and cargo's own target dir is left alone).
# Stripped copies (the build keeps its symbols for debugging).
mkdir -p "$stage/bin"
for b in parley parley-custodyd parley-custody-setup; do
  strip --strip-unneeded -o "$stage/bin/$b" "$bin/$b"
done
strip --strip-unneeded -o "$stage/target/release/parley-custody" "$bin/parley-custody"
# The C library the programs need, from the newest symbol version they use.
glibc=$(objdump -T "$stage"/bin/* "$stage/target/release/parley-custody" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n1)

# Debian's place for it (the bundler's own `changelog` goes under the product name).
gzip -9nc packaging/debian/changelog >"$stage/changelog.gz"

cat >"$stage/deb.conf.json" <<JSON
{
  "bundle": {
    "active": true,
    "targets": ["deb"],
    "category": "Utility",
    "shortDescription": "Holds your Parley principal key; signs only what you approve",
    "longDescription": "Parley Custody keeps the principal key of the Parley (YEA) protocol\\nin the OS keychain, apart from your AI agents. Agents ask it over a local\\nsocket for grants and consents; it re-verifies every proposal, shows you\\nits real effects, cost, risk and undo window, and signs only after you\\ndecide, with OS authentication before signing.",
    "publisher": "Parley Custody",
    "copyright": "The Parley Custody developers, Apache-2.0",
    "license": "Apache-2.0",
    "linux": {
      "deb": {
        "section": "utils",
        "priority": "optional",
        "depends": ["libc6 (>= $glibc)", "polkitd", "libdbus-1-3", "bubblewrap", "xdg-dbus-proxy"],
        "recommends": ["gnome-keyring | keepassxc", "pkexec"],
        "postInstallScript": "$root/packaging/debian/postinst",
        "postRemoveScript": "$root/packaging/debian/postrm",
        "files": {
          "/usr/bin/parley": "$stage/bin/parley",
          "/usr/bin/parley-custodyd": "$stage/bin/parley-custodyd",
          "/usr/bin/parley-custody-setup": "$stage/bin/parley-custody-setup",
          "/usr/share/polkit-1/actions/org.parley.custody.policy": "$root/packaging/polkit/org.parley.custody.policy",
          "/usr/share/polkit-1/actions/org.parley.custody.setup.policy": "$root/packaging/polkit/org.parley.custody.setup.policy",
          "/usr/lib/systemd/user/parley-custodyd.service": "$root/packaging/systemd/parley-custodyd.service",
          "/usr/share/man/man1": "$stage/man/",
          "/usr/share/bash-completion/completions/parley": "$stage/completions/parley",
          "/usr/share/zsh/vendor-completions/_parley": "$stage/completions/_parley",
          "/usr/share/fish/vendor_completions.d/parley.fish": "$stage/completions/parley.fish",
          "/usr/share/doc/parley-custody/copyright": "$root/packaging/debian/copyright",
          "/usr/share/doc/parley-custody/changelog.gz": "$stage/changelog.gz"
        }
      }
    }
  }
}
JSON

echo "== tauri bundle --bundles deb"
(cd src-tauri && CARGO_TARGET_DIR="$stage/target" CI=true \
  "$root/packaging/tauri-cli/node_modules/.bin/tauri" bundle --bundles deb --config "$stage/deb.conf.json")
built=$(find "$stage/target/release/bundle/deb" -maxdepth 1 -name '*.deb' | head -n1)
[ -n "$built" ] || { echo "package: the bundler made no .deb" >&2; exit 1; }
deb="$out/parley-custody_${version}_${arch}.deb"
mv "$built" "$deb"
echo
dpkg-deb --field "$deb" Package Version Architecture Depends Recommends Installed-Size
echo "package: $deb ($(du -h "$deb" | cut -f1))"
