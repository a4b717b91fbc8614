"""Whether ``./dev app --share`` may start, and the addresses it can be opened at: every
non-loopback IPv4 address of this machine's network interfaces, with the server's port.

The rule for listening on every interface is here, in one place (:func:`share_check`): with
sign-in configured (an ``[auth]`` table in a secrets file Streamlit reads) the app shows
nothing but its sign-in page until a user signs in; without it, sharing needs ``--no-auth``
spelled out, and the refusal says what to do.

Streamlit prints only ``browser.serverAddress`` (``localhost`` in ``.streamlit/config.toml``, set
so that it never asks a server on the internet for the machine's external address). The
addresses here are read from the interfaces themselves (``SIOCGIFADDR`` on each interface of
``socket.if_nameindex()``): no name is resolved and nothing is sent over the network.

``python -m dashboard.addresses [--command NAME] [--no-auth] [streamlit options]`` applies the
rule (exit status 2 and the reason, naming the command NAME the user typed, when sharing is
refused), then prints one URL a line; the port is the one given
as ``--server.port N`` (or ``--server.port=N``), else 8501, Streamlit's default.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
import sys
from pathlib import Path

DEFAULT_PORT = 8501
#: The option that shares the app without sign-in (``./dev app --share --no-auth``).
NO_AUTH = "--no-auth"
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


def _secrets_files(args: list[str]) -> list[str]:
    """The ``--secrets.files`` among Streamlit's command-line options (each one given).

    >>> _secrets_files(["--secrets.files", "a.toml", "--secrets.files=b.toml", "--x", "c"])
    ['a.toml', 'b.toml']
    """
    files = []
    for i, arg in enumerate(args):
        if arg == "--secrets.files" and i + 1 < len(args):
            files.append(args[i + 1])
        elif arg.startswith("--secrets.files="):
            files.append(arg.split("=", 1)[1])
    return files


def sign_in_configured(args: list[str]) -> bool:
    """Whether ``streamlit run dashboard/server.py`` with these options has sign-in: an
    ``[auth]`` table in the secrets files it reads (``~/.streamlit/secrets.toml``,
    ``.streamlit/secrets.toml`` of the working folder and of the server script's folder, or
    the ``secrets.files`` of its configuration, environment or options), read as Streamlit
    reads them."""
    from streamlit import config
    from streamlit.runtime.secrets import Secrets

    # As `streamlit run` does before it reads its configuration: the script's folder counts.
    config._main_script_path = str(Path(__file__).resolve().with_name("server.py"))
    files = _secrets_files(args)
    config.get_config_options(force_reparse=True,
                              options_from_flags={"secrets.files": files} if files else None)
    secrets = Secrets()
    return secrets.load_if_toml_exists() and "auth" in secrets


def share_check(args: list[str], *, command: str = "./dev app") -> tuple[bool, str]:
    """``(allowed, message)`` for ``command --share`` with these options: with sign-in
    configured, or with :data:`NO_AUTH` among them (sharing without sign-in, said plainly);
    else refused, saying why and what to do."""
    if sign_in_configured(args):
        return True, ("Sign-in is configured ([auth] in secrets.toml): the dashboard shows "
                      "nothing but its sign-in page until a user signs in.")
    if NO_AUTH in args:
        return True, ("WARNING: --share --no-auth listens on every network interface without "
                      "sign-in: anyone who can reach this machine can open the dashboard and "
                      "see or upload data. Use it only on a network you trust, or behind an "
                      "authenticating proxy.")
    return False, (f"{command} --share: no sign-in is configured (no [auth] table in "
                   "~/.streamlit/secrets.toml or .streamlit/secrets.toml), so anyone who can "
                   "reach this machine could open the dashboard and see or upload data. "
                   "Configure sign-in (README, \"Deploy for a team\"), or say "
                   f"{command} --share --no-auth to share without sign-in on a network you "
                   "trust.")


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
    args = list(sys.argv[1:] if argv is None else argv)
    command = "./dev app"
    if args[:1] == ["--command"] and len(args) > 1:   # the command the user typed
        command, args = args[1], args[2:]
    allowed, message = share_check(args, command=command)
    print(message)
    if not allowed:
        return 2
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
