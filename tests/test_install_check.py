"""The package as a user installs it: the wheel, in a fresh virtual environment, outside the
checkout.

The wheel is built from this checkout (``pip wheel``), installed with its ``app`` extra into a
new venv in a temporary folder (pip takes the dependencies from the package index this machine
is set up with), and used from another temporary folder with nothing of the repository in
reach (no ``PYTHONPATH``, a ``HOME`` of its own): ``metrics-core demo`` writes the demo,
``metrics-core evaluate`` gives the README's numbers on it, ``metrics-core app`` serves a
healthy server whose Overview renders in headless Chromium. About one to three minutes (the
install is most of it); CI runs it with the rest of the suite.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from metrics_core.demo import DEMO_LABEL
from tests.app_server import free_port, wait_until_serving
from tests.test_browser import CHROMIUM, CHROMIUM_ARGS, FAILURE_TEXT, IDLE_JS, VIEWPORT

ROOT = Path(__file__).resolve().parent.parent
#: Seconds the wheel's build and install may take (downloads included).
INSTALL_TIMEOUT = 900

pytestmark = [
    pytest.mark.install,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason="needs Debian's chromium at /usr/bin/chromium "
                              "(./dev test installs it; CI does)"),
]


def _env(home: Path, venv: Path) -> dict[str, str]:
    """An activated shell of the new venv, with nothing of the checkout importable."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "GLIBC_TUNABLES")}
    env.update(HOME=str(home), VIRTUAL_ENV=str(venv),
               PATH=f"{venv / 'bin'}{os.pathsep}/usr/bin:/bin")
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """``(user folder, environment)`` of a fresh venv holding the wheel with its app extra."""
    work = tmp_path_factory.mktemp("install")
    assert not work.resolve().is_relative_to(ROOT)
    dist, venv, user = work / "dist", work / "venv", work / "user"
    user.mkdir()
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                            "--wheel-dir", str(dist), str(ROOT)], capture_output=True,
                           text=True, timeout=INSTALL_TIMEOUT)
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = dist.glob("metrics_core-*.whl")
    base = getattr(sys, "_base_executable", None) or shutil.which("python3")
    subprocess.run([base, "-m", "venv", str(venv)], check=True, timeout=300)
    install = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                              "--no-compile", f"{wheel}[app]"], capture_output=True,
                             text=True, timeout=INSTALL_TIMEOUT, cwd=user,
                             env=_env(work, venv))
    assert install.returncode == 0, install.stderr[-3000:]
    return user, _env(work, venv), venv


def _run(command: list[str], installed, timeout: float = 300):
    user, env, _ = installed
    done = subprocess.run(command, cwd=user, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr
    return done


def test_the_installed_package_is_the_wheels(installed):
    """The package imported is the venv's (not the checkout), without the app's packages;
    its version, contract and demo data are in it."""
    _, _, venv = installed
    done = _run(["python", "-c", "import sys, metrics_core, metrics_core.cli\n"
                 "print(metrics_core.__file__)\n"
                 "print(sorted({m.split('.')[0] for m in sys.modules} & {'plotly', "
                 "'streamlit'}))"], installed)
    where, app_modules = done.stdout.splitlines()
    assert Path(where).is_relative_to(venv) and app_modules == "[]"
    import metrics_core

    assert _run(["metrics-core", "--version"], installed).stdout == \
        f"metrics-core {metrics_core.__version__}\n"
    contract = Path(_run(["metrics-core", "contract", "--path"], installed).stdout.strip())
    assert contract.is_relative_to(venv)
    assert contract.read_bytes() == (ROOT / "docs" / "CONTRACT.md").read_bytes()


def test_demo_then_evaluate_from_the_install(installed):
    user = installed[0]
    _run(["metrics-core", "demo", "--out", "assets", "--quiet"], installed)
    for path in (ROOT / "assets").iterdir():
        if path.suffix in (".parquet", ".csv", ".jsonl"):
            assert (user / "assets" / path.name).read_bytes() == path.read_bytes(), path.name
    _run(["metrics-core", "evaluate", "assets/demo_queries.parquet",
          "assets/demo_candidates.parquet", "--bootstrap", "0", "--out", "m.json", "--quiet"],
         installed)
    document = json.loads((user / "m.json").read_text())
    auroc = next(r for r in document["metrics"] if r["name"] == "auroc")
    assert round(auroc["value"], 4) == 0.9806   # the README's figure on the demo
    assert document["run"]["version"] == _version()


def _version() -> str:
    import metrics_core

    return metrics_core.__version__


def test_app_from_the_install_serves_and_renders(installed, tmp_path):
    """``metrics-core app``: healthy, the security headers on, and the Overview of the demo
    drawn in headless Chromium with no error on the page."""
    from playwright.sync_api import expect, sync_playwright

    user, env, _ = installed
    port = free_port()
    log = tmp_path / "app.log"
    with log.open("w") as out:
        server = subprocess.Popen(["metrics-core", "app", "--port", str(port)], cwd=user,
                                  env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        _, headers, body = wait_until_serving(f"http://127.0.0.1:{port}/_stcore/health",
                                              server, log, give_up_after=120)
        assert body == b"ok"
        assert headers["X-Frame-Options"] == "DENY"
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                page = browser.new_context(viewport=VIEWPORT).new_page()
                page.set_default_timeout(120_000)
                page.goto(f"http://127.0.0.1:{port}")
                expect(page.locator("h1").filter(has_text=re.compile("^Overview$"))
                       ).to_be_visible(timeout=120_000)
                page.wait_for_function(IDLE_JS, timeout=120_000)
                expect(page.get_by_text(DEMO_LABEL).first).to_be_visible(timeout=60_000)
                text = page.inner_text("body")
                assert not FAILURE_TEXT.search(text), text[:2000]
            finally:
                browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
