"""The Dask engine's work units: which input files must be processed together.

A work unit is a group of input files that together hold every query and candidate of their
posts. :func:`plan_units` groups the files from the distinct posts of each file; a post with
rows in two files of one table is an :class:`~metrics_core.errors.InputError` that names the
post and the files (the input is not partitioned by post).
"""

from __future__ import annotations

import glob
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from metrics_core.errors import InputError

__all__ = ["MAX_NAMED", "plan_units", "post_column", "posts_of", "resolve_files"]

#: Examples named in an error about posts split across files.
MAX_NAMED = 5


def resolve_files(source, *, table: str) -> list[Path]:
    """The Parquet files of an input: a file, a folder (every ``*.parquet`` below it) or a glob.

    Raises :class:`InputError` naming the input when nothing matches.
    """
    path = Path(source)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.parquet") if p.is_file())
    elif path.is_file():
        files = [path]
    else:
        files = sorted(Path(p) for p in glob.glob(str(source), recursive=True)
                       if Path(p).is_file())
    if not files:
        raise InputError(f"no Parquet files found for the {table} table", file=str(source),
                         hint="give a Parquet file, a folder of Parquet files or a glob "
                              "such as 'data/queries/*.parquet'", code="unreadable_file")
    return files


def post_column(path: Path, kind: str) -> str:
    """The source column that is ``post_id`` in this file (names and aliases of contract §2)."""
    import pyarrow.parquet as pq

    from metrics_core.inputs import loading

    try:
        names = pq.read_schema(path).names
    except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
        raise InputError(f"not a readable Parquet file ({str(err).splitlines()[0][:200]})",
                         file=str(path), hint="the Dask engine reads Parquet files only",
                         code="unreadable_file") from None
    probe = pd.DataFrame([names], columns=names)  # each cell holds its column's name
    return str(loading.resolve_columns(probe, kind, file=path.name)["post_id"].iloc[0])


def posts_of(path: str, kind: str) -> np.ndarray:
    """Distinct post ids of one file (read on a worker: one column only)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    column = post_column(Path(path), kind)
    try:
        values = pq.read_table(path, columns=[column]).column(column)
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: {str(err).splitlines()[0][:200]}") from None
    return np.asarray(pc.unique(pc.cast(values, "string")).to_pylist(), dtype=object)


def _union_find(n: int, edges) -> np.ndarray:
    parent = list(range(n))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in edges:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return np.array([root(i) for i in range(n)])


def _split_posts(posts: list[np.ndarray], files: Sequence[Path], table: str) -> None:
    """Raise when a post has rows in two files of one table (the input is not by post)."""
    if len(posts) < 2:
        return
    frame = pd.DataFrame({"post": np.concatenate(posts),
                          "file": np.repeat(np.arange(len(posts)), [len(p) for p in posts])})
    dup = frame[frame["post"].duplicated(keep=False)]
    if dup.empty:
        return
    named = []
    for post, group in list(dup.groupby("post", sort=True))[:MAX_NAMED]:
        names = ", ".join(str(files[i]) for i in group["file"])
        named.append(f"post {post!r} in {names}")
    n = dup["post"].nunique()
    raise InputError(
        f"{n} post{'s are' if n > 1 else ' is'} split across input partitions: "
        + "; ".join(named), file=f"{table} table", code="invalid_value",
        hint="write all rows of a post into one file of each table (partition by post, "
             "e.g. by a hash of post_id)")


def plan_units(q_posts: list[np.ndarray], c_posts: list[np.ndarray], q_files: Sequence[Path],
               c_files: Sequence[Path]) -> list[tuple[list[int], list[int]]]:
    """Group the files into work units holding every row of their posts.

    ``q_posts[i]`` / ``c_posts[j]`` are the distinct posts of queries file ``i`` / candidates
    file ``j``. A unit is a connected group of files sharing posts: ``(query files, candidate
    files)`` as indices. A post in two files of one table is an :class:`InputError` that names
    it and the files.
    """
    _split_posts(q_posts, q_files, "queries")
    _split_posts(c_posts, c_files, "candidates")
    nq = len(q_posts)
    owner = {}
    for i, posts in enumerate(q_posts):
        owner.update(dict.fromkeys(posts.tolist(), i))
    edges = []
    orphan = []
    for j, posts in enumerate(c_posts):
        linked = {owner.get(p, -1) for p in posts.tolist()}
        if -1 in linked:
            orphan.append(j)
            linked.discard(-1)
        edges += [(i, nq + j) for i in linked]
    if orphan:
        j = orphan[0]
        missing = [p for p in c_posts[j].tolist() if p not in owner][:MAX_NAMED]
        raise InputError(
            "candidates of posts that have no query: "
            + ", ".join(repr(p) for p in missing), file=str(c_files[j]),
            column="post_id", code="invalid_value",
            hint="every candidate must belong to a query of the queries table")
    roots = _union_find(nq + len(c_posts), edges)
    units = []
    for r in np.unique(roots[:nq]):
        q_idx = [i for i in range(nq) if roots[i] == r]
        c_idx = [j for j in range(len(c_posts)) if roots[nq + j] == r]
        units.append((q_idx, c_idx))
    return units

