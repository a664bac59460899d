#!/usr/bin/env python3
# The end-to-end sessions' stand-in for the UI binary the custody service
# starts (scripts/test-app.sh sets PARLEY_CUSTODY_UI to this file). The
# service gives it its channel as standard input (PARLEY_CUSTODY_UI_FD=0), as
# it gives the real app; this hands that very descriptor (SCM_RIGHTS), with
# the arguments it was started with, to ui-launch.py, which WebDriver started
# and which becomes the real app with it. Nobody waiting: exits 1, as a UI
# that cannot start does (the service keeps the window for the next UI).
import json, os, socket, sys

if os.environ.get("PARLEY_CUSTODY_UI_FD") != "0":
    sys.exit("ui-handoff: started without the channel (PARLEY_CUSTODY_UI_FD=0)")
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(os.environ["PARLEY_E2E_HANDOFF"])
except OSError as e:
    sys.exit(f"ui-handoff: no launcher waits: {e}")
socket.send_fds(s, [json.dumps(sys.argv[1:]).encode()], [0])
s.close()
