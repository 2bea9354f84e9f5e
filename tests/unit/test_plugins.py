"""Plug-ins: registry metadata and discovery, schema enums from the registries, and the
worked examples of docs/extending.md (each one new file plus one config line), run for real."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from personalir.common.config import (
    REGISTRY_KEYWORD,
    ConfigError,
    fill_defaults,
    load_schema,
    registry_names,
    validate_config,
)
from personalir.common.registry import PluginError, Registry

REPO = Path(__file__).resolve().parents[2]
EXTENDING = REPO / "docs" / "extending.md"
CONFIG = REPO / "config" / "config.yaml"


# --------------------------------------------------------------------- the registry itself
def test_registration_requires_the_declared_facts_and_names_the_class():
    reg = Registry("widget", required=("label", "order"))

    class Complete:
        label, order = "Complete", 2

    reg.register("complete")(Complete)
    with pytest.raises(PluginError, match=r"widget 'partial' \(.*Partial\) lacks .*\['order'\]"):

        @reg.register("partial")
        class Partial:
            label = "Partial"

    assert reg.names() == ["complete"]
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("complete")(Complete)


def test_ordered_view_sorts_by_order_then_name_and_unordered_last():
    reg = Registry("widget")
    for name, order in (("b", 2), ("a", 2), ("c", 1), ("z", None)):
        reg.register(name)(type(name, (), {} if order is None else {"order": order}))
    assert reg.ordered() == ["c", "a", "b", "z"]
    assert reg.ordered(["z", "b", "c"]) == ["c", "b", "z"]
    assert reg.attribute("c", "order") == 1 and reg.attribute("nope", "order", 7) == 7


def test_discovery_imports_only_modules_that_register(tmp_path, monkeypatch):
    pkg = tmp_path / "plugpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from personalir.common.registry import Registry\n"
        "THINGS = Registry('thing', package='plugpkg', symbol='THINGS')\n"
    )
    (pkg / "good.py").write_text(
        "from plugpkg import THINGS\n\n\n@THINGS.register('good')\nclass Good:\n    pass\n"
    )
    # Mentions the registry but does not register at the start of a line: never imported.
    (pkg / "heavy.py").write_text(
        '"""    @THINGS.register("doc") is only an example."""\n'
        "raise RuntimeError('a module that is not a plug-in was imported')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        things = importlib.import_module("plugpkg").THINGS
        assert things.names() == ["good"]
        assert "plugpkg.good" in sys.modules and "plugpkg.heavy" not in sys.modules
        with pytest.raises(KeyError, match="unknown thing 'bad'; registered: good"):
            things.get("bad")
    finally:
        for name in ("plugpkg", "plugpkg.good", "plugpkg.heavy"):
            sys.modules.pop(name, None)


def test_builtin_plugins_carry_their_facts():
    from personalir.errors.sampling import SAMPLERS
    from personalir.retrieval.base import FAMILIES, load_builtin_retrievers
    from personalir.retrieval.metrics import METRICS
    from personalir.syntax.models import PROFILE_MODELS
    from personalir.ttp.methods.base import PERSONAL_RETRIEVERS

    for registry in (SAMPLERS, METRICS, PROFILE_MODELS, PERSONAL_RETRIEVERS):
        for name, cls in registry.entries():
            registry.validate(name, cls)
    for name, cls in load_builtin_retrievers().entries():
        assert cls.family in FAMILIES, name
    assert load_builtin_retrievers().names() == [
        "bge_m3",
        "bm25",
        "colbert",
        "dense",
        "fused_dense_sparse",
        "llm_prompt",
        "llm_yesno",
        "lucene_bm25",
        "maxsim_untrained",
        "splade",
    ]
    # Today's tables: this row order and these labels (errors_tables, retrieval_tables).
    assert SAMPLERS.ordered() == [
        "global",
        "uniform",
        "character_random",
        "wrong_user",
        "personalised",
    ]
    assert [SAMPLERS.get(n).label for n in SAMPLERS.ordered()] == [
        "Global",
        "Uniform",
        "Character-random",
        "Wrong user",
        "Personalised",
    ]
    assert METRICS.ordered() == ["Flip", "FlipProd", "RRstd", "Deg", "MRRdeg"]


# -------------------------------------------------------------- schema enums and registries
def _nodes(schema, path=()):
    if isinstance(schema, dict):
        yield path, schema
        for key, value in schema.items():
            yield from _nodes(value, (*path, key))


def _at(schema, dotted: str) -> dict:
    node = schema
    for key in dotted.split("."):
        node = node["properties"][key]
    return node


def test_registry_enums_are_the_registries_names():
    schema = load_schema()
    marked = {
        "/".join(p for p in path if p != "properties"): node
        for path, node in _nodes(schema)
        if REGISTRY_KEYWORD in node
    }
    assert {k: v[REGISTRY_KEYWORD] for k, v in marked.items()} == {
        "syntax/attribution/models/items": "personalir.syntax.models:PROFILE_MODELS",
        "errors/sampling_eval/samplers/items": "personalir.errors.sampling:SAMPLERS",
        "queries/pairs/prefer_backends/items": "personalir.queries.backends:BACKENDS",
        "retrieval/metrics/pqb/items": "personalir.retrieval.metrics:METRICS",
        "ttp/methods/items": "personalir.ttp.methods.base:PERSONAL_RETRIEVERS",
        "ttp/relevance_test/methods/items": "personalir.ttp.methods.base:PERSONAL_RETRIEVERS",
        "ttp/pqb/methods/items": "personalir.ttp.methods.base:PERSONAL_RETRIEVERS",
        "ttp/public/methods/items": "personalir.ttp.methods.base:PERSONAL_RETRIEVERS",
        "ttp/student/teacher": "personalir.ttp.methods.base:PERSONAL_RETRIEVERS",
        "validation/judge/dimensions/items": "personalir.validation.dimensions:DIMENSIONS",
    }
    for node in marked.values():
        assert node["enum"] == registry_names(node[REGISTRY_KEYWORD])
        assert node["enum"]


# Plug-in name lists the schema still spells out (their plug-ins are not one-file additions
# of this kind): each must list exactly the registry's names.
STATIC_ENUMS = {
    "errors.gec.backends": ("personalir.errors.gec", "GEC_BACKENDS"),
    "queries.backends": ("personalir.queries.backends", "BACKENDS"),
    "queries.filters.eager": ("personalir.queries.filters", "FILTERS"),
    "queries.pairs.distance": ("personalir.queries.matching", "GAUSSIAN_DISTANCES"),
    "ttp.history.relevance.type": ("personalir.ttp.inputs.relevance", "RELEVANCE_MODELS"),
    "ttp.teacher.type": ("personalir.ttp.training.teacher", "TEACHERS"),
}


@pytest.mark.parametrize("key", sorted(STATIC_ENUMS))
def test_static_plugin_enums_equal_the_registries(key):
    node = _at(load_schema(), key)
    enum = node.get("items", node)["enum"]
    module, attribute = STATIC_ENUMS[key]
    assert sorted(enum) == getattr(importlib.import_module(module), attribute).names()


def test_static_family_enum_and_sources():
    from personalir.retrieval.base import FAMILIES
    from personalir.ttp.inputs.data import EXAMPLE_SOURCES

    schema = load_schema()
    run_files = _at(schema, "retrieval.run_files")["additionalProperties"]
    assert run_files["properties"]["family"]["enum"] == list(FAMILIES)
    # `pqb` is the adapter's source (PQBPersonalRetriever), not a ttp.source choice.
    assert set(_at(schema, "ttp.source")["enum"]) == set(EXAMPLE_SOURCES.names()) - {"pqb"}


def test_ttp_params_from_config():
    from personalir.ttp.methods.base import PERSONAL_RETRIEVERS

    ttp = fill_defaults({}, load_schema())["ttp"]
    # Only the keys each method reads (what the rule's --params hands over).
    expected = {
        "p_prf": dict(ttp["p_prf"]),
        "history_aware": {"max_length": ttp["dense"]["max_length"]},
        "hyde": {k: ttp["hyde"][k] for k in ("max_new_tokens", "batch_size")},
        "ttp": {
            "max_new_tokens": ttp["inference"]["max_new_tokens"],
            "batch_size": ttp["inference"]["batch_size"],
            **{
                k: ttp["sft"][k]
                for k in (
                    "max_query_tokens",
                    "max_item_tokens",
                    "history_item_tokens",
                    "system_prompt",
                )
            },
        },
    }
    # The cached serving method reads its teacher's (ttp_rl's) parameters.
    expected["ttp_cached"] = {"teacher": "ttp_rl", "teacher_params": expected["ttp"]}
    for name, cls in PERSONAL_RETRIEVERS.entries():
        params = cls.params_from_config(ttp)
        # Every TTP variant (RL adapters, w/o Intent-Q) reads what the TTP method reads.
        key = (
            "ttp"
            if (name.startswith("ttp") and name != "ttp_cached") or name == "llm_embedding"
            else name
        )
        assert params == expected.get(key, {}), name
        assert set(params) <= set(cls.default_params), name


# ------------------------------------------------------------ the worked examples, for real
def _doc_blocks() -> tuple[dict[str, str], list[str]]:
    """``# file:`` Python blocks (path -> source) and the diff blocks of docs/extending.md."""
    text = EXTENDING.read_text(encoding="utf-8")
    files = {
        m.group(1): m.group(0).split("\n", 1)[1]
        for m in re.finditer(r"# file: (\S+)\n.*?(?=```)", text, re.S)
    }
    diffs = re.findall(r"```diff\n(.*?)```", text, re.S)
    return files, diffs


def _hunks(diff: str) -> list[tuple[str, list[str]]]:
    """``(section, body lines)`` of each ``@@ section`` hunk of a unified config diff."""
    hunks: list[tuple[str, list[str]]] = []
    for ln in diff.splitlines():
        if ln.startswith(("---", "+++")):
            continue
        if ln.startswith("@@"):
            hunks.append((re.match(r"@@ (\S+)", ln).group(1), []))
        elif hunks:
            hunks[-1][1].append(ln)
    return hunks


def _changed_lines(diff: str) -> int:
    """The config lines a diff adds or changes (a ``-``/``+`` pair counts once)."""
    body = [ln for _, lines in _hunks(diff) for ln in lines]
    return sum(ln.startswith("+") for ln in body)


def _apply_config_diff(diff: str, text: str) -> str:
    """Apply each hunk inside its section: its context and removed lines must appear in that
    order after the section's line; they are replaced by its context and added lines."""
    config = text.splitlines()
    for section, body in _hunks(diff):
        old = [ln[1:] for ln in body if not ln.startswith("+")]
        new = [ln[1:] for ln in body if not ln.startswith("-")]
        start = config.index(section)
        at = next((k for k in range(start, len(config)) if config[k : k + len(old)] == old), None)
        assert at is not None, f"the diff's context does not match {CONFIG.name}: {old}"
        config[at : at + len(old)] = new
    return "\n".join(config) + "\n"


@contextlib.contextmanager
def installed(doc_path: str, registry: Registry, tmp_path: Path):
    """The docs' module written into a temporary folder of its package's path, discovered."""
    files, _ = _doc_blocks()
    source = files[doc_path]
    package_name = ".".join(Path(doc_path).parent.parts[1:])
    module_name = f"{package_name}.{Path(doc_path).stem}"
    package = importlib.import_module(package_name)
    folder = tmp_path / package_name.replace(".", "_")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / Path(doc_path).name).write_text(source, encoding="utf-8")
    before = set(registry.names())
    original_path = list(package.__path__)
    package.__path__ = [*original_path, str(folder)]
    importlib.invalidate_caches()
    try:
        registry.discover()
        assert module_name in sys.modules, f"{module_name} was not discovered"
        yield set(registry.names()) - before
    finally:
        for name in set(registry.names()) - before:
            registry.unregister(name)
        sys.modules.pop(module_name, None)
        registry._scanned.discard(module_name)
        package.__path__ = original_path


def _config_with(diff_index: int) -> tuple[dict, str]:
    _, diffs = _doc_blocks()
    text = _apply_config_diff(diffs[diff_index], CONFIG.read_text(encoding="utf-8"))
    return yaml.safe_load(text), text


def _validated(raw: dict, text: str) -> dict:
    return validate_config(copy.deepcopy(raw), load_schema(), source="config.yaml", text=text)


# The worked examples in the page's order: their module and the config lines they change,
# the places the page's cost table states (one module plus these lines).
EXAMPLES = {
    "src/personalir/errors/words_only_sampler.py": 1,
    "src/personalir/retrieval/harm_metric.py": 1,
    "src/personalir/retrieval/title_overlap.py": 2,
    "src/personalir/ttp/methods/bm25_history.py": 1,
    "src/personalir/ttp/methods/dense_recent.py": 1,
}


def test_docs_examples_are_one_file_and_their_stated_config_lines():
    files, diffs = _doc_blocks()
    assert list(files) == list(EXAMPLES)
    assert [_changed_lines(d) for d in diffs] == list(EXAMPLES.values())


def test_the_config_diff_applies_changed_and_added_lines_in_their_section():
    text = "a:\n  x: 1\n  y: [1,\n    2]\nb:\n  x: 1\n"
    diff = "@@ b:\n   x: 1\n+  z: 3\n@@ a:\n-  y: [1,\n+  y: [0, 1,\n     2]\n"
    assert _apply_config_diff(diff, text) == "a:\n  x: 1\n  y: [0, 1,\n    2]\nb:\n  x: 1\n  z: 3\n"
    assert _changed_lines(diff) == 2


def test_worked_example_error_sampler(tmp_path):
    from personalir.errors.inject import Injector
    from personalir.errors.sampling import SAMPLERS, evaluate_sampling, sampler_order
    from personalir.errors.tables import sampling_frame, sampling_latex
    from tests.unit.test_errors_sampling import TEXTS, _world

    raw, text = _config_with(0)
    with pytest.raises(ConfigError, match="personalised_words"):
        _validated(raw, text)  # the config line alone is refused
    with installed("src/personalir/errors/words_only_sampler.py", SAMPLERS, tmp_path) as added:
        assert added == {"personalised_words"}
        cfg = _validated(raw, text)
        samplers = cfg["errors"]["sampling_eval"]["samplers"]
        assert samplers[-1] == "personalised_words"
        assert sampler_order()[-2:] == ["personalised_words", "personalised"]
        ps = _world()
        table, _, info = evaluate_sampling(
            ps,
            ps,
            TEXTS,
            Injector(),
            samplers=samplers,
            texts_per_user=4,
            n_edits=1,
            n_candidates=None,
            seed=1,
            domain="D",
        )
        t = table.set_index("sampler")
        assert np.isfinite(t.loc["personalised_words", "mrr"])
        assert t.loc["personalised_words", "edits"] > 0
        # The user's mechanisms are not used: the personalised sampler attributes better.
        assert t.loc["personalised", "mrr"] > t.loc["personalised_words", "mrr"]
        frame = sampling_frame([table])
        rows = list(frame.loc[frame["domain"] == "D", "sampler"])
        assert rows[-2:] == ["personalised_words", "personalised"]
        tex = sampling_latex(frame, label="t", info={**info, "attribution": "same"})
        assert "Personalised words only" in tex
    assert "personalised_words" not in SAMPLERS


def test_worked_example_pqb_metric(tmp_path):
    from personalir.retrieval.metrics import METRICS, MetricSettings, metric_header, metric_value
    from personalir.retrieval.tables import table_specs

    raw, text = _config_with(1)
    with pytest.raises(ConfigError, match="Harm"):
        _validated(raw, text)
    with installed("src/personalir/retrieval/harm_metric.py", METRICS, tmp_path) as added:
        assert added == {"Harm"}
        cfg = _validated(raw, text)
        settings = MetricSettings.from_config(cfg["retrieval"]["metrics"])
        assert settings.pqb_metrics("degradation") == [
            "Deg@1",
            "Deg@5",
            "Deg@10",
            "Deg@20",
            "MRRdeg@200",
            "Harm@1",
            "Harm@5",
            "Harm@10",
            "Harm@20",
        ]
        assert table_specs(settings)["degradation"]["metrics"][-1] == "Harm@20"
        assert settings.pqb_metrics("flip_rrstd") == MetricSettings().pqb_metrics("flip_rrstd")
        assert metric_header("Harm@5") == "Harm@5"
        # Product A: pair 1 hits clean and misses with the error (harm), pair 2 hits both;
        # product B: pair 3 misses clean (no harm). Harm@1 = (1 + 0 + 0) / 3 pairs.
        frame = pd.DataFrame(
            {
                "product": ["A", "A", "A", "A", "B", "B"],
                "pair_id": ["p1", "p1", "p2", "p2", "p3", "p3"],
                "kind": ["writing_error"] * 6,
                "role": ["clean", "error"] * 3,
                "hit@1": [1, 0, 1, 1, 0, 1],
                "rr": [1.0, 0.2, 1.0, 1.0, 0.5, 1.0],
            }
        )
        assert metric_value(frame, "Harm@1") == pytest.approx(1 / 3)
        assert metric_value(frame, "Deg@1") == pytest.approx((1 + 0 - 1) / 3)
    assert "Harm" not in METRICS


def test_worked_example_ttp_method(tmp_path):
    from personalir.ttp.methods.base import PERSONAL_RETRIEVERS, RetrievalContext, build_retriever
    from personalir.workflow import ttp as workflow
    from tests.unit.test_ttp_baselines import _corpus, _examples

    raw, text = _config_with(3)
    with pytest.raises(ConfigError, match="bm25_history"):
        _validated(raw, text)
    with installed(
        "src/personalir/ttp/methods/bm25_history.py", PERSONAL_RETRIEVERS, tmp_path
    ) as added:
        assert added == {"bm25_history"}
        cfg = _validated(raw, text)
        assert cfg["ttp"]["methods"][-1] == "bm25_history"
        assert workflow.run_inputs(cfg, "bm25_history", "Musical_Instruments") == {}
        assert workflow.run_models(cfg, "bm25_history") == {}
        assert workflow.run_threads(cfg, "bm25_history") == 1
        assert workflow.run_params(cfg, "bm25_history") == workflow.run_params(cfg, "bm25")
        assert any(":bm25_history:" in spec for spec in workflow.run_specs(cfg))
        ctx = RetrievalContext(corpus=_corpus(), item_fields=("title",), depth=3)
        ranking = build_retriever("bm25_history", ctx).rank(_examples())
        query_only = build_retriever("bm25", ctx).rank(_examples())
        # q2 "Bolt drum sticks" with history "Bolt guitar capo, red": the query alone ranks
        # P5 (Bolt maple drum sticks) first; query + history shares four terms with P2.
        assert query_only["q2"][0][0] == "P5" and ranking["q2"][0][0] == "P2"
        assert len(ranking["q1"]) == 3
    assert "bm25_history" not in PERSONAL_RETRIEVERS


def test_worked_example_pqb_retriever_type(tmp_path):
    from personalir.retrieval.base import RETRIEVERS, QueryText, RunSettings
    from personalir.retrieval.corpus import corpus_from_texts
    from personalir.workflow.support import retrieval_names

    raw, text = _config_with(2)
    with pytest.raises(ValueError, match="title_overlap"):  # the config lines alone: refused
        retrieval_names(_validated(raw, text)["retrieval"])
    with installed("src/personalir/retrieval/title_overlap.py", RETRIEVERS, tmp_path) as added:
        assert added == {"title_overlap"}
        cfg = _validated(raw, text)
        retrieval = cfg["retrieval"]
        assert "title_overlap" in retrieval["use"]
        assert "title_overlap" in retrieval_names(retrieval)[0]
        spec = retrieval["retrievers"]["title_overlap"]
        r = RETRIEVERS.get(spec["type"])(settings=RunSettings(), params=spec["params"])
        r.index(corpus_from_texts(["P1", "P2", "P3"], ["red guitar capo", "drum sticks", "a b"]))
        ranking = r.rank([QueryText("q", "guitar capo for a red guitar")], 3)
        # Dice with words of >= 3 characters: P1 {red, guitar, capo} vs the query's
        # {guitar, capo, for, red}: 2 * 3 / 7; P2 and P3 share nothing.
        assert ranking["q"][0][0] == "P1"
        assert ranking["q"][0][1] == pytest.approx(6 / 7)
    assert "title_overlap" not in RETRIEVERS


def test_worked_example_ttp_method_with_a_trained_model(tmp_path, monkeypatch):
    from personalir.ttp.inputs.data import write_examples
    from personalir.ttp.methods.base import PERSONAL_RETRIEVERS
    from personalir.ttp.training import dense_ft
    from personalir.workflow import ttp as workflow
    from tests.unit.test_ttp_baselines import _corpus, _examples

    raw, text = _config_with(4)
    with pytest.raises(ConfigError, match="dense_recent"):
        _validated(raw, text)
    with installed(
        "src/personalir/ttp/methods/dense_recent.py", PERSONAL_RETRIEVERS, tmp_path
    ) as added:
        assert added == {"dense_recent"}
        cfg = {**_validated(raw, text), "results_dir": "res"}
        # ttp_dense_ft trains it (the rule's wildcard), into the folder its class names
        assert "dense_recent" in workflow.trained_by("ttp_dense_ft")
        assert workflow.run_models(cfg, "dense_recent") == {
            "dense_recent": "res/ttp/dense/dense_recent"
        }
        assert workflow.run_inputs(cfg, "dense_recent", "Musical_Instruments") == {
            "dense_recent": "res/ttp/dense/dense_recent/config.json",
            "dense_recent_weights": "res/ttp/dense/dense_recent/model.safetensors",
        }
        # the training text is the class's: the query and the two latest history titles
        seen = {}

        def fake_fine_tune(model, queries, items, ids, settings, out, **kw):
            seen["queries"] = list(queries)
            return {"variant": kw["variant"]}

        monkeypatch.setattr(dense_ft, "fine_tune", fake_fine_tune)
        examples = [dataclasses.replace(ex, split="train") for ex in _examples()]
        write_examples(tmp_path / "examples.jsonl", examples)
        _corpus().write(tmp_path / "items.parquet")
        cls = PERSONAL_RETRIEVERS.get("dense_recent")
        dense_ft.fine_tune_dense(
            variant="dense_recent",
            query_text=cls.query_text,
            uses_history=cls.uses_history,
            examples_paths=[tmp_path / "examples.jsonl"],
            items_paths=[tmp_path / "items.parquet"],
            ttp={**cfg["ttp"], "items": {"fields": ["title"], "max_features": 0}},
            seed=1,
            out_dir=tmp_path / "m",
            report_out=tmp_path / "r.json",
            threads=1,
            log=lambda *_: None,
        )
        # q1's history: the Kestrel strap; q2's: the Bolt capo (tests/unit/test_ttp_baselines)
        assert seen["queries"] == [
            "guitar capo | title: Kestrel leather guitar strap",
            "Bolt drum sticks | title: Bolt guitar capo, red",
        ]
    assert "dense_recent" not in PERSONAL_RETRIEVERS
