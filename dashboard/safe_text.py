"""User-controlled text shown as text: file names, column names, criterion names, link values.

Streamlit renders markdown (links, images, autolinked URLs, emphasis, ``:material/...:`` icons,
``:color[...]`` directives, LaTeX) in messages and captions, and plotly renders a subset of HTML
in labels. Every string that comes from a file, a file name, a column name or the URL goes
through :func:`escape_markdown` before it reaches a markdown element, and through
:func:`metrics_core.report.figures.style.escape_plotly` before it reaches a figure, so it is
shown, never followed or loaded.
Both, and :func:`neutralise_bidi` for table cells and widget options, show a bidirectional
control (a right-to-left override in a name) as a visible code instead of letting it reverse
the text after it.

The markdown escape is exact rather than blanket, so ordinary messages read as they were
written: brackets (links, images, directives), a colon followed by a non-space (URLs, icons,
colour directives), ``www.`` and ``@`` (autolinks), emphasis and code marks, ``$`` (LaTeX),
table bars and block markers at the start of a line are escaped; parentheses, quotes and
intra-word underscores are left as they are (they do nothing without the escaped parts).

>>> escape_markdown("[Session expired](http://evil.example/)")
'\\\\[Session expired\\\\](http\\\\:\\u2060//evil.example/)'
>>> print(escape_markdown("column 'post_id': required column is missing (2 rows)"))
column 'post_id': required column is missing (2 rows)
"""

from __future__ import annotations

import re

import pandas as pd

from metrics_core.bidi import neutralise_bidi

__all__ = ["escape_markdown", "neutralise_bidi", "neutralise_frame_text"]

_ALWAYS = re.compile(r"([\\`*\[\]$~|#@<>])")
_COLON = re.compile(r":(?=\S)")
_WWW = re.compile(r"(?i)\b(www)\.")
#: Markdown's autolinks (``http://…``, ``www.…``, ``a@b.c``) ignore backslash escapes; an
#: invisible word joiner between the parts keeps them from being recognised.
_JOINER = "\u2060"
_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_LINE_START = re.compile(r"(?m)^(\s*)([-+=>]|\d+[.)])")


def escape_markdown(text) -> str:
    """``text`` with every markdown construct that could link, load, format or run escaped."""
    out = _ALWAYS.sub(r"\\\1", neutralise_bidi(text))
    out = _COLON.sub(r"\\:" + _JOINER, out)
    out = _WWW.sub(r"\1" + _JOINER + ".", out)
    out = out.replace("\\@", _JOINER + "\\@")
    out = _UNDERSCORE.sub(r"\\_", out)
    return _LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), out)


def neutralise_frame_text(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with :func:`neutralise_bidi` applied to its column names and text cells (the
    same frame when nothing needs it; numbers are never touched)."""
    columns = [neutralise_bidi(c) if isinstance(c, str) else c for c in frame.columns]
    changed = {}
    for position in range(frame.shape[1]):
        series = frame.iloc[:, position]
        if not (pd.api.types.is_object_dtype(series) or pd.api.types.is_string_dtype(series)
                or isinstance(series.dtype, pd.CategoricalDtype)):
            continue
        values = series.tolist()
        shown = [neutralise_bidi(v) if isinstance(v, str) else v for v in values]
        if shown != values:
            changed[position] = pd.Series(shown, index=frame.index, dtype=object)
    if not changed and columns == list(frame.columns):
        return frame
    out = frame.copy()
    for position, text in changed.items():
        out.isetitem(position, text)
    out.columns = columns
    return out
