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

__all__ = ["LINK_COLUMNS", "MAX_NAMED", "TABLES", "file_posts", "plan", "plan_units", "post_column",
           "post_links", "posts_of", "resolve_files", "units_of_links"]

#: Examples named in an error about posts split across files.
MAX_NAMED = 5
#: The tables in the order of ``file_posts``' ``table`` codes.
TABLES = ("queries", "candidates")


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


def file_posts(path: str, kind: str, file: int) -> pd.DataFrame:
    """One row per distinct post of one file (read on a worker): ``post``, ``table`` (0 for
    queries, 1 for candidates) and ``file``, the file's index in its table."""
    posts = posts_of(path, kind)
    return pd.DataFrame({"post": posts,
                         "table": np.full(posts.size, TABLES.index(kind), dtype=np.int64),
                         "file": np.full(posts.size, file, dtype=np.int64)})


#: The columns of :func:`post_links`: what a kind of row means is in its docstring.
LINK_COLUMNS = ("kind", "post", "a", "b")


def post_links(frame: pd.DataFrame) -> pd.DataFrame:
    """What planning needs from the ``(post, table, file)`` rows of whole posts (every row of
    each post present), in a few rows whatever the number of posts:

    - ``edge``: query file ``a`` and candidate file ``b`` share a post (each pair once);
    - ``split``: ``b`` posts of table ``a`` are in two files or more of it; ``split_example``:
      for the first :data:`MAX_NAMED` of them (by post id), one row per file ``b`` holding
      ``post``;
    - ``orphan``: candidates of ``post`` in candidate file ``b`` have no query, for the lowest
      such file and its first :data:`MAX_NAMED` posts (by post id).

    Run on the posts of every file at once (:func:`plan_units`) or on each partition of the
    posts shuffled by post id (:func:`plan`): the rows of the partitions combine into the whole
    data's (:func:`units_of_links`).
    """
    rows = []
    frame = frame.sort_values(["post", "table", "file"], kind="stable")
    for table in (0, 1):
        part = frame[frame["table"].to_numpy() == table]
        dup = part[part["post"].duplicated(keep=False)]
        if len(dup):
            n = int(dup["post"].nunique())
            rows.append(("split", None, table, n))
            first = dup["post"].drop_duplicates().iloc[:MAX_NAMED]
            named = dup[dup["post"].isin(first)]
            rows += [("split_example", post, table, int(f))
                     for post, f in zip(named["post"], named["file"], strict=True)]
    queries = frame[frame["table"].to_numpy() == 0].drop_duplicates("post")
    cands = frame[frame["table"].to_numpy() == 1]
    joined = cands.merge(queries[["post", "file"]], on="post", how="left",
                         suffixes=("_c", "_q"))
    missing = joined["file_q"].isna().to_numpy()
    if missing.any():
        lost = joined[missing]
        lowest = lost["file_c"].min()
        lost = lost[lost["file_c"] == lowest].iloc[:MAX_NAMED]
        rows += [("orphan", post, -1, int(lowest)) for post in lost["post"]]
    pairs = joined[~missing][["file_q", "file_c"]].astype(np.int64).drop_duplicates()
    rows += [("edge", None, int(a), int(b))
             for a, b in zip(pairs["file_q"], pairs["file_c"], strict=True)]
    out = pd.DataFrame(rows, columns=list(LINK_COLUMNS))
    return out.astype({"kind": object, "post": object, "a": np.int64, "b": np.int64})


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


def _raise_split(links: pd.DataFrame, files: Sequence[Path], table: int) -> None:
    """Raise when a post has rows in two files of one table (the input is not by post)."""
    counts = links[(links["kind"] == "split") & (links["a"] == table)]
    if counts.empty:
        return
    n = int(counts["b"].sum())
    examples = links[(links["kind"] == "split_example") & (links["a"] == table)]
    examples = examples.sort_values(["post", "b"], kind="stable")
    first = examples["post"].drop_duplicates().iloc[:MAX_NAMED]
    named = [f"post {post!r} in " + ", ".join(str(files[i]) for i in group["b"])
             for post, group in examples[examples["post"].isin(first)].groupby("post",
                                                                               sort=True)]
    raise InputError(
        f"{n} post{'s are' if n > 1 else ' is'} split across input partitions: "
        + "; ".join(named), file=f"{TABLES[table]} table", code="invalid_value",
        hint="write all rows of a post into one file of each table (partition by post, "
             "e.g. by a hash of post_id)")


def units_of_links(links: pd.DataFrame, q_files: Sequence[Path],
                   c_files: Sequence[Path]) -> list[tuple[list[int], list[int]]]:
    """The work units from :func:`post_links`' rows (of the whole data or of its partitions,
    concatenated): ``(query files, candidate files)`` as indices, connected groups of files
    sharing posts. Raises the :class:`InputError` of a split post or an orphan candidate."""
    _raise_split(links, q_files, 0)
    _raise_split(links, c_files, 1)
    orphans = links[links["kind"] == "orphan"]
    if len(orphans):
        j = int(orphans["b"].min())
        missing = sorted(orphans.loc[orphans["b"] == j, "post"])[:MAX_NAMED]
        raise InputError(
            "candidates of posts that have no query: "
            + ", ".join(repr(p) for p in missing), file=str(c_files[j]),
            column="post_id", code="invalid_value",
            hint="every candidate must belong to a query of the queries table")
    nq = len(q_files)
    edges = links.loc[links["kind"] == "edge", ["a", "b"]].drop_duplicates().to_numpy()
    roots = _union_find(nq + len(c_files), [(int(a), nq + int(b)) for a, b in edges])
    units = []
    for r in np.unique(roots[:nq]):
        q_idx = [i for i in range(nq) if roots[i] == r]
        c_idx = [j for j in range(len(c_files)) if roots[nq + j] == r]
        units.append((q_idx, c_idx))
    return units


def plan_units(q_posts: list[np.ndarray], c_posts: list[np.ndarray], q_files: Sequence[Path],
               c_files: Sequence[Path]) -> list[tuple[list[int], list[int]]]:
    """Group the files into work units holding every row of their posts (in one process).

    ``q_posts[i]`` / ``c_posts[j]`` are the distinct posts of queries file ``i`` / candidates
    file ``j``. A unit is a connected group of files sharing posts: ``(query files, candidate
    files)`` as indices. A post in two files of one table is an :class:`InputError` that names
    it and the files. :func:`plan` does the same on a cluster without gathering the posts.
    """
    frames = [pd.DataFrame({"post": posts, "table": table, "file": i})
              for table, lists in enumerate((q_posts, c_posts))
              for i, posts in enumerate(lists)]
    frame = pd.concat(frames, ignore_index=True) if frames else \
        pd.DataFrame(columns=["post", "table", "file"])
    return units_of_links(post_links(frame.astype({"post": object, "table": np.int64,
                                                    "file": np.int64})), q_files, c_files)


def plan(client, q_files: Sequence[Path], c_files: Sequence[Path]):
    """:func:`plan_units` on the cluster: every file's distinct posts read on the workers,
    shuffled by post id (Dask's peer-to-peer shuffle) into as many partitions as the larger
    table has files, each partition summarised by :func:`post_links`; only those rows (a few
    per file) reach the client."""
    import dask
    import dask.dataframe as dd

    paths = [str(p) for p in (*q_files, *c_files)]
    kinds = ["queries"] * len(q_files) + ["candidates"] * len(c_files)
    indices = [*range(len(q_files)), *range(len(c_files))]
    meta = pd.DataFrame({"post": pd.Series([], dtype=object),
                         "table": pd.Series([], dtype=np.int64),
                         "file": pd.Series([], dtype=np.int64)})
    with dask.config.set({"dataframe.convert-string": False}):
        posts = dd.from_map(file_posts, paths, kinds, indices, meta=meta,
                            enforce_metadata=False)
        # p2p: tasks in proportion to the files (a task-based shuffle of 600 files made
        # ~15,000 tasks, whose state the scheduler keeps)
        shuffled = posts.shuffle("post", npartitions=max(len(q_files), len(c_files)),
                                 shuffle_method="p2p")
        links_meta = pd.DataFrame({c: pd.Series([], dtype=object if c in ("kind", "post")
                                                else np.int64) for c in LINK_COLUMNS})
        links = client.compute(shuffled.map_partitions(post_links, meta=links_meta)).result()
    return units_of_links(links, q_files, c_files)
