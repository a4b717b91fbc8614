"""The one settings schema (issue 33): every way a setting comes in (the constructor, a
settings.json, a link's text, a command-line flag) is checked by :data:`config.SCHEMA`; a
refusal names the field, the rule and the value, in the project's words.

The hostile corpus below holds the settings files of issue 33 (items 3-6) and their kind."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metrics_core import settings_file
from metrics_core.config import (
    MAX_SETTINGS_BYTES,
    MAX_SETTINGS_DEPTH,
    SCHEMA,
    EvalConfig,
    Filters,
    SettingsError,
    coerce_field,
)
from metrics_core.settings_file import read_settings, read_settings_partial

PYTHON_WORDS = ("not supported between", "Traceback", "TypeError", "OverflowError",
                "invalid literal", "could not convert", "object is not", "NoneType")


def _file(config: dict, *, wrapped: bool = True) -> bytes:
    return json.dumps({"schema": "metrics_core_settings/1", "config": config}
                      if wrapped else config).encode("utf-8")


def _refused(data: bytes, source: str = "settings.json") -> SettingsError:
    with pytest.raises(SettingsError) as info:
        read_settings(data, source=source)
    err = info.value
    for words in PYTHON_WORDS:
        assert words not in str(err)
    assert str(err).startswith(f"{source}: ")
    return err


# ------------------------------------------------------------------ the hostile corpus
#: (raw JSON text of the config, field named, value as shown) - issue 33 items 3, 4 and 5.
BAD_VALUES = [
    ('{"gate_aware": "false"}', "gate_aware", "'false'"),
    ('{"seed": "abc"}', "seed", "'abc'"),
    ('{"ks": [Infinity]}', "ks", "Infinity"),
    ('{"ks": [1e18]}', "ks", "1e+18"),
    ('{"ks": [1000000000000000000]}', "ks", "1000000000000000000"),
    ('{"hard_cap": 1e18}', "hard_cap", "1e+18"),
    ('{"hard_cap": 1e30}', "hard_cap", "1e+30"),
    ('{"k_min": 1e12}', "k_min", "1000000000000.0"),
    ('{"k_min": 2.5}', "k_min", "2.5"),
    ('{"temperature": 1e300}', "temperature", "1e+300"),
    ('{"temperature": 1e400}', "temperature", "1e400"),
    ('{"n_bins": 1e9}', "n_bins", "1000000000.0"),
    ('{"n_bins": 1000000000}', "n_bins", "1000000000"),
    ('{"seed": -1}', "seed", "-1"),
    ('{"seed": 1.5}', "seed", "1.5"),
    ('{"seed": NaN}', "seed", "NaN"),
    ('{"seed": -Infinity}', "seed", "-Infinity"),
    ('{"bootstrap": 1e400}', "bootstrap", "1e400"),
    ('{"bootstrap": 100001}', "bootstrap", "100001"),
    ('{"tau_neg": "0.1"}', "tau_neg", "'0.1'"),
    ('{"tau_neg": null}', "tau_neg", "null"),
    ('{"tau_neg": true}', "tau_neg", "true"),
    ('{"gate_aware": 1}', "gate_aware", "1"),
    ('{"mass": "softmax "}', "mass", "'softmax '"),
    ('{"mass": ["softmax"]}', "mass", "['softmax']"),
    ('{"tpr_fprs": [0.1, 1.5]}', "tpr_fprs", "1.5"),
    ('{"tpr_fprs": "0.1"}', "tpr_fprs", "'0.1'"),
    ('{"ks": []}', "ks", "[]"),
    ('{"ks": "1,3"}', "ks", "'1,3'"),
    ('{"ks": [true]}', "ks", "true"),
    ('{"targets": "auroc>=0.8"}', "targets", "'auroc>=0.8'"),
    ('{"targets": ["auroc>=1e400"]}', "targets", "'auroc>=1e400'"),
    ('{"targets": ["junk"]}', "targets", "'junk'"),
    ('{"targets": ["aurco>=0.8"]}', "targets", "'aurco>=0.8'"),
    ('{"targets": [1]}', "targets", "1"),
    ('{"filters": {"criteria": "A.1"}}', "filters", "'A.1'"),
    ('{"filters": {"criteria": [1]}}', "filters", "1"),
    ('{"filters": {"fold": 1.5}}', "filters", "1.5"),
    ('{"filters": {"folds": "1"}}', "filters", "{'folds': …}"),
    ('{"filters": "A.1"}', "filters", "'A.1'"),
    ('{"criterion_gates": [["A.1", 0.5]]}', "criterion_gates", "['A.1', 0.5]"),
    ('{"criterion_gates": [["A.1", 0.5, 0.2]]}', "criterion_gates", "['A.1', 0.5, 0.2]"),
    ('{"criterion_gates": [[1, 0.1, 0.2]]}', "criterion_gates", "[1, 0.1, 0.2]"),
    ('{"criterion_gates": [["A.1", 0.1, 0.2], ["A.1", 0.1, 0.3]]}', "criterion_gates",
     "['A.1', 0.1, 0.3]"),
    ('{"criterion_gates": "A.1=0.1:0.2"}', "criterion_gates", "'A.1=0.1:0.2'"),
    ('{"tau_neg": 0.7}', "tau_neg", "0.7"),  # above the default τ_pos 0.6
    ('{"gamma": 0}', "gamma", "0"),
    ('{"seed": 123456789012345678901234567890123456789012345678901234567890}', "seed",
     "1234567890123456789012345678901234567890…"),
]


@pytest.mark.parametrize(("text", "field", "shown"), BAD_VALUES)
def test_a_bad_value_is_refused_naming_field_rule_and_value(text, field, shown):
    for data in (text.encode(), b'{"schema": "metrics_core_settings/1", "config": '
                 + text.encode() + b"}"):
        err = _refused(data)
        assert err.fields == [field]
        assert err.errors[0].field == field
        message = str(err)
        assert f"settings.json: {field}: " in message
        assert message.endswith(f"; got {shown}"), message
    # the notebook API gives the same verdict
    with pytest.raises(SettingsError) as info:
        EvalConfig.from_dict(json.loads(text, parse_constant=lambda c: float(c)))
    assert info.value.fields == [field]


def test_the_rules_are_said_in_plain_words():
    err = _refused(b'{"hard_cap": 1e18, "k_min": 2.5, "gate_aware": "false", "seed": "abc"}')
    assert str(err) == (
        "settings.json: 4 settings are not valid:\n"
        "- hard_cap: must be a whole number within [1, 1,000]; got 1e+18\n"
        "- k_min: must be a whole number within [0, 1,000]; got 2.5\n"
        "- gate_aware: must be true or false (a JSON boolean, not text); got 'false'\n"
        "- seed: must be a whole number within [0, 2,147,483,647]; got 'abc'")
    assert err.fields == ["hard_cap", "k_min", "gate_aware", "seed"]
    assert str(_refused(b'{"ks": [Infinity]}')) == (
        "settings.json: ks: item 1 must be a whole number within [1, 10,000]; got Infinity")
    assert str(_refused(b'{"targets": ["aurco>=0.8"]}')) == (
        "settings.json: targets: item 1: no metric is called 'aurco'; did you mean auroc, auprc, "
        "accuracy?; got 'aurco>=0.8'")


def test_one_bad_field_does_not_reset_the_others():
    data = _file({"tau_neg": 0.05, "tau_pos": 0.7, "seed": float("nan"), "k_min": 3,
                  "targets": ["junk"], "ks": [1, 5]})
    valid, errors = read_settings_partial(data, source="s.json")
    assert valid == {"tau_neg": 0.05, "tau_pos": 0.7, "k_min": 3, "ks": (1, 5)}
    assert [e.field for e in errors] == ["seed", "targets"]
    assert EvalConfig(**valid) == EvalConfig(tau_neg=0.05, tau_pos=0.7, k_min=3, ks=(1, 5))
    # a broken pair of thresholds drops both (the valid ones alone still make a config)
    valid, errors = read_settings_partial(_file({"tau_neg": 0.7, "tau_pos": 0.2, "seed": 4}),
                                          source="s.json")
    assert valid == {"seed": 4} and [e.field for e in errors] == ["tau_neg"]
    assert str(errors[0]) == "s.json: tau_neg: must be at most tau_pos (0.2); got 0.7"


def test_unknown_and_repeated_keys_are_named():
    err = _refused(b'{"gate-aware": true, "seed": 1}')
    assert str(err) == "settings.json: gate-aware: is not a setting (did you mean gate_aware?)"
    err = _refused(b'{"seed": 1, "seed": 2}')
    assert str(err) == "settings.json: seed: is given twice in one JSON object"
    err = _refused(b'{"config": {}, "extra": 1}')
    assert "'extra'" in str(err) and err.field is None
    err = _refused(b'{"schema": "metrics_core_settings/9", "config": {}}')
    assert err.field == "schema"
    assert "must hold a JSON object" in str(_refused(b"[1, 2]"))
    assert "config: must be a JSON object" in str(_refused(b'{"config": [1]}'))


def _no_parse(*args, **kwargs):
    raise AssertionError("the file was parsed")


def test_deep_nesting_is_refused_before_parsing(monkeypatch):
    monkeypatch.setattr(settings_file.json, "loads", _no_parse)
    for depth in (100_000, 1_000_000 // 2 - 10):
        data = b'{"ks": ' + b"[" * depth + b"]" * depth + b"}"
        err = _refused(data)  # no RecursionError: json never sees it
        assert str(err) == (f"settings.json: nests brackets {depth + 1:,} deep; a settings "
                            f"file nests at most {MAX_SETTINGS_DEPTH}")
    monkeypatch.undo()
    # brackets inside strings do not count, escaped quotes do not end a string
    deep_text = '"\\"' + "[" * 150 + '"'
    assert read_settings(('{"filters": {"fold": ' + deep_text + "}}").encode(),
                         source="s")["filters"].fold == '"' + "[" * 150
    ok = b'{"filters": ' * 1 + b'{"criteria": []}}'
    assert read_settings(ok, source="s") == {"filters": Filters()}


def test_a_pathological_unterminated_string_is_linear():
    data = b'{"seed": ' + b'"\\"' * 300_000  # (a quadratic scan would take hours)
    err = _refused(data)
    assert "is not valid JSON" in str(err)


def test_a_huge_file_is_refused_by_its_size_before_parsing(monkeypatch):
    data = _file({"targets": ["auroc>=0.85"] * 4_000_000})
    assert len(data) > 50_000_000
    monkeypatch.setattr(settings_file.json, "loads", _no_parse)
    monkeypatch.setattr(settings_file, "_decoded", _no_parse)
    err = _refused(data)
    assert str(err) == (f"settings.json: is {len(data):,} bytes; a settings file holds at most "
                        f"{MAX_SETTINGS_BYTES:,} bytes")


def test_long_lists_are_refused_by_their_length():
    assert "at most 64 targets" in str(_refused(_file({"targets": ["auroc>=0.85"] * 65})))
    assert "1 to 50 whole numbers" in str(_refused(_file({"ks": list(range(1, 52))})))
    assert "at most 50 finite numbers" in str(_refused(_file({"tpr_fprs": [0.1] * 51})))
    long_name = "a" * 201
    err = _refused(_file({"filters": {"criteria": [long_name]}}))
    assert err.field == "filters" and "1 to 200 characters" in str(err)
    assert len(str(err)) < 300  # the value is shortened


@pytest.mark.parametrize(("encoding", "bom"), [
    ("utf-8", b"\xef\xbb\xbf"), ("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"),
    ("utf-32-le", b"\xff\xfe\x00\x00"), ("utf-32-be", b"\x00\x00\xfe\xff")])
def test_a_byte_order_mark_gives_the_same_settings(encoding, bom):
    text = json.dumps({"config": {"tau_neg": 0.05, "filters": {"fold": "Ä1", "criteria": []}}},
                      ensure_ascii=False)
    plain = read_settings(text.encode("utf-8"), source="s")
    assert plain == {"tau_neg": 0.05, "filters": Filters(fold="Ä1")}
    assert read_settings(bom + text.encode(encoding), source="s") == plain


def test_other_encodings_are_refused_with_a_clear_message():
    text = '{"filters": {"fold": "Ä1"}}'
    err = _refused(text.encode("latin-1"))
    assert str(err) == ("settings.json: is not UTF-8 text (byte 22 is 0xc4); save the file "
                        "as UTF-8")
    err = _refused(text.encode("utf-16-le"))  # no byte-order mark
    assert "UTF-16 or UTF-32 text needs a byte-order mark" in str(err)
    err = _refused(b"\xff\xfe" + b"{\x00\x00\xd8")  # a lone surrogate after the mark
    assert "is not valid UTF-16 text after its byte-order mark" in str(err)


def test_the_dashboards_settings_file_is_read_back():
    cfg = EvalConfig(tau_neg=0.05, tau_pos=0.7, seed=1_234_567, ks=(1, 7), hard_cap=1000,
                     criterion_gates=(("A.1", 0.05, 0.7),), targets=("auroc>=0.9",),
                     filters=Filters(fold="2", criteria=("A.1", "A.3")), gate_aware=False)
    data = json.dumps({"schema": "metrics_core_settings/1", "config": cfg.to_dict()},
                      indent=2).encode()
    assert EvalConfig(**read_settings(data, source="s")) == cfg
    assert EvalConfig(**read_settings(_file(cfg.to_dict(), wrapped=False), source="s")) == cfg
    assert read_settings(data, source="s")["seed"] == 1_234_567


# ------------------------------------------------------------------ the constructor
@pytest.mark.parametrize(("field", "value"), [
    ("k_min", 2.0), ("hard_cap", True), ("seed", "1"), ("gate_aware", 1), ("gate_aware", "no"),
    ("tau_neg", float("nan")), ("temperature", math.inf), ("ks", "1,3"), ("ks", (1.5,)),
    ("targets", "auroc>=0.8"), ("tpr_fprs", (float("nan"),)), ("n_bins", 1), ("n_bins", 1001),
    ("criterion_gates", (("A.1", 0.1),)), ("criterion_gates", ((1, 0.1, 0.2),)),
    ("filters", "A.1"), ("mass", None)])
def test_the_constructor_is_strict(field, value):
    with pytest.raises(SettingsError) as info:
        EvalConfig(**{field: value})
    assert info.value.fields == [field]


def test_the_constructor_reports_every_problem_and_normalises_types():
    with pytest.raises(SettingsError) as info:
        EvalConfig(hard_cap=0, seed=-1, tau_neg=2.0)
    assert info.value.fields == ["tau_neg", "hard_cap", "seed"]
    with pytest.raises(SettingsError, match="criteria must be a list"):
        Filters(criteria="A.1")
    import numpy as np

    cfg = EvalConfig(tau_neg=np.float64(0.05), k_min=np.int64(3), tau_pos=1)
    assert type(cfg.tau_neg) is float and type(cfg.k_min) is int and type(cfg.tau_pos) is float
    assert Filters(fold=2).fold == "2"
    assert EvalConfig(ks=[10, 1, 10]).ks == (1, 10)


# ------------------------------------------------------------------ text (links, flags)
@pytest.mark.parametrize(("field", "text", "value"), [
    ("seed", "1234567", 1_234_567), ("seed", " 2147483647 ", 2**31 - 1), ("bootstrap", "1e3", 1000),
    ("bootstrap", "2000.0", 2000), ("gate_aware", "0", False), ("gate_aware", "TRUE", True),
    ("tau_neg", "0.05", 0.05), ("temperature", "1e-2", 0.01), ("ks", "10,1,5", (1, 5, 10)),
    ("ks", ["3", "1"], (1, 3)), ("tpr_fprs", "0.1,0.01", (0.01, 0.1)),
    ("criterion_gates", ["A.1=0.05:0.7", "B:2:0.1:0.2"], (("A.1", 0.05, 0.7),
                                                         ("B:2", 0.1, 0.2))),
    ("targets", "auroc>=0.8,ece<0.05", ("auroc>=0.8", "ece<0.05")), ("mass", " probability ",
                                                                     "probability")])
def test_text_is_read_exactly(field, text, value):
    assert coerce_field(field, text, text=True) == value


@pytest.mark.parametrize(("field", "text"), [
    ("seed", "2.5"), ("seed", "1e400"), ("seed", "inf"), ("seed", "nan"), ("seed", "-1"),
    ("seed", "0x10"), ("seed", "1_000"), ("seed", "9" * 65), ("bootstrap", "1e999999999999"),
    ("tau_neg", "inf"), ("tau_neg", "nan"), ("tau_neg", "1e400"), ("tau_neg", "-0.1"),
    ("tau_neg", ""), ("gate_aware", "yes"), ("gate_aware", "2"), ("ks", "1,1e18"),
    ("ks", "1000000000000000000"), ("ks", ",".join(["1"] * 300)), ("hard_cap", "1e21"),
    ("n_bins", "100000000"), ("criterion_gates", ["A.1=0.7:0.2"]),
    ("criterion_gates", ["A.1"]), ("targets", "junk"), ("mass", "soft")])
def test_bad_text_is_refused(field, text):
    with pytest.raises(SettingsError) as info:
        coerce_field(field, text, text=True)
    assert info.value.field == field and f"{field}: " in str(info.value)


def test_json_and_text_differ_only_where_said():
    assert coerce_field("seed", 10.0) == 10  # a JSON whole number written with a point
    with pytest.raises(SettingsError):
        coerce_field("seed", "10")  # JSON text is not a number
    with pytest.raises(SettingsError):
        coerce_field("gate_aware", "true")
    with pytest.raises(SettingsError, match="is not a setting"):
        coerce_field("nope", 1)


# ------------------------------------------------------------------ properties
_NAMES = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)
_TARGETS = st.sampled_from(["auroc>=0.85", "ece<0.05", "recall@10>0.5", "tpr@fpr=0.05>=0.3",
                            "brier<=0.2", "mean_k<4"])


def _value(schema):
    k, low, high = schema.kind, schema.low, schema.high
    if k == "bool":
        return st.booleans()
    if k == "int":
        return st.integers(int(low), int(high))
    if k == "float":
        return st.floats(low, high, allow_nan=False)
    if k == "choice":
        return st.sampled_from(schema.choices)
    if k == "ints":
        return st.lists(st.integers(int(low), int(high)), min_size=1, max_size=schema.max_items)
    if k == "floats":
        return st.lists(st.floats(low, high), max_size=schema.max_items)
    if k == "gates":
        pair = st.tuples(st.floats(0, 1), st.floats(0, 1)).map(sorted)
        return st.dictionaries(_NAMES, pair, max_size=4).map(
            lambda d: [(n, lo, hi) for n, (lo, hi) in d.items()])
    if k == "targets":
        return st.lists(_TARGETS, max_size=8)
    return st.builds(Filters, fold=st.none() | _NAMES, split=st.none() | _NAMES,
                     criteria=st.lists(_NAMES, max_size=5))


@st.composite
def configs(draw):
    values = {name: draw(_value(schema)) for name, schema in SCHEMA.items()}
    values["tau_neg"], values["tau_pos"] = sorted((values["tau_neg"], values["tau_pos"]))
    # a target of a family must be one the run computes (its cut-off / FPR among the run's)
    values["targets"] = [t for t in values["targets"]
                         if not (t.startswith("recall@10") and 10 not in values["ks"])
                         and not (t.startswith("tpr@fpr=0.05") and 0.05 not in values["tpr_fprs"])]
    return EvalConfig(**values)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=configs(), wrapped=st.booleans(), ascii_only=st.booleans())
def test_any_valid_config_round_trips_exactly(cfg, wrapped, ascii_only):
    body = cfg.to_dict()
    text = json.dumps({"schema": "metrics_core_settings/1", "config": body} if wrapped
                      else body, ensure_ascii=ascii_only)
    values = read_settings(text.encode("utf-8"), source="s.json")
    assert EvalConfig(**values) == cfg
    assert EvalConfig.from_dict(json.loads(text).get("config", json.loads(text))) == cfg
    assert EvalConfig.from_dict(cfg.to_dict()) == cfg


def _outside(schema):
    low, high = schema.low, schema.high
    if schema.kind == "int":
        return (st.integers(max_value=int(low) - 1) | st.integers(min_value=int(high) + 1)
                | st.floats(allow_nan=False).filter(lambda x: not low <= x <= high)
                | st.floats(low, high).filter(lambda x: not float(x).is_integer()))
    return st.floats(allow_nan=False, allow_infinity=False).filter(
        lambda x: not low <= x <= high)


_NUMERIC = sorted(n for n, s in SCHEMA.items() if s.kind in ("int", "float"))


@settings(max_examples=200, deadline=None)
@given(data=st.data(), name=st.sampled_from(_NUMERIC), as_text=st.booleans())
def test_any_value_out_of_range_is_refused_naming_its_field(data, name, as_text):
    value = data.draw(_outside(SCHEMA[name]))
    if as_text:
        with pytest.raises(SettingsError) as info:
            coerce_field(name, repr(value), text=True)
        assert str(info.value).startswith(f"{name}: must be a ")
    err = _refused(_file({name: value}))
    assert err.fields == [name] and f"settings.json: {name}: must be a " in str(err)


def test_the_contract_lists_every_field_with_its_rule():
    from pathlib import Path

    contract = (Path(__file__).parents[1] / "docs" / "CONTRACT.md").read_text(encoding="utf-8")
    section = contract.split("## 13. Settings: one schema", 1)[1]
    for name, schema in SCHEMA.items():
        assert f"| `{name}` | {schema.rule.removeprefix('must be ')} |" in section, name


def test_a_refusal_survives_copy_and_pickle():
    import copy
    import pickle

    err = _refused(b'{"seed": -1, "k_min": 2.5}')
    for again in (pickle.loads(pickle.dumps(err)), copy.deepcopy(err)):
        assert str(again) == str(err) and again.fields == ["seed", "k_min"]
        assert again.errors[0].value == -1 and again.errors[0].source == "settings.json"
    one = SettingsError("tau_neg", "must be within [0, 1]")
    assert str(pickle.loads(pickle.dumps(one))) == "tau_neg: must be within [0, 1]"
