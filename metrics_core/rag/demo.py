"""A small deterministic SYNTHETIC RAG evaluation file (seed 002; contract §12).

Everything is generated from a fixed seed over invented facts about invented places; nothing
is real. ``python -m metrics_core.rag.demo [--out FILE]`` rewrites ``assets/demo_rag.jsonl``.

The file has base questions (some answered right, some wrong, one with an empty response, one
without a reference), paraphrase and typo variants, counterfactual variants, unanswerable
questions (no relevant document; the system sometimes refuses), retrieved lists with an
8-dimensional ``metadata.embedding`` per document, and end-to-end timings.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

__all__ = ["DEMO_RAG_LABEL", "DEMO_RAG_SEED", "demo_rag_path", "make_rag_demo", "write_rag_demo"]

DEMO_RAG_SEED = 2
DEMO_RAG_LABEL = "Synthetic RAG demo data (metrics_core.rag.demo; invented facts)"
_PLACES = ("Alvon", "Brisk", "Corvel", "Dunmere", "Esk", "Farrow", "Glint", "Holm", "Ivel",
           "Jorren", "Kess", "Lumen", "Morrow", "Nettle", "Orrin", "Pell")
_ATTRIBUTES = (("river", "length", "{} km", (100, 900)),
               ("tower", "height", "{} metres", (20, 400)),
               ("lake", "depth", "{} metres", (5, 300)),
               ("bridge", "span", "{} metres", (30, 1200)))
_REFUSAL = "I don't know; the documents do not say."


def demo_rag_path() -> Path:
    """The shipped ``demo_rag.jsonl`` (:mod:`metrics_core.shipped`)."""
    from metrics_core.shipped import ASSETS

    return ASSETS / "demo_rag.jsonl"


def make_rag_demo(n_base: int = 16, *, seed: int = DEMO_RAG_SEED) -> list[dict]:
    """The demo samples as JSON-ready dicts (one per line of the file)."""
    rng = np.random.default_rng(seed)
    facts = []
    for i in range(n_base):
        place = _PLACES[i % len(_PLACES)]
        thing, attr, unit, (lo, hi) = _ATTRIBUTES[i % len(_ATTRIBUTES)]
        value = unit.format(int(rng.integers(lo, hi)))
        facts.append({"doc_id": f"doc-{i:03d}", "place": place, "thing": thing, "attr": attr,
                      "value": value,
                      "text": f"The {thing} of {place} has a {attr} of {value}."})
    # Filler documents: retrieved but never relevant.
    fillers = [{"doc_id": f"filler-{j:03d}",
                "text": f"{_PLACES[j % len(_PLACES)]} is known for its {w} markets."}
               for j, w in enumerate(("spice", "wool", "glass", "salt", "silver", "paper"))]
    docs = {d["doc_id"]: d for d in [*facts, *fillers]}
    embedding = {doc_id: np.round(rng.normal(size=8), 3).tolist() for doc_id in docs}

    def retrieved(gold: str | None, *, hit_rank: int | None, n: int = 5) -> list[dict]:
        others = [d for d in docs if d != gold]
        picks = list(rng.choice(others, size=n, replace=False))
        if gold is not None and hit_rank is not None:
            picks[hit_rank - 1] = gold
        scores = np.sort(rng.uniform(0.2, 0.95, size=n))[::-1]
        return [{"doc_id": d, "text": docs[d]["text"], "score": round(float(s), 4),
                 "rank": r, "metadata": {"embedding": embedding[d]}}
                for r, (d, s) in enumerate(zip(picks, scores, strict=True), start=1)]

    def timing() -> dict:
        return {"end_to_end": round(float(rng.lognormal(mean=0.0, sigma=0.4)), 3)}

    def line(sample_id, query, reference, gold, response, *, scenario=None, variant_of=None,
             hit_rank=1):
        return {"sample_id": sample_id, "query": query, "reference_answer": reference,
                "relevant_docs": [] if gold is None else
                [{"doc_id": gold, "text": docs[gold]["text"]}],
                "labels": {"scenario": scenario, "variant_of": variant_of},
                "retrieved": retrieved(gold, hit_rank=hit_rank), "response": response,
                "timings": timing()}

    rows = []
    for i, f in enumerate(facts):
        question = f"What is the {f['attr']} of the {f['thing']} of {f['place']}?"
        right = f"The {f['thing']} of {f['place']} is {f['value']} in {f['attr']}."
        wrong_value = f["value"].split()[0][::-1].lstrip("0") or "7"
        wrong = f"It is about {wrong_value} {f['value'].split()[1]}."
        hit = [1, 1, 2, 3, None][i % 5]
        response = (f["value"] if i % 3 == 0 else right) if i % 4 != 3 else wrong
        reference = f["value"] if i != 5 else None
        if i == 7:
            response = ""
        sid = f"q{i:02d}"
        rows.append(line(sid, question, reference, f["doc_id"], response, hit_rank=hit))
        if i % 2 == 0:  # a noisy variant: paraphrase or typo
            noisy_q = (f"Tell me the {f['attr']} of {f['place']}'s {f['thing']}." if i % 4 == 0
                       else question.replace(f["place"], f["place"][:-1] + "x"))
            noisy_r = right if i % 8 != 6 else wrong
            rows.append(line(f"{sid}-n", noisy_q, reference, f["doc_id"], noisy_r,
                             scenario="paraphrase" if i % 4 == 0 else "typo", variant_of=sid,
                             hit_rank=[1, 2, None][i % 3]))
        if i % 4 == 1:  # a counterfactual variant: the question states a false premise
            cf_q = f"Given that the {f['thing']} of {f['place']} was rebuilt, {question.lower()}"
            cf_r = right if i % 8 == 1 else f"After the rebuild it is {wrong_value} units."
            rows.append(line(f"{sid}-cf", cf_q, reference, f["doc_id"], cf_r,
                             scenario="counterfactual", variant_of=sid))
    for j in range(5):  # unanswerable
        place = _PLACES[(j * 5) % len(_PLACES)]
        rows.append(line(f"u{j:02d}", f"Who founded the city of {place}?", "I don't know",
                         None, _REFUSAL if j % 2 == 0 else f"{place} was founded by Queen Ada.",
                         scenario="unanswerable", hit_rank=None))
    return rows


def write_rag_demo(path: Path | None = None) -> Path:
    """Write the demo file (JSON Lines) and return its path."""
    path = demo_rag_path() if path is None else Path(path)
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in make_rag_demo())
    path.write_text(text, encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the synthetic RAG demo file.")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    print(f"wrote {write_rag_demo(args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
