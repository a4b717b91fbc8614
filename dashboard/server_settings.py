"""The app server's own settings: upload limits, interaction caps, the memory budgets and the
sign-in allow-list, from the ``[limits]``, ``[interaction]``, ``[memory]`` and ``[auth]``
tables of the server's settings file (:func:`settings_file`), else the defaults here."""

from __future__ import annotations

import functools
import os
import re
import tomllib
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from metrics_core.inputs.limits import Limits

if TYPE_CHECKING:
    from collections.abc import Mapping


#: The server's own settings (upload limits, interaction caps, sign-in allow-list): the
#: ``[limits]``, ``[interaction]`` and ``[auth]`` tables of this file (in the package, beside the
#: server's Streamlit settings), else the defaults below.
LIMITS_FILE = Path(__file__).resolve().parent / ".streamlit" / "metrics_core.toml"


#: The environment variable that names another settings file in place of :data:`LIMITS_FILE`
#: (a deployment's own, kept outside the installed package).
SETTINGS_ENV = "METRICS_CORE_APP_SETTINGS"


def settings_file() -> Path:
    """The server's settings file: ``$METRICS_CORE_APP_SETTINGS`` if set, else
    :data:`LIMITS_FILE`."""
    return Path(os.environ.get(SETTINGS_ENV) or LIMITS_FILE)


#: A shared app server gets tighter defaults than the command line (Limits' own defaults).
#: 25M rows admit a 1,000,000-query set with about 20 candidates a query (the speed targets'
#: large case: 20.0M candidate rows, 176 MiB of Parquet content).
APP_LIMITS = MappingProxyType({"max_decompressed_bytes": 512 << 20, "max_rows": 25_000_000,
                               "max_columns": 200, "max_cell_bytes": 1 << 20})


#: Bytes the uploads of all sessions may hold together: ``[memory]`` of :data:`LIMITS_FILE`,
#: else this default (dashboard.budget).
#: ``shared_cache_bytes``: the most the evaluations shared between sessions (the bundled
#: demos') may hold; the server's memory for data is at most the sum of the two.
UPLOAD_BUDGET = MappingProxyType({"upload_budget_bytes": 4 << 30,
                                  "shared_cache_bytes": 256 << 20})


class ServerSettingsError(ValueError):
    """The server's settings file breaks a rule (shown as the server's problem, not the
    upload's)."""


#: What a link or a settings file may ask this server to compute, and what it computes
#: without a click: the ``[interaction]`` table of :data:`LIMITS_FILE`, else these defaults
#: (the command line has its own, larger bounds: metrics_core.config); the per-session
#: computing budget ``cpu_seconds_per_minute`` (:class:`CpuBudget`). ``max_link_resamples``
#: / ``max_link_bins``: the most bootstrap resamples / calibration bins a link or a settings
#: file may ask for (dashboard.link.LINK_CAPS); ``max_live_resamples``: the most resamples
#: computed for a view without the user asking in the page (more set under Uncertainty run on
#: the page's button, with progress and a cancel button); ``max_live_resample_rows``: the most
#: resamples times queries of the data computed so (a bootstrap's work grows with both: on
#: larger data the live resamples are fewer, and none when fewer than
#: :data:`dashboard.data.LIVE_RESAMPLES` would be left: see :func:`dashboard.data.live_cap`).
INTERACTION = MappingProxyType({"max_link_resamples": 10_000, "max_link_bins": 100,
                                "max_live_resamples": 10_000,
                                "max_live_resample_rows": 200_000_000,
                                "cpu_seconds_per_minute": 40})


def _server_table(path: Path, table: str, defaults: Mapping, what: str) -> dict:
    """``defaults`` overridden by the ``[table]`` of ``path`` (an unknown key is an error)."""
    values = dict(defaults)
    try:
        content = path.read_bytes()
    except FileNotFoundError:
        return values
    given = _parsed(content, path.name).get(table, {})
    if given:
        unknown = sorted(set(given) - set(values))
        if unknown:
            raise ServerSettingsError(f"{path.name}: unknown {what} {', '.join(unknown)}; known: "
                                      f"{', '.join(values)}")
        values.update(given)
    return values


@functools.lru_cache(maxsize=4)
def _parsed(content: bytes, name: str) -> Mapping:
    """The settings file's ``content`` parsed (``name`` for the message), parsed again only
    when it changes: every run of every session asks for the settings. Never mutated by its
    callers."""
    try:
        return tomllib.loads(content.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ServerSettingsError(f"{name} is not valid TOML: {exc}") from None


def interaction_caps(path: Path | None = None) -> dict[str, int]:
    """:data:`INTERACTION`, overridden by ``[interaction]`` in ``path`` (the
    :func:`settings_file` when not given)."""
    return _server_table(path or settings_file(), "interaction", INTERACTION,
                         "interaction settings")


def upload_limits(path: Path | None = None) -> Limits:
    """The limits on uploads: :data:`APP_LIMITS`, overridden by ``[limits]`` in ``path`` (the
    :func:`settings_file` when not given)."""
    return Limits(**_server_table(path or settings_file(), "limits", APP_LIMITS, "limits"))


def memory_budget(path: Path | None = None) -> int:
    """Bytes the uploads of all sessions may hold together: :data:`UPLOAD_BUDGET`, overridden
    by ``[memory]`` in ``path`` (the :func:`settings_file` when not given).

    Raises :class:`ServerSettingsError` naming the file, the field and the value when it is
    not a positive whole number.
    """
    return _memory_setting("upload_budget_bytes", path)


def shared_cache_budget(path: Path | None = None) -> int:
    """Bytes the evaluations shared between sessions may hold (``[memory]
    shared_cache_bytes``)."""
    return _memory_setting("shared_cache_bytes", path)


def _memory_setting(name: str, path: Path | None) -> int:
    path = path or settings_file()
    table = _server_table(path, "memory", UPLOAD_BUDGET, "memory settings")
    value = table[name]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ServerSettingsError(f"{path.name}: [memory] {name} must be a "
                                  f"positive whole number of bytes; got {value!r}")
    return value


_ADDRESS = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


_DOMAIN = re.compile(r"@[^@\s]+\.[^@\s]+")


def sign_in_allow(path: Path | None = None) -> tuple[str, ...]:
    """Who may use the app once signed in: ``allow`` of the ``[auth]`` table of ``path`` (the
    :func:`settings_file` when not given), e-mail addresses (``name@example.org``) and domains
    (``@example.org``), lower-cased; empty (the default) lets every signed-in user in.

    Raises :class:`ServerSettingsError` naming the file, the field and the value when an entry
    is neither.
    """
    path = path or settings_file()
    allow = _server_table(path, "auth", {"allow": []}, "sign-in settings")["allow"]
    if not isinstance(allow, list):
        raise ServerSettingsError(
            f"{path.name}: [auth] allow must be a list of e-mail addresses and domains, e.g. "
            f"[\"a@example.org\", \"@example.org\"]; got {allow!r}")
    for entry in allow:
        if not isinstance(entry, str) or not (_ADDRESS.fullmatch(entry)
                                              or _DOMAIN.fullmatch(entry)):
            raise ServerSettingsError(f"{path.name}: [auth] allow: {entry!r} is neither an "
                                      "e-mail address (name@example.org) nor a domain "
                                      "(@example.org)")
    return tuple(entry.lower() for entry in allow)


def is_allowed(email: object, allow: tuple[str, ...], *, verified: object = None) -> bool:
    """Whether a signed-in user with this e-mail address may use the app under ``allow``
    (:func:`sign_in_allow`): every user when ``allow`` is empty; else only an address listed,
    or one of a listed domain, that the provider does not say is unverified.

    >>> allow = ("ana@example.org", "@hospital.org")
    >>> [is_allowed(e, allow) for e in ("Ana@Example.org", "bo@hospital.org", "bo@example.org")]
    [True, True, False]
    >>> is_allowed("x@sub.hospital.org", allow), is_allowed(None, allow), is_allowed(None, ())
    (False, False, True)
    >>> is_allowed("bo@hospital.org", allow, verified=False)
    False
    """
    if not allow:
        return True
    if not isinstance(email, str) or verified is False or not _ADDRESS.fullmatch(email):
        return False
    email = email.lower()
    return email in allow or "@" + email.rsplit("@", 1)[1] in allow
