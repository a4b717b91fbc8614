"""``metrics-core rag``: the RAG evaluation metrics of a JSON Lines file (contract §12)."""

from __future__ import annotations

import sys

from metrics_core.cli.flags import FlagError, flag_value
from metrics_core.cli.output import EXIT_OK, check_outputs, printable, write_atomically
from metrics_core.config import SCHEMA, FieldSchema

#: Latency quantiles of ``rag --quantiles``.
_QUANTILES = FieldSchema("quantiles", "floats", 0.0, 1.0, max_items=20)


def rag_command(args) -> int:
    """``metrics-core rag``: the metrics written to ``--out``, then listed; the exit status."""
    import json

    from metrics_core.rag import loader, suite
    from metrics_core.rag.generation_llm_judge import OpenAICompatibleCritic
    from metrics_core.run import fingerprint

    if len(args.quantiles) > _QUANTILES.max_items or any(
            not 0 < q <= 1 for q in args.quantiles):
        raise FlagError(f"--quantiles must be in (0, 1] (at most {_QUANTILES.max_items}), got "
                        f"{args.quantiles}")
    given = [t for t in str(args.ks).split(",") if t.strip()]
    ks = tuple(flag_value(SCHEMA["ks"], args.ks, "--ks"))
    if len(ks) != len(given):
        raise FlagError(f"--ks: must be distinct cut-offs; got {args.ks!r}")
    check_outputs([("FILE", args.file)], [("--out", args.out)])
    critic = None
    if args.critic_url is not None:
        try:
            critic = OpenAICompatibleCritic(args.critic_url, model=args.critic_model,
                                            timeout=args.critic_timeout,
                                            max_bytes=args.critic_max_bytes,
                                            max_retries=args.critic_retries)
        except ValueError as err:  # name the flags, not the constructor's arguments
            text = str(err)
            for word, flag in (("critic url", "--critic-url"),
                               ("critic timeout", "--critic-timeout"),
                               ("critic max_bytes", "--critic-max-bytes"),
                               ("critic max_retries", "--critic-retries")):
                text = text.replace(word, flag)
            raise ValueError(text) from None
    data = loader.load_rag(args.file)
    metrics = suite.default_metrics(ks=ks, quantiles=args.quantiles, critic=critic,
                                    semantic=not args.no_semantic)
    try:
        results = suite.evaluate(data.samples, data.outputs, metrics)
    except ImportError as err:  # an optional extra is missing: say which
        raise RuntimeError(str(err)) from None
    payload = {"input": {**fingerprint(args.file), "n_samples": len(data)},
               "config": {"ks": list(ks), "quantiles": list(args.quantiles),
                          "critic_url": args.critic_url, "semantic": not args.no_semantic},
               "metrics": [r.to_dict() for r in results]}
    text = json.dumps(payload, indent=2, allow_nan=False)
    write_atomically({args.out: text.encode("utf-8")})
    failed = [r for r in results if "critic_error" in r.details]
    if failed:  # the run goes on without them (contract §12): one line, even with --quiet
        print(f"metrics-core: warning: {', '.join(r.name for r in failed)} skipped: "
              f"{printable(failed[0].details['critic_error'])}", file=sys.stderr)
    if not args.quiet:
        for r in results:
            value = f"{r.value:.4f}" if r.defined else "undefined"
            note = r.details.get("skipped_reason", "")
            if not note and "similarity" in r.details:
                note = f"answers compared by {r.details['similarity']}"
            print(printable(f"{r.name:32s} {value:>10s}  n={r.details.get('num_samples', 0)}"
                             f"{'  ' + note if note else ''}"))
        print(f"wrote {printable(args.out)}")
    return EXIT_OK
