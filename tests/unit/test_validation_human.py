"""The human-evaluation protocol: agreement against worked examples, the importer on every
bad-row kind, assignment, adjudication, the exports and the simulated annotators."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

from personalir.validation import human, simulate
from personalir.validation.agreement import _alpha, agreement
from personalir.validation.dimensions import DIMENSIONS

NAT = DIMENSIONS.get("naturalness")
ATTR = DIMENSIONS.get("attribution")
ERR = DIMENSIONS.get("error_consistency")
DIMS = [NAT, DIMENSIONS.get("syntactic_quality"), ATTR, ERR]


# --- agreement: worked examples ------------------------------------------------------------
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the 4 observers x 12 units
# example with missing values; the paper gives alpha = 0.743 (nominal), 0.815 (ordinal) and
# 0.849 (interval).
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
        [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
    ]
)


def test_alpha_reproduces_krippendorffs_worked_example():
    assert _alpha(KRIPPENDORFF_2011, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert _alpha(KRIPPENDORFF_2011, "ordinal") == pytest.approx(0.815, abs=5e-4)
    assert np.isnan(_alpha(np.ones((2, 5)), "nominal"))  # one category: undefined, no crash


def _two_coders(pairs, dim):
    """Annotations and assignment for items labelled by annotators x (primary_1), y (primary_2)."""
    ann, assign = [], []
    for i, (a, b) in enumerate(pairs):
        item = f"i{i}"
        ann += [(item, dim.name, "x", a, "t"), (item, dim.name, "y", b, "t")]
        assign += [(item, "x", "primary_1"), (item, "y", "primary_2"), (item, "z", "adjudicator")]
    return (
        pd.DataFrame(ann, columns=["item_id", "dimension", "annotator", "label", "source"]),
        pd.DataFrame(assign, columns=["item_id", "annotator", "role"]),
    )


def test_cohens_kappa_on_the_textbook_two_by_two_table():
    # 50 items: both "A" 20, x "A" / y "B" 5, x "B" / y "A" 10, both "B" 15:
    # p_o = 0.70, p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.50, kappa = (0.70 - 0.50) / 0.50 = 0.40.
    pairs = [("A", "A")] * 20 + [("A", "B")] * 5 + [("B", "A")] * 10 + [("B", "B")] * 15
    ann, assign = _two_coders(pairs, ATTR)
    out = agreement(ann, assign, ATTR, n_boot=200, seed=1)
    assert out["kappa"] == pytest.approx(0.40)
    assert out["n_items"] == 50 and out["percent_agreement"] == pytest.approx(70.0)
    assert out["level"] == "nominal"
    assert out["kappa_ci_low"] <= out["kappa"] <= out["kappa_ci_high"]
    assert out["alpha_ci_low"] <= out["alpha"] <= out["alpha_ci_high"]


def test_quadratic_weighted_kappa_worked_by_hand():
    # Scale fail < acceptable < strict_pass (indices 0, 1, 2); x = [0, 1, 2], y = [0, 2, 2].
    # Weights (i - j)^2 / 4. Observed weighted disagreement: 0.25 / 3 = 0.0833. Expected, from
    # the margins x = (1/3, 1/3, 1/3), y = (1/3, 0, 2/3): 2/9 + 0.25/9 + 0.5/9 + 1/9 = 0.4167.
    # kappa = 1 - 0.0833 / 0.4167 = 0.8.
    pairs = [("fail", "fail"), ("acceptable", "strict_pass"), ("strict_pass", "strict_pass")]
    ann, assign = _two_coders(pairs, ERR)
    out = agreement(ann, assign, ERR, n_boot=50, seed=1)
    assert out["kappa"] == pytest.approx(0.8)
    assert out["level"] == "ordinal"


def test_degenerate_agreement_is_nan_with_a_note():
    ann, assign = _two_coders([("A", "A")] * 4, ATTR)
    out = agreement(ann, assign, ATTR, n_boot=20)
    assert np.isnan(out["alpha"]) and np.isnan(out["kappa"]) and "single label" in out["note"]
    empty = agreement(ann.iloc[:0], assign, ATTR, n_boot=20)
    assert empty["n_items"] == 0 and "fewer than two" in empty["note"]


# --- items, assignment, exports ------------------------------------------------------------
def _items(n=10):
    out = []
    for i in range(n):
        if i % 2:
            out.append(
                {
                    "item_id": f"it-{i}",
                    "order": i,
                    "kind": "syntactic",
                    "dimensions": ["naturalness", "syntactic_quality", "attribution"],
                    "query": f"q{i}",
                    "query_1": f"q{i}",
                    "query_2": f"r{i}",
                    "user_a_sentences": ["s1", "s2"],
                    "user_b_sentences": ["t1"],
                }
            )
        else:
            out.append(
                {
                    "item_id": f"it-{i}",
                    "order": i,
                    "kind": "writing_error",
                    "dimensions": ["naturalness", "syntactic_quality", "error_consistency"],
                    "query": f"e{i}",
                    "clean_query": f"c{i}",
                    "error_query": f"e{i}",
                    "user_errors": ["teh -> the (swap)"],
                }
            )
    return out


ANNOTATORS = [f"ann{i}" for i in range(1, 6)]


def test_assignment_is_balanced_distinct_and_seeded():
    items = _items(12)
    a = human.assign_annotators(items, ANNOTATORS, primaries=2, seed=3)
    assert a.equals(human.assign_annotators(items, ANNOTATORS, primaries=2, seed=3))
    for _, grp in a.groupby("item_id"):
        assert sorted(grp["role"]) == ["adjudicator", "primary_1", "primary_2"]
        assert grp["annotator"].nunique() == 3
    load = a[a["role"] != "adjudicator"]["annotator"].value_counts()
    assert load.max() - load.min() <= 1 and len(load) == 5
    with pytest.raises(ValueError, match="need 3 annotators"):
        human.assign_annotators(items, ["a", "b"], primaries=2, seed=0)


def test_exports_are_blinded_and_well_formed(tmp_path):
    items = _items(4)
    assign = human.assign_annotators(items, ANNOTATORS, seed=1)
    human.export_label_studio(items, DIMS, tmp_path / "tasks.json", tmp_path / "config.xml")
    tasks = json.loads((tmp_path / "tasks.json").read_text())
    assert [t["data"]["item_id"] for t in tasks] == ["it-0", "it-1", "it-2", "it-3"]
    assert tasks[1]["data"]["user_a_sentences"] == "s1\ns2"
    root = ET.fromstring((tmp_path / "config.xml").read_text())
    choices = {c.get("name"): [x.get("value") for x in c] for c in root.iter("Choices")}
    assert choices["naturalness"] == ["1", "2", "3", "4", "5"]
    assert choices["attribution"] == ["A", "B", "no_preference"]
    text_fields = {t.get("name") for t in root.iter("Text")}
    assert {c.get("toName") for c in root.iter("Choices")} <= text_fields
    human.export_csv(items, assign, tmp_path / "a.csv")
    rows = list(csv.DictReader((tmp_path / "a.csv").read_text().splitlines()))
    assert len(rows) == 4 * 2 * 3 and {r["label"] for r in rows} == {""}
    assert not {"user_id", "backend", "attribution_truth"} & set(rows[0])
    guide = human.annotator_guide(DIMS, primaries=2, n_annotators=5)
    assert NAT.definition in guide and ERR.levels["strict_pass"] in guide
    assert "2 of the 5 annotators" in guide


# --- import --------------------------------------------------------------------------------
def _filled_csv(tmp_path, items, assign, edit=None):
    human.export_csv(items, assign, tmp_path / "a.csv")
    rows = list(csv.DictReader((tmp_path / "a.csv").read_text().splitlines()))
    for r in rows:
        r["label"] = {
            "naturalness": "4",
            "syntactic_quality": "3",
            "attribution": "A",
            "error_consistency": "acceptable",
        }[r["dimension"]]
    if edit:
        edit(rows)
    path = tmp_path / "filled.csv"
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_import_accepts_the_filled_export(tmp_path):
    items = _items(4)
    assign = human.assign_annotators(items, ANNOTATORS, seed=1)

    def blank_one(rows):
        rows[0]["label"] = ""

    got = human.import_annotations(
        _filled_csv(tmp_path, items, assign, blank_one), items, DIMS, assign
    )
    assert len(got) == 4 * 2 * 3 - 1 and got.attrs["skipped_empty"] == 1
    assert got["source"].iloc[0].endswith("filled.csv:3")  # header is line 1, blank row 2


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda rows: rows[0].update(item_id="it-99"), "unknown item 'it-99'"),
        (lambda rows: rows[0].update(dimension="fluency"), "unknown dimension 'fluency'"),
        (lambda rows: rows[0].update(label="7"), "label '7' out of range"),
        (lambda rows: rows.append(dict(rows[0])), "duplicate annotation"),
        (lambda rows: rows[0].update(annotator=""), "missing annotator"),
        (lambda rows: rows[0].update(annotator="stranger"), "'stranger' is not assigned"),
    ],
)
def test_import_names_every_bad_row_kind(tmp_path, edit, reason):
    items = _items(4)
    assign = human.assign_annotators(items, ANNOTATORS, seed=1)
    path = _filled_csv(tmp_path, items, assign, edit)
    with pytest.raises(human.AnnotationImportError) as info:
        human.import_annotations(path, items, DIMS, assign)
    assert reason in str(info.value)
    assert f"{path}:" in info.value.problems[0]


def test_import_rejects_a_dimension_of_the_other_kind(tmp_path):
    items = _items(4)
    assign = human.assign_annotators(items, ANNOTATORS, seed=1)

    def wrong_kind(rows):
        row = next(r for r in rows if r["kind"] == "writing_error")
        row["dimension"], row["label"] = "attribution", "A"

    with pytest.raises(human.AnnotationImportError, match="not judged for writing_error"):
        human.import_annotations(
            _filled_csv(tmp_path, items, assign, wrong_kind), items, DIMS, assign
        )


def test_import_reads_a_label_studio_export(tmp_path):
    items = _items(2)
    assign = human.assign_annotators(items, ANNOTATORS, seed=1)
    p1 = assign[(assign["item_id"] == "it-1") & (assign["role"] == "primary_1")]
    who = p1["annotator"].iloc[0]
    export = [
        {
            "id": 7,
            "data": {"item_id": "it-1", "query": "q1"},
            "annotations": [
                {
                    "id": 1,
                    "completed_by": {"id": 3, "email": "kim@lab.org"},
                    "was_cancelled": False,
                    "result": [
                        {
                            "from_name": "naturalness",
                            "to_name": "query",
                            "type": "choices",
                            "value": {"choices": ["5"]},
                        },
                        {
                            "from_name": "attribution",
                            "to_name": "query",
                            "type": "choices",
                            "value": {"choices": ["no_preference"]},
                        },
                    ],
                },
                {"id": 2, "completed_by": 4, "was_cancelled": True, "result": []},
            ],
        },
    ]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    got = human.import_annotations(path, items, DIMS, assign, annotator_ids={"kim@lab.org": who})
    assert list(got["label"]) == ["5", "no_preference"] and set(got["annotator"]) == {who}
    assert got["source"].iloc[0] == f"{path}:task 1"
    export[0]["annotations"][0]["result"][0]["value"]["choices"] = ["9"]
    path.write_text(json.dumps(export))
    with pytest.raises(human.AnnotationImportError, match=r"task 1: label '9' out of range"):
        human.import_annotations(path, items, DIMS, assign, annotator_ids={"kim@lab.org": who})


# --- adjudication and simulation -----------------------------------------------------------
def test_adjudication_statuses():
    assign = pd.DataFrame(
        [("i1", "x", "primary_1"), ("i1", "y", "primary_2"), ("i1", "z", "adjudicator")] * 1,
        columns=["item_id", "annotator", "role"],
    )
    ann = pd.DataFrame(
        [
            ("i1", "naturalness", "x", "4", ""),
            ("i1", "naturalness", "y", "4", ""),
            ("i1", "syntactic_quality", "x", "2", ""),
            ("i1", "syntactic_quality", "y", "5", ""),
            ("i1", "syntactic_quality", "z", "3", ""),
            ("i1", "attribution", "x", "A", ""),
            ("i1", "attribution", "y", "B", ""),
            ("i1", "error_consistency", "x", "fail", ""),
        ],
        columns=["item_id", "dimension", "annotator", "label", "source"],
    )
    out = human.adjudicate(ann, assign, DIMS).set_index("dimension")
    assert out.loc["naturalness", "status"] == "agreed" and out.loc["naturalness", "label"] == "4"
    assert out.loc["syntactic_quality", "status"] == "adjudicated"
    assert out.loc["syntactic_quality", "label"] == "3"
    assert out.loc["attribution", "status"] == "unresolved"
    assert out.loc["error_consistency", "status"] == "incomplete"


def _judge(items):
    rows = []
    for it in items:
        for d in it["dimensions"]:
            rows.append(
                (
                    it["item_id"],
                    d,
                    {
                        "naturalness": "3",
                        "syntactic_quality": "4",
                        "attribution": "A",
                        "error_consistency": "acceptable",
                    }[d],
                )
            )
    return pd.DataFrame(rows, columns=["item_id", "dimension", "label"])


def test_simulated_annotators_round_trip_and_noise(tmp_path):
    items = _items(40)
    assign = human.assign_annotators(items, ANNOTATORS, seed=2)
    judge = _judge(items)
    kw = dict(annotators=ANNOTATORS, bias_sd=0.3, nominal_agreement=0.8, seed=5)
    sim = simulate.simulate_annotations(items, judge, assign, DIMS, noise_sd=0.5, **kw)
    again = simulate.simulate_annotations(items[::-1], judge, assign, DIMS, noise_sd=0.5, **kw)
    key = ["item_id", "dimension", "annotator"]
    assert (
        sim.sort_values(key)
        .reset_index(drop=True)
        .equals(again.sort_values(key).reset_index(drop=True))
    )  # order-independent, seeded
    simulate.write_annotations_csv(sim, tmp_path / "sim.csv")
    back = human.import_annotations(tmp_path / "sim.csv", items, DIMS, assign)
    assert back[key + ["label"]].equals(sim[key + ["label"]])
    labels = human.adjudicate(back, assign, DIMS, items=items)
    assert set(labels["status"]) <= {"agreed", "adjudicated"}  # the adjudicator always answers
    # A question the judge did not answer is skipped, not invented.
    missing = judge.iloc[1:]
    skipped = simulate.simulate_annotations(items, missing, assign, DIMS, noise_sd=0.5, **kw)
    first = tuple(judge.iloc[0][["item_id", "dimension"]])
    assert first not in set(zip(skipped["item_id"], skipped["dimension"], strict=True))

    # More noise, less agreement.
    def agree(noise):
        s = simulate.simulate_annotations(items, judge, assign, DIMS, noise_sd=noise, **kw)
        return agreement(s, assign, NAT, n_boot=10)["percent_agreement"]

    assert agree(0.1) > agree(1.0) + 20
