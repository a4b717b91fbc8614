"""Peak memory of ``metrics-core evaluate`` on hostile input files.

Cases, built in a temporary directory:

- ``tiny``: a 3-row long table, the process's floor (imports);
- ``own-post 20k``: 20,000 queries, each with its own post and its own criterion (a long CSV
  of about 0.8 MB); before the fix the dense posts x criteria table peaked at 6.3 GB;
- ``gzip bomb (rows)``: a ~2 MB ``.csv.gz`` of one row repeated, expanding to 1 GiB (stopped
  by the row limit while streaming); before the fix the process passed 8.4 GB;
- ``gzip bomb (one line)``: a ``.csv.gz`` of a header and 1 GiB of zeros on one line (stopped
  by the line-length limit while streaming).

Each runs in its own subprocess (``metrics-core evaluate FILE --bootstrap 0``, and for the
own-post case also ``io.load`` alone); the peak RSS is the child's ``ru_maxrss`` from
``os.wait4``. Writes ``benchmarks/results/hostile_memory.md`` and prints it.

Usage::

    python benchmarks/bench_hostile_memory.py
"""

from __future__ import annotations

import gzip
import os
import platform
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "hostile_memory.md"
HEADER = "post_id,criterion,has_evidence,p_has_evidence,sent_uid,score,is_gold\n"
GIB = 1 << 30


def own_post_file(path: Path, n: int = 20_000) -> None:
    with open(path, "w") as fh:
        fh.write(HEADER)
        for i in range(n):
            fh.write(f"post{i:06d},crit{i:06d},{i % 2},0.{i % 97:02d},s{i % 7},"
                     f"{(i % 13) / 10},{i % 2}\n")


def bomb_file(path: Path, line: bytes, size: int = GIB) -> None:
    block = line * ((1 << 20) // len(line))
    with gzip.open(path, "wb", compresslevel=9) as fh:
        fh.write(HEADER.encode())
        written = 0
        while written < size:
            fh.write(block)
            written += len(block)


def run(args: list[str]) -> tuple[int, float, str]:
    """(exit status, peak RSS in MB, last line of stderr) of one child process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.DEVNULL,
                                stderr=err, env=env, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        lines = err.read().decode(errors="replace").strip().splitlines()
    return proc.returncode, usage.ru_maxrss / 1024, lines[-1] if lines else ""


def main() -> int:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        tiny = tmp / "tiny.csv"
        tiny.write_text(HEADER + "p1,A,1,0.7,s1,0.5,1\np1,A,1,0.7,s2,0.1,0\np2,A,0,0.2,s1,0.3,0\n")
        own = tmp / "own_post_20k.csv"
        own_post_file(own)
        bomb_rows = tmp / "bomb_rows.csv.gz"
        bomb_file(bomb_rows, b"p1,A,1,0.5,s1,0.1,1\n")
        bomb_line = tmp / "bomb_line.csv.gz"
        bomb_file(bomb_line, b"0" * 4096)
        out = tmp / "out.json"
        evaluate = ["-m", "metrics_core", "evaluate"]
        cases = [
            ("tiny (floor)", tiny, [*evaluate, str(tiny), "--out", str(out), "--bootstrap", "0",
                                    "--quiet"]),
            ("own-post 20k: io.load only", own,
             ["-c", f"from metrics_core import io; io.load({str(own)!r})"]),
            ("own-post 20k", own, [*evaluate, str(own), "--out", str(out), "--bootstrap", "0",
                                   "--quiet"]),
            ("gzip bomb (rows)", bomb_rows, [*evaluate, str(bomb_rows), "--out", str(out),
                                             "--bootstrap", "0", "--quiet"]),
            ("gzip bomb (one line)", bomb_line, [*evaluate, str(bomb_line), "--out", str(out),
                                                 "--bootstrap", "0", "--quiet"]),
        ]
        for label, path, args in cases:
            size = path.stat().st_size
            expanded = GIB + len(HEADER) if path.suffix == ".gz" else size
            status, peak, message = run(args)
            rows.append((label, size, expanded, status, peak, message))
            print(f"{label}: exit {status}, peak {peak:,.0f} MB", flush=True)
    floor = rows[0][4]
    lines = [
        "# Peak memory on hostile input",
        "",
        "`python benchmarks/bench_hostile_memory.py`; each case is one child process, peak RSS "
        "from `os.wait4` (`ru_maxrss`). Default `io.Limits` (2 GiB decompressed, 50M rows, "
        "200 columns, 1 MiB cells); `evaluate` runs with `--bootstrap 0`.",
        "",
        "| case | file | content | exit | peak RSS | above floor | message |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for label, size, expanded, status, peak, message in rows:
        above = peak - floor
        lines.append(f"| {label} | {size / 1e6:,.2f} MB | {expanded / 1e6:,.2f} MB | {status} | "
                     f"{peak:,.0f} MB | {above:,.0f} MB | {message.replace('|', '/')} |")
    lines += ["", f"Machine: {platform.processor() or platform.machine()}, "
                  f"{os.cpu_count()} cores; Python {platform.python_version()}; "
                  f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC.", ""]
    RESULTS.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
