#!/usr/bin/env python3
"""udp_gso_check.py: UDP segmentation offload (UDP_SEGMENT) from a socket, for
the e2e tests -- what QUIC stacks send.

  udp_gso_check.py server PORT N SEG
                                    receive until N datagrams arrived or 5 s
                                    passed without one; print
                                    '{"datagrams":N,"bad":B}' (B: datagrams
                                    whose size or bytes are not what the
                                    client sent) and exit
  udp_gso_check.py client ADDR PORT SENDS SEG
                                    SENDS sendmsg() calls of 10*SEG bytes with
                                    UDP_SEGMENT SEG, 1 ms apart (each leaves
                                    the socket as one GSO skb and arrives as
                                    10 datagrams of SEG bytes); print
                                    '{"datagrams":N}'

Every datagram carries its number in its first 4 bytes and then bytes that
follow from it, so the server checks each one on its own. IPv4 or IPv6.
"""
import json
import socket
import struct
import sys
import time

from dualstack import server_socket

UDP_SEGMENT = 103  # linux/udp.h
PER_SEND = 10


def payload(n, seg):
    body = bytes((n + i) & 0xFF for i in range(seg - 4))
    return struct.pack("!I", n) + body


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "server":
        want, seg = int(sys.argv[3]), int(sys.argv[4])
        s = server_socket(socket.SOCK_DGRAM, int(sys.argv[2]))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        print("listening", file=sys.stderr, flush=True)
        # The client may start seconds later on a loaded machine (ASan, two
        # cores): a long wait for the first datagram, then 5 s of silence
        # ends the count.
        s.settimeout(60)
        got = bad = 0
        while got < want:
            try:
                b = s.recv(65536)
            except socket.timeout:
                break
            s.settimeout(5)
            got += 1
            if len(b) != seg:
                bad += 1
                continue
            (n,) = struct.unpack("!I", b[:4])
            if b != payload(n, len(b)):
                bad += 1
        print(json.dumps({"datagrams": got, "bad": bad}), flush=True)
    elif len(sys.argv) == 6 and sys.argv[1] == "client":
        addr, port, sends, seg = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
        c = socket.socket(family(addr), socket.SOCK_DGRAM)
        c.setsockopt(socket.IPPROTO_UDP, UDP_SEGMENT, seg)
        c.connect((addr, port))
        n = 0
        for _ in range(sends):
            buf = b"".join(payload(n + i, seg) for i in range(PER_SEND))
            c.send(buf)
            n += PER_SEND
            time.sleep(0.001)
        print(json.dumps({"datagrams": n}), flush=True)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
