"""docs/extending.md, "A new domain": its worked example, one data file plus one config line,
run for real (the generator as the `sample_world` rule runs it, then the data stage)."""

from __future__ import annotations

import json
import re
import runpy
import shutil
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from personalir.common.config import validate_config
from personalir.data.ingest import ingest_meta, ingest_reviews
from personalir.data.products import ProductRules, build_product_table
from personalir.data.sample_world import domains
from personalir.data.sentences import SentenceRules, build_user_sentences
from personalir.workflow.support import raw_file

REPO = Path(__file__).resolve().parents[2]
EXTENDING = REPO / "docs" / "extending.md"
CONFIG = REPO / "config" / "config.yaml"
SCRIPT = REPO / "workflow_scripts" / "sample_world.py"
DOMAIN = "Pet_Supplies"
SIZE = {"n_products": 40, "n_users": 8, "min_sentences_per_user": 10}


def _section() -> str:
    text = EXTENDING.read_text(encoding="utf-8")
    start = text.index("## A new domain")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def _yaml_blocks() -> tuple[dict[str, str], list[str]]:
    """The section's domain files (path -> text) and its config lines."""
    blocks = re.findall(r"```yaml\n(.*?)```", _section(), re.S)
    files = {
        m.group(1): block for block in blocks if (m := re.match(r"# domain file: (\S+)\n", block))
    }
    lines = [
        ln
        for block in blocks
        if block.startswith("# config line")
        for ln in block.splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    return files, lines


def test_the_example_is_one_data_file_and_one_config_line():
    files, lines = _yaml_blocks()
    assert list(files) == [f"src/personalir/data/sample_world/domains/{DOMAIN}.yaml"]
    assert len(lines) == 1 and lines[0].startswith("domains: ")
    assert "two places" in _section()


def _config_with_the_line() -> dict:
    _, (line,) = _yaml_blocks()
    text = CONFIG.read_text(encoding="utf-8")
    old = next(ln for ln in text.splitlines() if ln.startswith("domains:"))
    text = text.replace(old, line)
    return validate_config(yaml.safe_load(text), source=str(CONFIG), text=text)


@pytest.fixture
def shipped_with_the_example(tmp_path, monkeypatch):
    """A copy of the package's domains folder holding the example's file too, used as the
    package's (as if the file had been written to src/personalir/data/sample_world/domains/)."""
    files, _ = _yaml_blocks()
    folder = tmp_path / "domains"
    shutil.copytree(Path(str(domains.domain_folder())), folder)
    (path,) = files
    (folder / Path(path).name).write_text(files[path], encoding="utf-8")
    monkeypatch.setattr(domains, "domain_folder", lambda: folder)
    domains.load_domain.cache_clear()
    yield folder
    domains.load_domain.cache_clear()


def _run_rule(config: dict, out: Path, monkeypatch) -> dict[str, Path]:
    """workflow_scripts/sample_world.py with the arguments the `sample_world` rule gives it."""
    paths = {
        "reviews": out / f"{DOMAIN}.jsonl",
        "meta": out / f"meta_{DOMAIN}.jsonl",
        "truth": out / "planted_truth.json",
        "search-log": out / "search_log.jsonl",
        "search-log-report": out / "search_log.report.json",
    }
    params = {**config["sample"], **SIZE}
    argv = ["sample_world.py", "--domain", DOMAIN, "--seed", str(config["seed"])]
    argv += ["--params", json.dumps(params)]
    for key, path in paths.items():
        argv += [f"--{key}", str(path)]
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    runpy.run_path(str(SCRIPT), run_name="__main__")
    return paths


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_worked_example_domain(tmp_path, monkeypatch, shipped_with_the_example):
    config = _config_with_the_line()
    assert config["domains"][-1] == DOMAIN and config["data"]["source"] == "sample"
    # The workflow reads the domain's raw files from the sample world's folder.
    assert raw_file(config, DOMAIN, "meta").endswith(f"sample_world/{DOMAIN}/meta_{DOMAIN}.jsonl")
    spec = domains.load_domain(DOMAIN)
    assert [t.key for t in spec.types] == ["dog_leash", "cat_bed", "bag_holder", "pet_blanket"]

    paths = _run_rule(config, tmp_path / "sample_world", monkeypatch)
    meta, reviews = _jsonl(paths["meta"]), _jsonl(paths["reviews"])
    truth = json.loads(paths["truth"].read_text(encoding="utf-8"))
    assert len(meta) == SIZE["n_products"] and len(truth["users"]) == SIZE["n_users"]
    assert truth["domain"] == DOMAIN and truth["definitions"]["style_key"] == "Style"
    mains = Counter(m["main_category"] for m in meta)
    assert mains.most_common(1)[0][0] == "Pet Supplies"
    assert set(mains) <= {"Pet Supplies", "Amazon Home", "Sports & Outdoors"}
    assert all(m["details"]["Brand"] in spec.brands for m in meta)
    assert all(not m["categories"] or m["categories"][0] == "Pet Supplies" for m in meta)
    # 28 of the 40 products (family_share 0.7) are 4 families of 7: a founder, 4 variants, a
    # lookalike and an accessory.
    products = truth["products"]
    roles = Counter(p["family_role"] for p in products.values())
    assert roles == {"variant": 16, None: 12, "founder": 4, "lookalike": 4, "accessory": 4}
    fits = dict(spec.accessories)
    for p in products.values():
        if p["family_role"] == "accessory":
            founder_type = products[p["accessory_for"]]["product_type"]
            fitting = [a for a, types in fits.items() if founder_type in types]
            # An accessory fits its founder's type, or no accessory type does (then it is
            # of another accessory type).
            assert p["product_type"] in (fitting or set(fits) - {founder_type})
    drawn = {p["product_type"] for p in products.values()}
    assert drawn <= {t.key for t in spec.types} and len(drawn) >= 3
    # Every user writes their minimum of counted sentences, in the domain's words.
    for user in truth["users"].values():
        assert user["n_sentences"] >= SIZE["min_sentences_per_user"]
        assert user["recipient"] in spec.recipients
    searches = _jsonl(paths["search-log"])
    assert len(searches) == 2 * SIZE["n_users"]
    assert {s["target"] for s in searches} <= {m["parent_asin"] for m in meta}

    # The data stage takes the files as it takes the shipped domains' (strict: no record lost).
    data = config["data"]
    out = tmp_path / "data"
    review_report = ingest_reviews(paths["reviews"], out / "reviews.parquet", policy="strict")
    meta_report = ingest_meta(paths["meta"], out / "meta.parquet", policy="strict")
    assert review_report["records_written"] == len(reviews)
    assert meta_report["records_written"] == len(meta)
    table, _ = build_product_table(
        pq.read_table(out / "meta.parquet"), ProductRules.from_config(data["products"])
    )
    assert table.num_rows == len(meta)
    sentences = build_user_sentences(
        pq.read_table(out / "reviews.parquet"), SentenceRules.from_config(data["sentences"])
    )
    assert sentences["users"].num_rows == SIZE["n_users"]
