"""``metrics-core app``: the dashboard's server from the installed package, and what to say when
the app extra is missing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from metrics_core.cli.flags import FlagError, flag_value
from metrics_core.cli.output import EXIT_INPUT, EXIT_OK
from metrics_core.config import FieldSchema

_LOOPBACK_NAMES = ("localhost",)
#: A port of ``metrics-core app``.
_PORT = FieldSchema("port", "int", 1, 65_535)


def app_server_options(args) -> tuple[list[str], bool]:
    """Streamlit's options for ``metrics-core app``'s flags (``--port``, ``--host``,
    ``--share``; then the Streamlit options passed on), and whether the app is shared: it
    listens beyond this machine (``--share``, or a ``--host`` that is not loopback), which
    :func:`dashboard.addresses.share_check` allows only with sign-in or ``--no-auth``.

    >>> import argparse
    >>> ns = argparse.Namespace(port="9000", host=None, share=True, passthrough=[])
    >>> app_server_options(ns)
    (['--server.port', '9000', '--server.address', '0.0.0.0'], True)
    """
    import ipaddress

    port = flag_value(_PORT, args.port, "--port")
    host = args.host or ("0.0.0.0" if args.share else "127.0.0.1")
    try:
        shared = args.share or not ipaddress.ip_address(host).is_loopback
    except ValueError:   # a host name
        shared = args.share or host not in _LOOPBACK_NAMES
    return ["--server.port", str(port), "--server.address", host, *args.passthrough], shared


def app_command(args) -> int:
    """``metrics-core app``: the dashboard's server from the installed package, with the
    malloc settings from its start (:func:`metrics_core.allocator.glibc_tunables`); its
    settings are the package's (``dashboard/.streamlit``, read by Streamlit beside the
    server's script)."""
    from importlib.util import find_spec

    from metrics_core.allocator import glibc_tunables

    for package in ("streamlit", "plotly", "dashboard"):
        if find_spec(package) is None:
            raise ModuleNotFoundError(name=package)
    server = Path(find_spec("dashboard").origin).parent / "server.py"
    if not server.exists():   # another package called dashboard
        raise ModuleNotFoundError(name="dashboard")
    options, shared = app_server_options(args)
    if args.no_auth and not shared:
        raise FlagError("--no-auth: only with --share (or a --host other than loopback)")
    if shared:
        # Sign-in configured or --no-auth, else refused (dashboard/addresses.py: the rule and
        # this machine's addresses; nothing is sent over the network).
        check = subprocess.run([sys.executable, "-m", "dashboard.addresses", "--command",
                                args.invoked_as or "metrics-core app",
                                *(["--no-auth"] if args.no_auth else []),
                                *options], stdout=2, check=False)
        if check.returncode != 0:
            return EXIT_INPUT
    env = {**os.environ, "GLIBC_TUNABLES": glibc_tunables(os.environ.get("GLIBC_TUNABLES"))}
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os.execve(sys.executable, [sys.executable, "-m", "streamlit", "run", str(server),
                               *options], env)
    return EXIT_OK   # (not reached: the server replaces this process)


#: The packages of the app extra: the dashboard (streamlit) and the figures (plotly).
APP_PACKAGES = ("streamlit", "plotly")


def needs_app_extra(package: str) -> str:
    """What to say when the app extra's ``package`` is not installed."""
    return (f"needs the app extra (package {package.split('.')[0]!r}), which this installation "
            "lacks: install metrics-core[app] (from the project's folder: "
            'python -m pip install -e ".[app]"; ./dev cli installs it)')
