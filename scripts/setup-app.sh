#!/usr/bin/env bash
# The desktop app's packages are part of scripts/setup.sh; this name stays for
# anyone who runs the app's tests on their own (scripts/test-app.sh).
exec "$(dirname "$0")/setup.sh" "$@"
