#!/usr/bin/env python3
"""l2_probe.py: one tagged broadcast frame, and a count of who received it.

  l2_probe.py send IFACE TAG            send one broadcast frame (EtherType
                                        0x88b5, local experimental) whose
                                        payload names TAG
  l2_probe.py count IFACE TAG SECONDS   listen on IFACE; print "listening"
                                        (stdout, flushed) once the socket is
                                        bound, then after SECONDS the number
                                        of frames with TAG that arrived
  l2_probe.py flood IFACE TAG SECONDS   send such frames for SECONDS as fast
                                        as one thread can, then print how
                                        many were sent (a guest's broadcast
                                        storm, for scripts/bench-storm.sh)

For the e2e tests: a broadcast must reach every other station exactly once,
across hosts too, and never come back to its sender.
"""
import socket
import sys
import time

ETHERTYPE = 0x88B5


def payload(tag):
    return b"vdev-l2-probe:" + tag.encode() + b":"


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "send":
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((sys.argv[2], 0))
        src = s.getsockname()[4]
        body = payload(sys.argv[3]).ljust(46, b"\0")
        s.send(b"\xff" * 6 + src + ETHERTYPE.to_bytes(2, "big") + body)
        return 0
    if len(sys.argv) == 5 and sys.argv[1] == "flood":
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((sys.argv[2], 0))
        src = s.getsockname()[4]
        frame = b"\xff" * 6 + src + ETHERTYPE.to_bytes(2, "big") + payload(sys.argv[3]).ljust(46, b"\0")
        end = time.monotonic() + float(sys.argv[4])
        n = 0
        send = s.send
        while time.monotonic() < end:
            for _ in range(256):
                try:
                    send(frame)
                    n += 1
                except OSError:  # ENOBUFS: the queue is full; go on
                    pass
        print(n, flush=True)
        return 0
    if len(sys.argv) == 5 and sys.argv[1] == "count":
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETHERTYPE))
        s.bind((sys.argv[2], ETHERTYPE))
        want = payload(sys.argv[3])
        print("listening", flush=True)
        end = time.monotonic() + float(sys.argv[4])
        n = 0
        while True:
            left = end - time.monotonic()
            if left <= 0:
                break
            s.settimeout(left)
            try:
                frame, addr = s.recvfrom(2048)
            except socket.timeout:
                break
            if addr[2] != socket.PACKET_OUTGOING and frame[14:14 + len(want)] == want:
                n += 1
        print(n, flush=True)
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
