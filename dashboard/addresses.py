"""The addresses ``./dev app --share`` can be opened at: every non-loopback IPv4 address of this
machine's network interfaces, with the server's port.

Streamlit prints only ``browser.serverAddress`` (``localhost`` in ``.streamlit/config.toml``, set
so that it never asks a server on the internet for the machine's external address). The
addresses here are read from the interfaces themselves (``SIOCGIFADDR`` on each interface of
``socket.if_nameindex()``): no name is resolved and nothing is sent over the network.

``python -m dashboard.addresses [streamlit options]`` prints one URL a line; the port is the one
given as ``--server.port N`` (or ``--server.port=N``), else 8501, Streamlit's default.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
import sys

DEFAULT_PORT = 8501
_SIOCGIFADDR = 0x8915  # Linux: the IPv4 address of an interface


def server_port(args: list[str], *, default: int = DEFAULT_PORT) -> int:
    """The port among Streamlit's command-line options (the last one given wins).

    >>> server_port(["--server.port", "9000"]), server_port(["--server.port=80"]), server_port([])
    (9000, 80, 8501)
    """
    port = default
    for i, arg in enumerate(args):
        if arg == "--server.port" and i + 1 < len(args):
            port = int(args[i + 1])
        elif arg.startswith("--server.port="):
            port = int(arg.split("=", 1)[1])
    return port


def interface_addresses() -> list[str]:
    """The non-loopback IPv4 addresses of this machine's interfaces, in interface order, each
    once; empty where the system does not tell them this way (not Linux)."""
    try:
        import fcntl
    except ImportError:  # not a POSIX system
        return []
    found: list[str] = []
    try:
        interfaces = socket.if_nameindex()
    except OSError:
        return []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _, name in interfaces:
            try:
                reply = fcntl.ioctl(sock.fileno(), _SIOCGIFADDR,
                                    struct.pack("256s", name.encode()[:15]))
            except OSError:  # no IPv4 address, or not Linux
                continue
            address = socket.inet_ntoa(reply[20:24])
            if not ipaddress.ip_address(address).is_loopback and address not in found:
                found.append(address)
    return found


def share_urls(port: int) -> list[str]:
    """``http://ADDRESS:PORT`` for every address of :func:`interface_addresses`."""
    return [f"http://{address}:{port}" for address in interface_addresses()]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        port = server_port(args)
    except ValueError:
        print("--server.port is not a whole number; Streamlit will say so.")
        return 0
    urls = share_urls(port)
    if urls:
        print("The dashboard will listen on every interface; open it at:")
        print(f"  http://localhost:{port} (this machine)")
        for url in urls:
            print(f"  {url}")
    else:
        print(f"The dashboard will listen on every interface, port {port} (this machine's "
              "addresses could not be read from its interfaces).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
