"""What a command gives back: its exit status, text safe for a terminal, its files written all
or none (never over an input), and the progress line on stderr."""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from pathlib import Path

from metrics_core.progress import StderrProgress

EXIT_OK = 0
EXIT_INPUT = 2
EXIT_CANCELLED = 130


def printable(text) -> str:
    """Text safe for a terminal: bidirectional controls as ``[U+202E]`` (as the dashboard
    shows them), other control characters (escape codes) escaped."""
    from metrics_core.bidi import neutralise_bidi

    return "".join(c if c.isprintable() or c in "\n\t" else repr(c)[1:-1]
                   for c in neutralise_bidi(text))


def _same_file(a: Path, b: Path) -> bool:
    """True when ``a`` and ``b`` name one file: the same resolved path (symbolic links
    followed), or, both existing, the same device and inode (hard links)."""
    try:
        if a.resolve() == b.resolve():
            return True
    except (OSError, RuntimeError):  # (a loop of symbolic links)
        pass
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def check_outputs(inputs, outputs) -> None:
    """Refuse (ValueError naming both paths) an output that is an input, lies inside an
    input folder, or is another output. ``inputs`` / ``outputs``: ``(what, path)`` pairs,
    ``path`` None for an absent one. Called before anything is read or written."""
    inputs = [(what, Path(p)) for what, p in inputs if p is not None]
    outputs = [(what, Path(p)) for what, p in outputs if p is not None]
    for i, (what, out) in enumerate(outputs):
        for in_what, path in inputs:
            inside = False
            with contextlib.suppress(OSError, RuntimeError):
                inside = path.is_dir() and out.resolve().is_relative_to(path.resolve())
            if _same_file(out, path) or inside:
                where = "is inside" if inside and not _same_file(out, path) else "is"
                raise ValueError(f"{what} {out} {where} the input {in_what} {path}: an output "
                                 f"never overwrites an input; choose another path")
        for other_what, other in outputs[:i]:
            if _same_file(out, other):
                raise ValueError(f"{what} {out} and {other_what} {other} are the same file: "
                                 f"each output needs a path of its own")


def write_atomically(outputs: dict[Path, bytes]) -> None:
    """Write every ``path -> bytes`` or none: temporary files beside each target, then renames.

    A failure while writing removes the temporary files and leaves the targets untouched; an
    :class:`OSError` names the path it concerns.
    """
    for path in outputs:
        if path.is_dir():
            raise IsADirectoryError(21, "is a directory", str(path))
    staged: list[tuple[str, Path]] = []
    try:
        for path, data in outputs.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            staged.append((tmp, path))
            os.chmod(tmp, _mode_for(path))
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        for tmp, path in staged:
            os.replace(tmp, path)
    except OSError as err:
        for tmp, _ in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)
        target = next((p for t, p in staged if t == err.filename), None)
        if target is None and staged:
            target = staged[-1][1]
        raise OSError(err.errno, err.strerror, str(target or err.filename)) from None


def _mode_for(path: Path) -> int:
    """The target's permissions if it exists, else what a plain ``open`` would give."""
    if path.exists():
        return path.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def with_progress(command):
    """``command(args)`` with ``args.progress``, the progress line on stderr (off with
    ``--quiet``; :mod:`metrics_core.progress`), ended before an error is printed."""
    @functools.wraps(command)
    def run(args) -> int:
        with StderrProgress(enabled=not args.quiet) as args.progress:
            return command(args)

    return run
