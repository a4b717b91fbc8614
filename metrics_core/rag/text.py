"""Text normalisation and n-grams shared by the generation metrics (seed 002 §4.1.1).

>>> normalize("  The Cat, sat!  ")
'cat sat'
>>> tokens("An apple a day.")
['apple', 'day']
"""

from __future__ import annotations

import re
import string
from collections import Counter

__all__ = ["PUNCTUATION", "ngrams", "normalize", "tokens"]

#: Punctuation removed by the normalisation (ASCII punctuation and typographic quotes).
PUNCTUATION = frozenset(string.punctuation) | frozenset("‘’“”–—…")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_DROP = str.maketrans("", "", "".join(sorted(PUNCTUATION)))


def normalize(text: str, *, ignore_case: bool = True, ignore_punctuation: bool = True,
              ignore_articles: bool = True) -> str:
    """Lower case, punctuation and articles removed, whitespace collapsed (seed 002 §4.1.1)."""
    if ignore_case:
        text = text.lower()
    if ignore_punctuation:
        text = text.translate(_DROP)
    if ignore_articles:
        text = _ARTICLES.sub(" ", text) if ignore_case else re.sub(
            r"\b(a|an|the|A|An|The)\b", " ", text)
    return " ".join(text.split())


def tokens(text: str, **options) -> list[str]:
    """Whitespace tokens of the normalised text (seed 002 §4.1.2)."""
    return normalize(text, **options).split()


def ngrams(words: list[str], n: int) -> Counter:
    """Multiset of the ``n``-grams of a token list."""
    return Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))
