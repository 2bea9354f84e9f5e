"""Figure 3's rule-based classifier, each category on a hand-built case, its shares and the
rule's outputs on hand-built example, item and run files.

Golden categories follow the module's rules (personalir.ttp.paper.figure3) applied by hand; the
shares are counts over the hand-built list divided as the paper divides them (keep of all,
the rest of the rewritten cases).
"""

from __future__ import annotations

import json
import math

import pytest
import yaml

from personalir.ttp.inputs.data import Item, ItemCorpus
from personalir.ttp.paper.figure3 import (
    Figure3InputError,
    classify,
    make_figure3,
    share_rows,
)
from personalir.workflow.ttp import figure3_method

HISTORY = frozenset({"brightwater", "strumming", "white", "silverback", "sound", "studio"})


@pytest.mark.parametrize(
    ("query", "rewrite", "category"),
    [
        ("Guitar  picks", "guitar picks!", "keep"),
        ("ukulrle", "ukulele", "query_correction"),
        ("acoustic guvitar strings", "acoustic guitar strings", "query_correction"),
        ("guitar picks", "Brightwater guitar picks", "preference_extraction"),
        ("guitar picks", "guitar picks heavy gauge", "intent_disambiguation"),
        ("monitor headphones", "silverback sound headphones", "over_personalization"),
        ("studio monitor headphones", "headphones", "other"),  # only deletions
        ("studio monitor headphones", "monitor studio headphones", "other"),  # reordered
        ("monitor headphones", "closed back headphones", "other"),  # drops, nothing from history
    ],
)
def test_each_category_on_a_hand_built_case(query, rewrite, category):
    assert classify(query, rewrite, HISTORY).category == category


def test_malformed_or_empty_output_is_other_never_dropped():
    case = classify("guitar picks", "Brightwater guitar", HISTORY, well_formed=False)
    assert (case.category, case.reason) == ("other", "malformed generation")
    assert classify("guitar picks", "", HISTORY).category == "other"
    assert classify("guitar picks", None, HISTORY).category == "other"


def test_evidence_names_the_deciding_words():
    case = classify("ukulrle for kids", "Brightwater ukulele for kids tenor", HISTORY)
    assert case.corrected == (("ukulrle", "ukulele"),)
    assert case.added_from_history == ("brightwater",) and case.added_other == ("tenor",)
    # 1 of 2 added words from the history: a share of 0.5
    assert case.category == "preference_extraction"
    stricter = classify(
        "ukulrle for kids", "Brightwater ukulele for kids tenor", HISTORY, min_history_share=0.6
    )
    assert stricter.category == "intent_disambiguation"


def test_over_personalization_records_the_dropped_word():
    case = classify("monitor headphones", "silverback sound headphones", HISTORY)
    assert case.dropped == ("monitor",)
    assert case.added_from_history == ("silverback", "sound")


def test_edit_distance_limits_what_counts_as_a_correction():
    # a swap of adjacent letters is one edit
    assert classify("gutiar", "guitar", HISTORY, max_edit_distance=1).category == (
        "query_correction"
    )
    # two edits: a correction at the default limit, a change (drop + addition) at one edit
    assert classify("gitarr", "guitar", HISTORY).category == "query_correction"
    assert classify("gitarr", "guitar", HISTORY, max_edit_distance=1).category == "other"
    # fewer edits than half the word's length: "uk" -> "ok" is a change, not a correction
    assert classify("uk", "ok", HISTORY).category == "other"
    assert classify("uk", "ok", HISTORY).dropped == ("uk",)


def test_function_words_are_not_content():
    assert classify("clip on tuner", "clip tuner", HISTORY).category == "other"
    assert classify("capo", "the capo", HISTORY).category == "other"


def test_shares_divide_keep_by_all_and_the_rest_by_the_rewritten():
    cats = ["keep"] * 2 + ["preference_extraction"] * 3 + ["intent_disambiguation", "other"]
    paper = {"keep_original_share_of_all": 34.0, "of_rewritten": {"intent_disambiguation": 52.3}}
    rows = {r["category"]: r for r in share_rows(cats, paper)}
    assert (rows["keep"]["count"], rows["keep"]["denominator"]) == (2, 7)
    assert rows["keep"]["share_pct"] == pytest.approx(100 * 2 / 7)
    assert rows["preference_extraction"]["share_pct"] == pytest.approx(60.0)
    assert rows["other"]["share_pct"] == pytest.approx(20.0)
    assert rows["query_correction"]["share_pct"] == 0.0
    rewritten = [r["share_pct"] for c, r in rows.items() if c != "keep"]
    assert sum(rewritten) == pytest.approx(100.0)
    assert rows["keep"]["paper_share_pct"] == 34.0
    assert rows["intent_disambiguation"]["paper_share_pct"] == 52.3
    assert math.isnan(rows["other"]["paper_share_pct"])
    assert all(math.isnan(r["paper_share_pct"]) for r in share_rows(cats, None))
    assert all(math.isnan(r["share_pct"]) for r in share_rows([], None))


# ------------------------------------------------------------------- the rule's outputs
SETTINGS = {
    "method": "ttp_rl",
    "set": "Broad",
    "history": "selected",
    "max_edit_distance": 2,
    "min_history_share": 0.5,
}


def _example(eid, query, label="Broad", split="test", selected=("I1",)):
    return {
        "example_id": eid,
        "source": "sample_world",
        "domain": "Dom",
        "user_id": "U",
        "query": query,
        "target": "I2",
        "label": label,
        "split": split,
        "history": [{"item_id": "I1", "timestamp": 1}, {"item_id": "I3", "timestamp": 2}],
        "selected_history": list(selected),
    }


@pytest.fixture
def run_files(tmp_path):
    examples = tmp_path / "examples.jsonl"
    records = [
        _example("e1", "guitar picks"),
        _example("e2", "guitar picks"),
        _example("e3", "ukulele"),
        _example("e4", "capo", label="General"),  # not Broad: left out
        _example("e5", "capo", split="train"),  # not a test query: left out
    ]
    examples.write_text("".join(json.dumps(r) + "\n" for r in records))
    items = tmp_path / "items.parquet"
    ItemCorpus(
        {
            "I1": Item("I1", "Brightwater Guitar Picks, White"),
            "I2": Item("I2", "Kestrel Ukulele"),
            "I3": Item("I3", "Northwind Capo"),
        }
    ).write(items)
    rewrites = {
        "e1": {"generated": "", "rewrite": "Brightwater guitar picks", "well_formed": True},
        "e2": {"generated": "", "rewrite": "guitar picks", "well_formed": True},
        "e3": {"generated": "", "rewrite": "Northwind ukulele", "well_formed": True},
    }
    info = tmp_path / "ttp_rl.info.json"
    info.write_text(json.dumps({"rewrites": rewrites}))
    paper = tmp_path / "paper.yaml"
    paper.write_text(
        yaml.safe_dump(
            {
                "figure3": {
                    "keep_original_share_of_all": 34.0,
                    "of_rewritten": {"intent_disambiguation": 52.3, "preference_extraction": 40.9},
                }
            }
        )
    )
    return {"examples": examples, "items": items, "info": info, "paper": paper, "root": tmp_path}


def _run(files, *, paper=True, settings=SETTINGS, tag="a"):
    out = files["root"] / tag
    shares = make_figure3(
        sets=[("Dom", files["examples"], files["items"], files["info"])],
        method_label="TTP (SFT+RL)",
        settings=settings,
        items_settings={"fields": ["title"], "max_features": 3},
        paper_path=files["paper"] if paper else None,
        config_label="unit",
        cases_out=out / "cases.csv",
        csv_out=out / "figure3.csv",
        pdf_out=out / "figure3.pdf",
    )
    return shares.set_index("category"), out


def test_outputs_on_hand_built_files(run_files):
    import pandas as pd

    shares, out = _run(run_files)
    cases = pd.read_csv(out / "cases.csv").set_index("example_id")
    # e3 adds "northwind", an item of the full history but not of the selected one
    assert cases["category"].to_dict() == {
        "e1": "preference_extraction",
        "e2": "keep",
        "e3": "intent_disambiguation",
    }
    assert cases.loc["e1", "added_from_history"] == "brightwater"
    assert shares.loc["keep", "count"] == 1 and shares.loc["keep", "denominator"] == 3
    assert shares.loc["preference_extraction", "share_pct"] == pytest.approx(50.0)
    assert shares.loc["preference_extraction", "paper_share_pct"] == 40.9
    assert (out / "figure3.pdf").read_bytes().startswith(b"%PDF")
    # deterministic: the same inputs give the same bytes
    _, again = _run(run_files, tag="b")
    assert (again / "figure3.pdf").read_bytes() == (out / "figure3.pdf").read_bytes()
    assert (again / "figure3.csv").read_bytes() == (out / "figure3.csv").read_bytes()


def test_full_history_setting_reads_every_history_item(run_files):
    shares, out = _run(run_files, settings={**SETTINGS, "history": "full"}, tag="full")
    assert shares.loc["preference_extraction", "count"] == 2  # e3's "northwind" now counts


def test_without_paper_values(run_files):
    shares, out = _run(run_files, paper=False)
    assert shares["paper_share_pct"].isna().all()
    assert (out / "figure3.pdf").is_file()


def test_a_missing_rewrite_names_the_run_file(run_files):
    info = run_files["info"]
    data = json.loads(info.read_text())
    del data["rewrites"]["e3"]
    info.write_text(json.dumps(data))
    with pytest.raises(Figure3InputError, match=str(info)):
        _run(run_files)


def test_the_configured_method_must_write_rewrites():
    ttp = {"enabled": True, "methods": ["bm25", "ttp_rl"], "figure3": dict(SETTINGS)}
    assert figure3_method({"ttp": ttp}) == "ttp_rl"
    with pytest.raises(ValueError, match="ttp.figure3.method 'bm25'"):
        figure3_method({"ttp": {**ttp, "figure3": {**SETTINGS, "method": "bm25"}}})
    with pytest.raises(ValueError, match="must be in ttp.methods"):
        figure3_method({"ttp": {**ttp, "methods": ["bm25"]}})
    with pytest.raises(ValueError, match="'no_such_method'"):
        figure3_method({"ttp": {**ttp, "figure3": {**SETTINGS, "method": "no_such_method"}}})
    # TTP off: nothing reads the method
    assert figure3_method({"ttp": {**ttp, "enabled": False, "methods": []}}) == "ttp_rl"
