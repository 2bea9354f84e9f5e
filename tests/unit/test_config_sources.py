"""Config errors name the file and line that set the value, whatever the number of overlays;
path-like values hold only safe characters; the results root is a plain folder."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from personalir.common.config import ConfigError, deep_merge, load_schema, validate_config
from personalir.common.config_paths import config_files_by_precedence, path_value_problem


def _layered(tmp_path: Path, texts: list[str], command_line: dict | None = None) -> str:
    """The error of a config laid together as ``snakemake --configfile a b c [--config ...]``
    lays it (a later file over an earlier one, ``--config`` over all), located through the
    order the Snakefile hands ``validate_config``."""
    names = []
    merged: dict = {}
    for i, text in enumerate(texts):
        path = tmp_path / f"overlay{i}.yaml"
        path.write_text(text)
        names.append(str(path))
        merged = deep_merge(merged, yaml.safe_load(text) or {})
    if command_line:
        merged = deep_merge(merged, command_line)
    # workflow.configfiles: the command-line files, then the configfile directive's file.
    directive = tmp_path / "directive.yaml"
    directive.write_text("seed: 5\nthreads: 2\n")
    loaded = [*names, str(directive)]
    merged = deep_merge(yaml.safe_load(directive.read_text()), merged)
    order = config_files_by_precedence(loaded, names)
    sources = [(name, Path(name).read_text()) for name in order]
    with pytest.raises(ConfigError) as err:
        validate_config(merged, load_schema(), sources=sources, command_line=command_line)
    return str(err.value).replace(str(tmp_path) + "/", "")


def test_precedence_is_the_last_command_line_file_first():
    loaded = ["config/config.yaml", "config/tiny.yaml", "y.yaml", "config/config.yaml"]
    cli = loaded[:3]
    assert config_files_by_precedence(loaded, cli) == [
        "y.yaml",
        "config/tiny.yaml",
        "config/config.yaml",
        "config/config.yaml",
    ]
    assert config_files_by_precedence(["config/config.yaml"], []) == ["config/config.yaml"]


def test_three_overlays_name_the_last_file_that_sets_the_value(tmp_path):
    """The reproduction: the third overlay sets ``threads: -1`` and the first ``threads: 2``;
    the error used to name the first file's line, which holds a valid value."""
    msg = _layered(tmp_path, ["seed: 1\nthreads: 2\n", "label: t\n", "seed: 3\nthreads: -1\n"])
    assert "overlay2.yaml:2: config key 'threads': -1 is less than the minimum of 1" in msg
    assert "overlay0.yaml" not in msg and "directive.yaml" not in msg


def test_a_middle_overlay_is_named_when_the_later_ones_leave_the_key_alone(tmp_path):
    msg = _layered(
        tmp_path,
        [
            "data:\n  sentences:\n    min_per_user: 5\n",
            "seed: 1\ndata:\n  sentences:\n    max_per_user: 3\n",
            "label: t\ndata:\n  ingest:\n    policy: strict\n",
        ],
    )
    # min_per_user (5) is set by the first file only; max_per_user (3) by the second.
    assert "overlay0.yaml:3: config key 'data.sentences.min_per_user': 5 must be at most" in msg


def test_a_nested_value_is_named_at_the_overlay_that_wins(tmp_path):
    msg = _layered(
        tmp_path,
        [
            "data:\n  ingest:\n    policy: strict\n",
            "data:\n  ingest:\n    policy: quarantine\n",
            "seed: 1\n\ndata:\n  ingest:\n    policy: lenient\n",
        ],
    )
    assert "overlay2.yaml:5: config key 'data.ingest.policy'" in msg


def test_a_value_set_on_the_command_line_names_it(tmp_path):
    msg = _layered(
        tmp_path, ["threads: 2\n", "label: t\n", "threads: 3\n"], command_line={"threads": -1}
    )
    assert "--config: config key 'threads': -1 is less than the minimum of 1" in msg


# ---------------------------------------------------------------------------------------------
# Path-like values


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('results_dir: "res$(touch pwned)"\n', "results_dir"),
        ('results_dir: "res dir"\n', "results_dir"),
        ('results_dir: "res;touch x"\n', "results_dir"),
        ('results_dir: "it\'s"\n', "results_dir"),
        ('results_dir: "res/{domain}"\n', "results_dir"),  # no placeholder in the root
        ('data:\n  local_dir: "my data"\n', "data.local_dir"),
        ('data:\n  local_dir: "`id`"\n', "data.local_dir"),
        ('data:\n  local:\n    reviews: "raw/{domain} 2.jsonl"\n', "data.local.reviews"),
        ('data:\n  local:\n    meta: "raw/*.jsonl"\n', "data.local.meta"),
        (
            "retrieval:\n  run_files:\n    mine:\n      path: 'runs/{domain}|x.run'\n",
            "retrieval.run_files.mine.path",
        ),
        (
            "ttp:\n  public:\n    sets:\n      Amazon:\n        format: personalwab\n"
            "        dir: 'a&b'\n",
            "ttp.public.sets.Amazon.dir",
        ),
        ("paper:\n  expected: 'config/expected/$HOME.yaml'\n", "paper.expected"),
    ],
)
def test_unsafe_path_values_are_refused_at_their_line(tmp_path, text, key):
    path = tmp_path / "c.yaml"
    path.write_text("seed: 1\n" + text)
    with pytest.raises(ConfigError) as err:
        validate_config(yaml.safe_load(path.read_text()), sources=[(str(path), path.read_text())])
    msg = str(err.value)
    leaf = key.rsplit(".", 1)[-1] + ":"
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if leaf in t)
    assert f"{path}:{line}: config key '{key}': " in msg
    assert "which a path here may not hold" in msg


@pytest.mark.parametrize(
    ("value", "placeholder"),
    [
        ("results-tiny", False),
        ("/data/amazon_2023/raw", False),
        ("raw/{domain}.jsonl.gz", True),
        ("runs/v1.2/{domain}+bm25@k,100.run", True),
    ],
)
def test_plain_path_values_pass(value, placeholder):
    assert path_value_problem(value, placeholder=placeholder) is None


def test_a_leading_dash_is_refused():
    assert "option" in path_value_problem("-rf")


def test_paths_accepted_where_the_schema_allows_them():
    cfg = validate_config(
        {
            "data": {"local": {"reviews": "raw/{domain}.jsonl", "meta": None}},
            "retrieval": {"run_files": {"mine": {"path": "runs/{domain}.run"}}},
        }
    )
    assert cfg["data"]["local"]["reviews"] == "raw/{domain}.jsonl"


# ---------------------------------------------------------------------------------------------
# The results root


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("README.md", "'README.md' is an existing file, not a folder"),
        ("README.md/out", "'README.md/out': 'README.md' is an existing file"),
        (".snakemake", "names a hidden folder ('.snakemake')"),
        (".venv/results", "names a hidden folder ('.venv')"),
        ("results/.cache", "names a hidden folder ('.cache')"),
    ],
)
def test_results_dir_naming_a_file_or_a_tool_folder_is_refused(tmp_path, monkeypatch, value, why):
    """``results_dir: README.md`` used to end in a NotADirectoryError traceback."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("# a file\n")
    path = tmp_path / "c.yaml"
    path.write_text(f"seed: 1\nresults_dir: {value}\n")
    with pytest.raises(ConfigError) as err:
        validate_config(yaml.safe_load(path.read_text()), sources=[(str(path), path.read_text())])
    assert f"{path}:2: config key 'results_dir': " in str(err.value)
    assert why in str(err.value)


def test_an_existing_results_folder_is_fine(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results-x" / "data").mkdir(parents=True)
    assert validate_config({"results_dir": "results-x"})["results_dir"] == "results-x"
