"""Peak memory of the CLI on hostile files: many posts × many criteria, and a gzip bomb.

Run: ``python benchmarks/bench_hostile_memory.py [--bomb-mib 1024]`` (writes
``benchmarks/results/hostile_memory.md``). Each case runs ``metrics-core evaluate
--bootstrap 0`` in a fresh process that reports its own peak resident memory
(``ru_maxrss``); the files are built in a temporary directory:

- 20,000 queries, each with its own post and its own criterion (a long table, ~0.9 MB): a dense
  posts × criteria structure would need 20,000² cells;
- a gzip file of ~2 MB that expands to ``--bomb-mib`` MiB of valid-looking rows (the default
  1 GiB), run with the CLI's default limits and with the app's upload limits.
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
RUN = ("import resource, sys; from metrics_core.cli import main; code = main(sys.argv[1:]); "
       "print('PEAK_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, code)")


def own_posts_file(path: Path, n: int = 20_000) -> None:
    lines = ["post_id,criterion,has_evidence,p_has_evidence,sent_uid,score,is_gold"]
    lines += [f"p{i},c{i},{i % 2},0.{(i * 7919) % 1000:03d},s{i},{(i % 13) / 3:.3f},{i % 2}"
              for i in range(n)]
    path.write_text("\n".join(lines) + "\n")


def gzip_bomb(path: Path, mib: int) -> None:
    row = b"p1,A.1,1,0.5,s1,1.0,1\n"
    block = row * ((1 << 20) // len(row))
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(b"post_id,criterion,has_evidence,p_has_evidence,sent_uid,score,is_gold\n")
        written = 0
        while written < mib << 20:
            f.write(block)
            written += len(block)


def run(args: list[str]) -> tuple[float, int, str]:
    done = subprocess.run([sys.executable, "-c", RUN, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=1800)
    peak, code = 0.0, done.returncode
    for line in done.stdout.splitlines():
        if line.startswith("PEAK_KB"):
            _, kb, code_text = line.split()
            peak, code = int(kb) / 1024, int(code_text)
    message = (done.stderr.strip().splitlines() or [""])[-1][:160]
    return peak, code, message


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bomb-mib", type=int, default=1024)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        posts = tmp / "own_posts.csv"
        own_posts_file(posts)
        bomb = tmp / "bomb.csv.gz"
        gzip_bomb(bomb, args.bomb_mib)
        app = ["--max-bytes", str(512 << 20), "--max-rows", "20000000"]
        cases = [
            ("20,000 queries, own post and criterion each", posts, [], posts.stat().st_size),
            (f"gzip bomb ({bomb.stat().st_size / 1e6:.1f} MB -> {args.bomb_mib:,} MiB), CLI "
             f"default limits", bomb, [], args.bomb_mib << 20),
            ("the same bomb, the app's upload limits", bomb, app, args.bomb_mib << 20),
        ]
        for name, path, extra, size in cases:
            peak, code, message = run(["evaluate", str(path), "--bootstrap", "0", "--quiet",
                                       "--out", str(tmp / "m.json"), *extra])
            rows.append((name, size, peak, code, message))
    lines = ["# Peak memory on hostile input", "",
             "| case | input (uncompressed) | peak RSS | peak / input | exit | message |",
             "|---|---:|---:|---:|---:|---|"]
    for name, size, peak, code, message in rows:
        lines.append(f"| {name} | {size / 1e6:,.1f} MB | {peak:,.0f} MB | "
                     f"{peak * 1e6 / (size or 1) / 1.048576:.1f}x | {code} | "
                     f"{message.replace('|', '/')} |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "hostile_memory.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
