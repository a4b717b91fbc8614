"""Names from the data shown as written: bidirectional-text controls made visible.

A right-to-left override (U+202E) or isolate (U+2066-U+2069) inside a run, criterion or file
name reverses the text that follows it on screen, in a chart, a table, a printed summary or a
PDF: ``run‮1fdp.exe`` reads as ``runexe.pdf1``. :func:`neutralise_bidi` replaces every such
control with a visible code (``[U+202E]``), so a name reads in the order it was written. The
command line uses it for the names it prints; the dashboard's text escapes
(:mod:`dashboard.safe_text`) apply it to every name they show.

>>> neutralise_bidi("run\\u202e1fdp.exe")
'run[U+202E]1fdp.exe'
>>> neutralise_bidi("A.1")
'A.1'
"""

from __future__ import annotations

import re

__all__ = ["BIDI_CONTROLS", "neutralise_bidi"]

#: The bidirectional formatting characters: the Arabic letter mark, the left-to-right and
#: right-to-left marks, the embeddings, overrides and their pop (U+202A-U+202E) and the
#: isolates with their pop (U+2066-U+2069).
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                          "\u2066\u2067\u2068\u2069")
_PATTERN = re.compile("[" + "".join(sorted(BIDI_CONTROLS)) + "]")


def neutralise_bidi(text) -> str:
    """``text`` (made a string) with each bidirectional control shown as ``[U+XXXX]``."""
    text = str(text)
    if not _PATTERN.search(text):
        return text
    return _PATTERN.sub(lambda m: f"[U+{ord(m.group()):04X}]", text)
