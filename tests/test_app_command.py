"""``metrics-core app``: the dashboard from the installed package, and ``./dev app`` calling it.

The server runs from anywhere: its settings (``dashboard/.streamlit``: config.toml and the
upload limits) are read by Streamlit beside the server's script, not from the working folder;
its security headers and malloc settings are those ``./dev app`` always gave. ``--share``
(or a ``--host`` other than loopback) starts only with sign-in configured or ``--no-auth``
(the rule: :func:`dashboard.addresses.share_check`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from metrics_core import cli
from metrics_core.allocator import glibc_tunables
from tests.app_server import free_port, wait_until_serving

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "dashboard" / "server.py"


class _Started(Exception):
    """Raised by the stand-in of ``os.execve``: the server would start here."""


def _app(argv: list[str], monkeypatch, folder: Path) -> tuple[int | tuple, str]:
    """``metrics-core app ARGV`` run in ``folder`` (a user's HOME without secrets):
    ``(exit status, "")`` or ``((program, argv, env), "")`` when it would start the server."""
    started = []

    def execve(program, args, env):
        started.append((program, list(args), env))
        raise _Started

    monkeypatch.setattr(os, "execve", execve)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    try:
        code = cli.main(["app", *argv])
    except _Started:
        return started[0]
    return code


def test_app_starts_the_packages_server_with_the_malloc_settings(monkeypatch, tmp_path):
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=4")
    program, argv, env = _app(["--port", "9124", "--server.maxUploadSize", "5"], monkeypatch,
                              tmp_path)
    assert program == sys.executable
    assert argv == [sys.executable, "-m", "streamlit", "run", str(SERVER), "--server.port",
                    "9124", "--server.address", "127.0.0.1", "--server.maxUploadSize", "5"]
    assert env["GLIBC_TUNABLES"] == glibc_tunables("glibc.malloc.arena_max=4")


def test_app_flags_are_checked(monkeypatch, tmp_path, capfd):
    for argv, said in (
            (["--port", "0"], "--port: must be a whole number within [1, 65,535]; got '0'"),
            (["--port", "x"], "--port"), (["--no-auth"], "--no-auth: only with --share")):
        assert _app(argv, monkeypatch, tmp_path) == 2, argv
        err = capfd.readouterr().err
        assert err.startswith("metrics-core: invalid option: ") and said in err, err
    # Streamlit's options pass through the app command only.
    with pytest.raises(SystemExit) as exit_:
        cli.main(["triage", "x.csv", "--server.port", "1"])
    assert exit_.value.code == 2
    assert "unrecognized arguments: --server.port 1" in capfd.readouterr().err


def test_app_share_prints_every_address(monkeypatch, tmp_path, capfd):
    from dashboard.addresses import interface_addresses

    _, argv, _ = _app(["--share", "--no-auth", "--port", "9123"], monkeypatch, tmp_path)
    # --no-auth is the app command's, not Streamlit's: it is not passed on.
    assert argv[4:] == [str(SERVER), "--server.port", "9123", "--server.address", "0.0.0.0"]
    said = capfd.readouterr().err
    assert "without sign-in: anyone who can reach this machine" in " ".join(said.split())
    assert "http://localhost:9123 (this machine)" in said
    for address in interface_addresses():
        assert f"http://{address}:9123" in said


@pytest.mark.parametrize("argv", [["--share"], ["--host", "0.0.0.0"]])
def test_app_share_refuses_without_sign_in_or_no_auth(argv, monkeypatch, tmp_path, capfd):
    assert _app([*argv, "--port", "9123"], monkeypatch, tmp_path) == 2   # not started
    said = " ".join(capfd.readouterr().err.split())
    assert "Traceback" not in said
    assert "metrics-core app --share: no sign-in is configured (no [auth] table in" in said
    assert "metrics-core app --share --no-auth to share without sign-in" in said
    # A secrets file without [auth] is no sign-in either.
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text('[database]\npassword = "x"\n')
    assert _app(argv, monkeypatch, tmp_path) == 2
    # ./dev app names itself in the refusal.
    assert _app(["--invoked-as", "./dev app", *argv], monkeypatch, tmp_path) == 2
    assert "./dev app --share --no-auth to share" in " ".join(capfd.readouterr().err.split())


def test_app_share_with_sign_in_configured(monkeypatch, tmp_path, capfd):
    auth = ('[auth]\nredirect_uri = "http://localhost:9123/oauth2callback"\n'
            'cookie_secret = "0123456789abcdef0123"\nclient_id = "c"\nclient_secret = "s"\n'
            'server_metadata_url = "http://localhost:1/.well-known/openid-configuration"\n')
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text(auth)
    _, argv, _ = _app(["--share", "--port", "9123"], monkeypatch, tmp_path)
    assert argv[-2:] == ["--server.address", "0.0.0.0"]
    assert "Sign-in is configured" in capfd.readouterr().err
    # Sign-in in a secrets file given to Streamlit as an option counts too.
    elsewhere = tmp_path / "elsewhere.toml"
    (tmp_path / ".streamlit" / "secrets.toml").rename(elsewhere)
    _, argv, _ = _app(["--share", "--secrets.files", str(elsewhere)], monkeypatch, tmp_path)
    assert argv[-2:] == ["--secrets.files", str(elsewhere)]
    assert "Sign-in is configured" in capfd.readouterr().err


def test_app_without_the_app_extra_says_what_to_install(tmp_path):
    code = ("import sys; sys.modules['streamlit'] = None\n"
            "from metrics_core.cli import main\nsys.exit(main(['app']))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("metrics-core app: needs the app extra (package "
                                  "'streamlit')")


def test_dev_app_runs_the_app_command(tmp_path):
    """``./dev app ARGS`` is ``metrics-core app --invoked-as "./dev app" ARGS`` of .venv."""
    from tests.test_documented_commands import _project_copy, _run

    project, env = _project_copy(tmp_path)
    stand_in = project / ".venv" / "bin" / "metrics-core"
    stand_in.write_text('#!/bin/sh\necho "metrics-core $*"\n')
    done = _run("./dev app --share --no-auth --server.port 9123", project, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ("metrics-core app --invoked-as ./dev app --share --no-auth "
                                   "--server.port 9123")


def test_the_package_holds_the_servers_settings():
    """Streamlit reads ``.streamlit/config.toml`` beside the server's script: the package's
    folder (a link to the repository's ``.streamlit`` in a checkout; a copy in a wheel)."""
    settings = ROOT / "dashboard" / ".streamlit"
    assert (settings / "config.toml").read_bytes() == \
        (ROOT / ".streamlit" / "config.toml").read_bytes()
    config = tomllib.loads((settings / "config.toml").read_text())
    assert config["server"]["address"] == "127.0.0.1"
    from dashboard import server_settings

    assert server_settings.LIMITS_FILE.exists()
    assert server_settings.LIMITS_FILE == settings / "metrics_core.toml"  # noqa: SIM300


def test_app_serves_from_any_folder_with_the_projects_settings(tmp_path):
    """A real server, started in a folder with nothing of the project's: healthy, with the
    security headers, Streamlit's address from the package's config.toml and the malloc
    settings in its environment."""
    port = free_port()
    log = tmp_path / "app.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    env.pop("GLIBC_TUNABLES", None)
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "metrics_core", "app", "--port",
                                 str(port)], cwd=tmp_path, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        _, headers, _ = wait_until_serving(f"http://127.0.0.1:{port}/_stcore/health", proc,
                                           log, give_up_after=90)
        assert headers["X-Frame-Options"] == "DENY"
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Referrer-Policy"] == "no-referrer"
        # (glibc splits the variable at its colons in place as it reads it)
        environ = Path(f"/proc/{proc.pid}/environ").read_bytes().replace(b"\0", b":")
        assert f"GLIBC_TUNABLES={glibc_tunables()}:".encode() in environ
        # browser.serverAddress = "localhost" (config.toml): the one URL Streamlit prints
        assert f"URL: http://localhost:{port}" in log.read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
