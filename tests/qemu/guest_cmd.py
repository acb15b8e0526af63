#!/usr/bin/env python3
"""guest_cmd.py SOCKET TIMEOUT COMMAND: runs COMMAND in the test guest of
scripts/vm-guest-image.sh through its serial console on a Unix socket (a
libvirt <serial type='unix'> with mode='bind'), prints its output and exits
with its status.

The guest's console protocol (scripts/vm-guest-image.sh): "@ID COMMAND" in,
"vdev-guest: out ID LINE" for each line of output and "vdev-guest: done ID
rc=N" out. QEMU's socket chardev takes one client at a time, so the caller
runs one command at a time; the ID is this process's pid, unique among the
commands of one test. Exit status: the command's; 124 when TIMEOUT seconds
pass first or the console closes (the message says which).
"""
import os
import socket
import sys
import time


def main():
    if len(sys.argv) != 4:
        print("usage: guest_cmd.py SOCKET TIMEOUT COMMAND", file=sys.stderr)
        return 2
    path, timeout, cmd = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    ident = str(os.getpid())
    out_tag = "vdev-guest: out " + ident + " "
    done_tag = "vdev-guest: done " + ident + " rc="
    deadline = time.monotonic() + timeout
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    s.sendall(("@" + ident + " " + cmd + "\n").encode())
    buf = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            print("guest_cmd: no answer to '%s' within %g s" % (cmd, timeout), file=sys.stderr)
            return 124
        s.settimeout(left)
        try:
            data = s.recv(65536)
        except socket.timeout:
            continue
        if not data:
            print("guest_cmd: the console closed while '%s' ran" % cmd, file=sys.stderr)
            return 124
        buf += data
        *lines, buf = buf.split(b"\n")
        for raw in lines:
            line = raw.decode(errors="replace").rstrip("\r")
            # Firmware and kernel may write terminal escapes before the tag.
            i = line.find("vdev-guest: ")
            line = line[i:] if i >= 0 else ""
            if line.startswith(out_tag):
                print(line[len(out_tag):], flush=True)
            elif line.startswith(done_tag):
                return int(line[len(done_tag):])


if __name__ == "__main__":
    sys.exit(main())
