"""Helpers the rule modules use: retriever names, first stages, query sources, resources."""

from types import SimpleNamespace

import pytest

from personalir.workflow import support as ws


def _retrieval(use, retrievers, run_files=None):
    return {
        "use": use,
        "retrievers": retrievers,
        "run_files": run_files or {},
        "resources": {"mem_mb": 4000, "runtime": 30, "gpu": 0},
        "queries": {"source": "benchmark", "released_path": None},
    }


def test_names_add_first_stages_once_and_separate_run_files():
    r = _retrieval(
        ["rerank", "mine"],
        {"bm25": {}, "rerank": {"params": {"first_stage": "bm25"}, "mem_mb": 9000}},
        {"mine": {"path": "x/{domain}.run"}},
    )
    assert ws.retrieval_names(r) == (["rerank", "bm25"], ["mine"])
    assert ws.retrieval_first_stage(r, "rerank") == "bm25"
    assert ws.retrieval_first_stage(r, "bm25") is None
    assert ws.retrieval_resource(r, "rerank", "mem_mb") == 9000
    assert ws.retrieval_resource(r, "bm25", "mem_mb") == 4000


@pytest.mark.parametrize(
    ("use", "retrievers", "run_files", "message"),
    [
        (["x"], {}, {}, "in neither"),
        (["x"], {"x": {}}, {"x": {}}, "both a retriever and a run file"),
        (["r"], {"r": {"params": {"first_stage": "gone"}}}, {}, "first stage 'gone'"),
    ],
)
def test_names_reject_bad_config(use, retrievers, run_files, message):
    with pytest.raises(ValueError, match=message):
        ws.retrieval_names(_retrieval(use, retrievers, run_files))


def test_name_pattern_matches_only_the_names():
    import re

    pat = ws.name_pattern(["a.b", "c"])
    assert re.fullmatch(pat, "a.b") and re.fullmatch(pat, "c")
    assert not re.fullmatch(pat, "axb")
    assert not re.fullmatch(ws.name_pattern([]), "")


def test_query_source():
    cfg = {"results_dir": "results", "retrieval": _retrieval([], {})}
    w = SimpleNamespace(domain="Video_Games")
    assert ws.retrieval_query_source(cfg, w) == "results/queries/Video_Games/benchmark.jsonl"
    cfg["retrieval"]["queries"] = {"source": "released", "released_path": "pqb/{domain}.json"}
    assert ws.retrieval_query_source(cfg, w) == "pqb/Video_Games.json"
    cfg["retrieval"]["queries"]["released_path"] = None
    with pytest.raises(ValueError, match="released_path is null"):
        ws.retrieval_query_source(cfg, w)


def test_params_json_is_the_one_rule_parameter_format():
    cfg = {"q": {"b": 2, "a": [1], "c": {"z": None, "y": 1.5}}}
    assert ws.params_json(cfg, "q", keys=("b", "a")) == '{"a":[1],"b":2}'
    assert ws.params_json(cfg, "q", "c") == '{"y":1.5,"z":null}'
    assert ws.params_json(cfg) == ws.compact_json(cfg)
    assert ws.compact_json({"b": 1, "a": "x"}) == '{"a":"x","b":1}'
    with pytest.raises(KeyError):
        ws.params_json(cfg, "q", keys=("missing",))


def test_params_json_omits_nested_keys_without_touching_the_config():
    cfg = {"errors": {"a": 1, "eval": {"n": 2, "bootstrap": {"samples": 9}}, "other": 3}}
    got = ws.params_json(cfg, "errors", keys=("a", "eval"), omit=("eval.bootstrap",))
    assert got == '{"a":1,"eval":{"n":2}}'
    assert cfg["errors"]["eval"]["bootstrap"] == {"samples": 9}
    with pytest.raises(KeyError, match="no key 'gone'"):
        ws.params_json(cfg, "errors", omit=("eval.gone",))
