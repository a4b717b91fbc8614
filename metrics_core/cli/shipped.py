"""``metrics-core demo`` and ``metrics-core contract``: what the package ships, the demo files
(from their generators) and the data and metric contract."""

from __future__ import annotations

import sys

from metrics_core.cli.output import EXIT_OK, printable, write_atomically


def demo_command(args) -> int:
    """``metrics-core demo``: the demo files from their generators (:mod:`metrics_core.demo`,
    :mod:`metrics_core.rag.demo`), with the shipped README that describes them."""
    from metrics_core import demo
    from metrics_core.rag.demo import write_rag_demo
    from metrics_core.shipped import ASSETS

    if args.out.exists() and not args.out.is_dir():
        raise ValueError(f"--out {args.out}: is a file, not a folder")
    if args.out.resolve() == ASSETS.resolve():
        raise ValueError(f"--out {args.out}: is the package's own copy of the demo; choose "
                         "another folder")
    paths = demo.write_demo(args.out)
    rag = write_rag_demo(args.out / "demo_rag.jsonl")
    write_atomically({paths.readme: (ASSETS / "README.md").read_bytes()})
    if not args.quiet:
        for path in (paths.queries, paths.candidates, paths.problems_queries,
                     paths.problems_candidates, paths.triage, rag, paths.readme):
            print(f"wrote {printable(path)}  ({path.stat().st_size:,} bytes)")
    return EXIT_OK


def contract_command(args) -> int:
    """``metrics-core contract``: the contract shipped in the package, or its path."""
    from metrics_core.shipped import CONTRACT

    if args.path:
        print(CONTRACT)
    else:
        sys.stdout.write(CONTRACT.read_text(encoding="utf-8"))
    return EXIT_OK
