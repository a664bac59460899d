#!/usr/bin/env python3
"""What a process sees from inside another process's namespaces.

    inside.py PID SECRET_TOOL SERVICE BUS_ADDRESS SOCKET...

Enters the user namespace that owns PID's mount namespace (bubblewrap
nests a second user namespace inside it, which owns nothing), then PID's
network and mount namespaces, exactly as far as the kernel lets this user
(namespaces PID shares with this process are left as they are), and from
there:

- runs `secret-tool search service SERVICE` (opened before entering: the
  sandbox has no /usr/bin) twice: with PID's own environment, and with
  DBUS_SESSION_BUS_ADDRESS=BUS_ADDRESS, the session's real bus (what an
  exploit that knows it would try);
- connects to each SOCKET (a path, or @name for an abstract socket).

Prints one JSON object: what was entered, each search's exit code and
output, and each connection's outcome ("connected" or the error).
"""

import ctypes
import fcntl
import json
import os
import socket
import sys

CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
NS_GET_USERNS = 0xB701

libc = ctypes.CDLL(None, use_errno=True)


def setns(fd, kind):
    if libc.setns(fd, kind) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def inode(path_or_fd):
    return os.stat(path_or_fd).st_ino


def environ(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        pairs = [e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e]
    return {k.decode(): v.decode(errors="replace") for k, v in pairs}


def main():
    pid, secret_tool, service, bus = sys.argv[1:5]
    sockets = sys.argv[5:]
    env = environ(pid)
    tool = os.open(secret_tool, os.O_RDONLY)
    net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    mnt = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY)
    owner = fcntl.ioctl(mnt, NS_GET_USERNS)
    entered = []
    if inode(owner) != inode("/proc/self/ns/user"):
        setns(owner, CLONE_NEWUSER)
        entered.append("user")
    if inode(net) != inode("/proc/self/ns/net"):
        setns(net, CLONE_NEWNET)
        entered.append("net")
    if inode(mnt) != inode("/proc/self/ns/mnt"):
        setns(mnt, CLONE_NEWNS)
        os.chdir("/")
        entered.append("mnt")

    def search(environment):
        r, w = os.pipe()
        child = os.fork()
        if child == 0:
            os.dup2(w, 1)
            os.dup2(w, 2)
            try:
                os.execve(tool, ["secret-tool", "search", "service", service], environment)
            finally:
                os._exit(127)
        os.close(w)
        out = b""
        while chunk := os.read(r, 65536):
            out += chunk
        _, status = os.waitpid(child, 0)
        return {"code": os.waitstatus_to_exitcode(status), "out": out.decode(errors="replace")[-2000:]}

    own_env = search(env)
    real_bus = search({**env, "DBUS_SESSION_BUS_ADDRESS": bus})

    reached = {}
    for path in sockets:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(3)
        try:
            s.connect("\0" + path[1:] if path.startswith("@") else path)
            reached[path] = "connected"
        except OSError as e:
            reached[path] = f"{type(e).__name__}: {e}"
        finally:
            s.close()

    print(json.dumps({"entered": entered, "own_env": own_env, "real_bus": real_bus, "sockets": reached}))


main()
