"""dualstack.py: the server socket that tcp_check.py and udp_gso_check.py
listen on: IPv6 with IPv4-mapped addresses on one socket, or IPv4 alone on a
kernel without IPv6."""
import socket


def server_socket(kind, port):
    """A socket of kind (SOCK_STREAM or SOCK_DGRAM) bound to port on every
    address, IPv6 and IPv4."""
    try:
        s = socket.socket(socket.AF_INET6, kind)
        try:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("::", port))
            return s
        except OSError:
            s.close()
            raise
    except OSError:
        s = socket.socket(socket.AF_INET, kind)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port))
        return s
