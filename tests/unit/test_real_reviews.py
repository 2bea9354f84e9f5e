"""Real reviews without a catalogue: the shipped config, the start-of-run checks, the refusal
of an empty catalogue and of product-title error sampling, on a tiny file in the Amazon
Reviews 2023 review schema written here (no product metadata)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from personalir.common.config import REPO_ROOT, ConfigError, load_config, validate_config
from personalir.data.ingest import ingest_meta, ingest_reviews, require_records
from personalir.data.ingest_schema import IngestError
from personalir.data.sentences import SentenceRules, build_user_sentences
from personalir.errors.sampling import clean_texts
from personalir.workflow import support as ws
from tests.fixtures.real_reviews import write_reviews

DOMAIN = "Musical_Instruments"


def real_config(reviews=None, meta=None, **sections):
    overrides = {"data": {"local": {"reviews": reviews and str(reviews), "meta": meta}}}
    overrides.update(sections)
    return load_config(REPO_ROOT / "config" / "real_reviews.yaml", overrides=overrides)


def layered(overlay: dict) -> dict:
    """config/config.yaml with ``overlay`` on top (as --configfile/--config layer them)."""
    import yaml

    from personalir.common.config import deep_merge

    base = yaml.safe_load((REPO_ROOT / "config" / "config.yaml").read_text(encoding="utf-8"))
    return validate_config(deep_merge(base, overlay))


def test_shipped_real_config_runs_the_text_stages_without_a_catalogue(tmp_path):
    reviews = write_reviews(tmp_path / "reviews.jsonl")
    cfg = real_config(reviews)
    assert cfg["data"]["source"] == "local" and cfg["domains"] == [DOMAIN]
    assert cfg["results_dir"] != "results"
    assert ws.config_conflicts(cfg) == []
    assert ws.raw_file(cfg, DOMAIN, "reviews") == str(reviews)
    assert not ws.has_catalogue(cfg, DOMAIN)


def test_stages_that_need_a_catalogue_are_named_at_start(tmp_path):
    reviews = write_reviews(tmp_path / "reviews.jsonl")
    cfg = layered({"data": {"source": "local", "local": {"reviews": str(reviews)}}})
    (message,) = ws.config_conflicts(cfg)
    assert "no product catalogue (meta file) for Baby_Products, Musical_Instruments" in message
    assert "data.local.meta" in message
    for fix in (
        "queries.enabled: false",
        "retrieval.enabled: false",
        "ttp.enabled: false",
        "paper.build_pdf: false",
        "errors.sampling_eval.text_source: corrected_sentences",
    ):
        assert fix in message


def test_one_stage_left_on_is_the_only_one_named(tmp_path):
    reviews = write_reviews(tmp_path / "reviews.jsonl")
    (message,) = ws.config_conflicts(real_config(reviews, retrieval={"enabled": True}))
    assert "retrieval.enabled: false" in message
    assert "queries.enabled" not in message and "text_source" not in message


def test_a_target_that_needs_the_catalogue_names_the_missing_file(tmp_path):
    cfg = real_config(write_reviews(tmp_path / "reviews.jsonl"))
    with pytest.raises(ws.MissingInput, match=r"no product catalogue.*data\.local\.meta"):
        ws.raw_file(cfg, DOMAIN, "meta")
    missing = real_config(write_reviews(tmp_path / "r.jsonl"), meta=str(tmp_path / "gone.jsonl"))
    with pytest.raises(ws.MissingInput, match="gone.jsonl, which does not exist"):
        ws.raw_file(missing, DOMAIN, "meta")


def test_catalogue_targets_do_not_demand_a_review_file(tmp_path):
    (tmp_path / f"meta_{DOMAIN}.jsonl").write_text("{}\n", encoding="utf-8")
    cfg = layered({"data": {"source": "local", "local_dir": str(tmp_path)}})
    assert ws.raw_file(cfg, DOMAIN, "meta") == str(tmp_path / f"meta_{DOMAIN}.jsonl")
    with pytest.raises(ws.MissingInput, match=f"no review file for {DOMAIN}"):
        ws.raw_file(cfg, DOMAIN, "reviews")


def test_domain_placeholder_in_a_local_path(tmp_path):
    reviews = write_reviews(tmp_path / f"{DOMAIN}.reviews.jsonl")
    cfg = real_config(str(tmp_path / "{domain}.reviews.jsonl"))
    assert ws.raw_file(cfg, DOMAIN, "reviews") == str(reviews)


def test_empty_catalogue_is_refused_naming_the_file(tmp_path):
    meta = tmp_path / f"meta_{DOMAIN}.jsonl"
    meta.write_text("", encoding="utf-8")
    report = ingest_meta(meta, tmp_path / "meta.parquet")
    with pytest.raises(ValueError, match="0 products") as err:
        require_records(report, meta)
    assert str(meta) in str(err.value)
    assert "0 line(s) read, 0 quarantined (the file is empty)" in str(err.value)


def test_catalogue_of_bad_lines_is_refused_naming_the_reasons(tmp_path):
    meta = tmp_path / f"meta_{DOMAIN}.jsonl"
    meta.write_text("not json\n\n", encoding="utf-8")
    with pytest.raises(IngestError, match=r"quarantine_rate: 2 of 2 lines \(100\.0%\)") as err:
        ingest_meta(meta, tmp_path / "meta.parquet")
    assert "invalid_json: 1, blank_line: 1" in str(err.value)


def test_a_catalogue_with_products_passes(tmp_path):
    meta = tmp_path / "meta.jsonl"
    meta.write_text(json.dumps({"parent_asin": "B000000001", "title": "Strap"}) + "\n")
    require_records(ingest_meta(meta, tmp_path / "meta.parquet"), meta)


def test_product_title_sampling_without_a_catalogue_names_the_alternative():
    with pytest.raises(ValueError, match="text_source: corrected_sentences"):
        clean_texts("product_titles", products=None)


def test_nested_command_line_values_are_named_as_such():
    with pytest.raises(ConfigError, match=r"--config: config key 'queries\.enabled'.*configfile"):
        validate_config(
            {"queries": {"enabled": "true"}}, command_line={"queries": {"enabled": "true"}}
        )


def test_real_schema_reviews_reach_user_sentences(tmp_path):
    reviews = write_reviews(tmp_path / "reviews.jsonl")
    report = ingest_reviews(reviews, tmp_path / "reviews.parquet")
    assert report["records_written"] == 12 and report["records_quarantined"] == 0
    rules = SentenceRules.from_config({"min_per_user": 10, "max_per_user": 50, "min_words": 3})
    out = build_user_sentences(pq.read_table(tmp_path / "reviews.parquet"), rules)
    assert out["report"]["users_selected"] == 3
    assert out["report"]["sentences_too_short"] == 0
