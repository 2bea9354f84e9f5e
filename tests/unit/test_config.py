"""Config schema: every key documented, defaults valid, wrong keys/types named."""

import json
from pathlib import Path

import pytest
import yaml

from personalir.common.config import (
    REPO_ROOT,
    ConfigError,
    fill_defaults,
    load_config,
    load_schema,
    validate_config,
)


def _leaves(schema, path=()):
    for key, sub in schema.get("properties", {}).items():
        yield path + (key,), sub
        if sub.get("type") == "object":
            yield from _leaves(sub, path + (key,))


def test_every_key_has_description_type_default():
    schema = load_schema()
    missing = [
        ".".join(p) + f" lacks {field}"
        for p, sub in _leaves(schema)
        for field in ("description", "type", "default")
        if field not in sub
    ]
    assert not missing, missing


def test_every_object_rejects_unknown_keys():
    schema = load_schema()
    open_objects = [
        ".".join(p)
        for p, sub in _leaves(schema)
        if sub.get("type") == "object"
        and sub.get("additionalProperties") is not False
        and "properties" in sub
    ]
    assert not open_objects


def test_defaults_alone_validate():
    cfg = validate_config({})
    assert cfg["data"]["source"] == "sample"
    assert cfg["data"]["sentences"]["max_per_user"] == 50


@pytest.mark.parametrize("name", ["config.yaml", "paper.yaml"])
def test_shipped_configs_validate(name):
    cfg = load_config(REPO_ROOT / "config" / name)
    assert set(cfg["domains"]) <= {"Baby_Products", "Musical_Instruments", "Video_Games"}


def test_paper_config_names_the_papers_domains():
    cfg = load_config(REPO_ROOT / "config" / "paper.yaml")
    assert cfg["domains"] == ["Baby_Products", "Musical_Instruments", "Video_Games"]
    assert cfg["data"]["source"] in {"download", "local"}


def test_unknown_key_is_named_with_its_line(tmp_path: Path):
    path = tmp_path / "c.yaml"
    path.write_text("seed: 1\ndata:\n  ingest:\n    polcy: strict\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    msg = str(err.value)
    assert "data.ingest.polcy" in msg
    assert f"{path}:4:" in msg
    assert "policy" in msg  # the allowed keys are listed


def test_wrong_type_is_named(tmp_path: Path):
    path = tmp_path / "c.yaml"
    path.write_text("sample:\n  n_users: many\n")
    with pytest.raises(ConfigError, match=r"c.yaml:2: config key 'sample.n_users': 'many' is not"):
        load_config(path)


def test_wrong_enum_value_is_named():
    with pytest.raises(ConfigError, match="data.ingest.policy"):
        validate_config({"data": {"ingest": {"policy": "lenient"}}})


def test_a_domain_of_ones_own_validates():
    assert validate_config({"domains": ["My_Split"]})["domains"] == ["My_Split"]
    assert validate_config({"domains": ["Books", "x1"]})["domains"] == ["Books", "x1"]


@pytest.mark.parametrize("name", ["../x", "1st", "_x", "a-b", "a b", "x" * 65, ""])
def test_unsafe_domain_name_rejected_with_what_is_allowed(tmp_path: Path, name):
    path = tmp_path / "c.yaml"
    path.write_text(f"seed: 1\ndomains: [Baby_Products, {json.dumps(name)}]\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    msg = str(err.value)
    assert f"{path}:2: config key 'domains.1': {name!r} is not allowed" in msg
    assert "a letter followed by up to 63 letters, digits or underscores" in msg


def test_model_cache_is_one_top_level_switch_for_every_stage():
    """The dequantised-GGUF cache is shared by queries, retrieval and TTP, so its switch is a
    top-level key; the former ``queries.lm.cache`` is an unknown key."""
    assert validate_config({})["model_cache"] is True
    assert validate_config({"model_cache": False})["model_cache"] is False
    with pytest.raises(ConfigError, match="cache"):
        validate_config({"queries": {"lm": {"cache": False}}})


def test_fill_defaults_keeps_given_values():
    schema = load_schema()
    cfg = fill_defaults({"sample": {"n_users": 7}}, schema)
    assert cfg["sample"]["n_users"] == 7
    assert cfg["sample"]["n_products"] == 300


def test_invalid_yaml_reported(tmp_path: Path):
    path = tmp_path / "c.yaml"
    path.write_text("seed: [1,\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(path)


def test_schema_files_are_yaml_objects():
    for path in sorted((REPO_ROOT / "config" / "schema").glob("*.schema.yaml")):
        assert yaml.safe_load(path.read_text())["type"] == "object", path


def test_search_log_settings_belong_to_the_sample_world():
    cfg = validate_config({"sample": {"search_log": {"searches_per_user": 3}}})
    assert cfg["sample"]["search_log"]["searches_per_user"] == 3
    assert cfg["sample"]["search_log"]["label_shares"]["Broad"] == 0.35  # defaults filled
    assert "search_log" not in validate_config({})["ttp"]
    with pytest.raises(ConfigError, match="ttp.search_log"):
        validate_config({"ttp": {"search_log": {"searches_per_user": 3}}})


# ---------------------------------------------------------------------------------------------
# Values the types allow but the workflow cannot use


def _error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    return str(err.value).replace(str(path), "c.yaml")


def test_duplicate_yaml_key_named_with_both_lines(tmp_path: Path):
    text = "seed: 1\ndata:\n  ingest:\n    policy: strict\n    policy: quarantine\n"
    msg = _error(tmp_path, text)
    assert "c.yaml:5: config key 'data.ingest.policy' is given twice (first at line 4)" in msg
    msg = _error(tmp_path, "seed: 1\nseed: 2\n")
    assert "c.yaml:2: config key 'seed' is given twice (first at line 1)" in msg


@pytest.mark.parametrize("text", ["threads: 7.0\n", "threads: 2.0e0\n", "threads: true\n"])
def test_integer_keys_refuse_floats_and_bools(tmp_path: Path, text):
    msg = _error(tmp_path, text)
    assert "c.yaml:1: config key 'threads':" in msg and "is not of type 'integer'" in msg


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ('""', "is empty"),
        ('"  "', "is empty"),
        ("/tmp/out", "is absolute"),
        ("~/out", "is absolute"),
        ("../elsewhere", "has a '..' part"),
        ("results/../../x", "has a '..' part"),
        (".", "repository root itself"),
        ("./", "repository root itself"),
        ("src", "own 'src/' folder"),
        ("./config/out", "own 'config/' folder"),
    ],
)
def test_unsafe_results_dir_refused(tmp_path: Path, value, why):
    msg = _error(tmp_path, f"seed: 1\nresults_dir: {value}\n")
    assert "c.yaml:2: config key 'results_dir':" in msg and why in msg


@pytest.mark.parametrize("value", ["results", "results-mine", "out/run1", "./results2"])
def test_plain_results_dirs_accepted(value):
    assert validate_config({"results_dir": value})["results_dir"] == value


def test_cross_key_contradictions_named_with_their_line(tmp_path: Path):
    msg = _error(tmp_path, "seed: 1\ndata:\n  sentences:\n    min_per_user: 80\n")
    assert (
        "c.yaml:4: config key 'data.sentences.min_per_user': 80 must be at most "
        "'data.sentences.max_per_user' (50)" in msg
    )
    msg = _error(tmp_path, "ttp:\n  split:\n    test_share: 0.7\n    validation_share: 0.3\n")
    assert "c.yaml:4: 'ttp.split.test_share' + 'ttp.split.validation_share' = 0.7 + 0.3" in msg
    msg = _error(tmp_path, "retrieval:\n  depth: 200\n  metrics:\n    deg_k: [1, 300]\n")
    assert "c.yaml:4: config key 'retrieval.metrics.deg_k': 300 (its largest value)" in msg
    msg = _error(tmp_path, "data:\n  ingest:\n    min_date: '2030-01-01'\n")
    assert "must be less than 'data.ingest.max_date' ('2030-01-01')" in msg


def test_cross_key_references_name_schema_keys():
    """Every x-at-most / x-less-than names a key the schema has; x-sum-less-than its own."""
    schema = load_schema()

    def has(dotted):
        node = schema
        for part in dotted.split("."):
            node = node.get("properties", {}).get(part)
            if node is None:
                return False
        return True

    refs, sums = [], []

    def walk(sub, path):
        if "x-sum-less-than" in sub:
            sums.append((path, sub["x-sum-less-than"]["keys"]))
        for key, prop in sub.get("properties", {}).items():
            for kw in ("x-at-most", "x-less-than"):
                if kw in prop:
                    refs.append(prop[kw])
            walk(prop, path + (key,))

    walk(schema, ())
    assert len(refs) >= 5 and all(has(r) for r in refs), refs
    assert sums and all(has(".".join(p + (k,))) for p, keys in sums for k in keys)
