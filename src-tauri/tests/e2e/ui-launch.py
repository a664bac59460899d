#!/usr/bin/env python3
# What WebDriver starts in the end-to-end sessions (session.mjs startApp):
# `ui-launch.py [--no-knock] APP [ARGS…]`. The real app runs only with the channel the
# custody service gave the UI it started, so this asks the service for a
# window as the menu entry does (APP with no channel: a knock at the door),
# receives from ui-handoff.py (what the service started) that channel, puts
# it on standard input and becomes APP with it (exec: the same process
# WebDriver drives), with the service's arguments (`--open …`). With
# --no-knock it only waits (60 s) for the UI the service starts by itself,
# as it does for a request's review window.
import json, os, socket, subprocess, sys

args = sys.argv[1:]
knock_first = args[:1] != ["--no-knock"]
if not knock_first:
    args = args[1:]
app, extra = args[0], args[1:]
path = os.environ["PARLEY_E2E_HANDOFF"]
try:
    os.unlink(path)
except FileNotFoundError:
    pass
listener = socket.socket(socket.AF_UNIX)
listener.bind(path)
listener.listen(1)
listener.settimeout(60)
if knock_first:
    knock = subprocess.run([app, "--open", "main:home"], stdin=subprocess.DEVNULL, timeout=30)
    if knock.returncode != 0:
        sys.exit(f"ui-launch: the knock at custody's door failed ({knock.returncode})")
conn, _ = listener.accept()
msg, fds, _, _ = socket.recv_fds(conn, 65536, 1)
conn.close()
listener.close()
os.unlink(path)
if len(fds) != 1:
    sys.exit("ui-launch: the handoff brought no channel")
os.dup2(fds[0], 0)
os.close(fds[0])
os.environ["PARLEY_CUSTODY_UI_FD"] = "0"
os.execv(app, [app] + json.loads(msg) + extra)
