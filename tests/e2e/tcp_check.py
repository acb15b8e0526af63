#!/usr/bin/env python3
"""tcp_check.py: kernel TCP with a checked payload, for the e2e tests.

  tcp_check.py server PORT          accept one connection (IPv4 or IPv6),
                                    read to EOF, print
                                    '{"bytes":N,"sha256":"..."}' and exit
  tcp_check.py client ADDR PORT N   send N bytes to ADDR (IPv4 or IPv6),
                                    shut the connection down cleanly, print
                                    the same line for what it sent

The payload is pseudo-random bytes from a fixed seed, so the two lines agree
exactly when every byte arrived unchanged and in order.
"""
import hashlib
import json
import random
import socket
import sys

from dualstack import server_socket


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "server":
        s = server_socket(socket.SOCK_STREAM, int(sys.argv[2]))
        s.listen(1)
        s.settimeout(60)
        c, _ = s.accept()
        c.settimeout(60)
        h, n = hashlib.sha256(), 0
        while True:
            b = c.recv(1 << 20)
            if not b:
                break
            h.update(b)
            n += len(b)
        c.close()
        print(json.dumps({"bytes": n, "sha256": h.hexdigest()}), flush=True)
    elif len(sys.argv) == 5 and sys.argv[1] == "client":
        total = int(sys.argv[4])
        chunk = random.Random(14).randbytes(1 << 20)
        c = socket.create_connection((sys.argv[2], int(sys.argv[3])), timeout=10)
        c.settimeout(60)
        h, n = hashlib.sha256(), 0
        while n < total:
            b = chunk[: min(len(chunk), total - n)]
            c.sendall(b)
            h.update(b)
            n += len(b)
        c.shutdown(socket.SHUT_WR)
        c.recv(1)  # the server's close: everything was read
        c.close()
        print(json.dumps({"bytes": n, "sha256": h.hexdigest()}), flush=True)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
