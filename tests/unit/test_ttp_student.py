"""The distilled student (Table 8): its training objective inside the bi-encoder recipe, its
methods, and the Table 8 layout."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from personalir.ttp.methods.base import PERSONAL_RETRIEVERS
from personalir.ttp.paper.tables import table8
from personalir.ttp.training.dense_ft import DenseFTSettings, fine_tune
from personalir.ttp.training.distill import VARIANTS
from personalir.ttp.training.student import method_name
from tests.fixtures import models as tm

WORDS = ("red blue capo strap guitar bass drum stick pick tuner cable pedal query history").split()  # noqa: SIM905


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    return str(tm.save_bert_encoder(tmp_path_factory.mktemp("st") / "bert", WORDS, seed=3))


def _train(encoder, out, terms, rewrites):
    queries = ["red capo", "blue strap", "guitar pick", "bass drum"]
    items = ["capo red", "strap blue", "pick guitar", "drum bass"]
    return fine_tune(
        encoder,
        queries,
        items,
        ["a", "b", "c", "d"],
        DenseFTSettings(epochs=1, batch_size=4, learning_rate=1e-3, max_length=16),
        out,
        seed=5,
        variant="student",
        rewrites=rewrites,
        terms=terms,
        log=lambda *_: None,
    )


def _weights(folder):
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def test_each_term_set_trains_a_different_student(encoder, tmp_path):
    rewrites = ["red capo history", "blue strap history", "guitar pick cable", "bass drum stick"]
    base = _weights_after(encoder, tmp_path / "q_p", ("q_p",), rewrites)
    full = _weights_after(encoder, tmp_path / "full", VARIANTS["full"], rewrites)
    assert base.keys() == full.keys()
    assert any(not torch.equal(base[k], full[k]) for k in base)
    # the rewrites reach the loss only through the terms that use them
    other = ["x" for _ in rewrites]
    again = _weights_after(encoder, tmp_path / "q_p_other", ("q_p",), other)
    assert all(torch.equal(base[k], again[k]) for k in base)


def _weights_after(encoder, out, terms, rewrites):
    _train(encoder, out, terms, rewrites)
    return _weights(out)


def test_terms_need_one_rewrite_per_query(encoder, tmp_path):
    with pytest.raises(ValueError, match="one rewrite text per query"):
        _train(encoder, tmp_path / "x", ("q_p", "qr_p"), ["only one"])


def test_every_variant_is_a_method_that_is_no_table4_row():
    for variant in VARIANTS:
        cls = PERSONAL_RETRIEVERS.get(method_name(variant))
        assert cls.variant == variant and cls.model_roles == ("student",)
        assert cls.uses_history and not cls.table4_row and not cls.generates_text
    assert method_name("full") == "student"


def test_table8_layout_and_avg():
    rows = []
    for method, vals in (("ttp_rl", (0.5, 0.6, 0.4)), ("student", (0.4, 0.5, 0.3))):
        for t, v in zip(("General", "Broad", "LongTail"), vals, strict=True):
            rows.append(
                {
                    "domain": "All",
                    "method": method,
                    "label": t,
                    "measure": "Recall@20",
                    "value": v,
                    "ci_low": v - 0.1,
                    "ci_high": v + 0.1,
                }
            )
    summary = pd.DataFrame(rows)
    paper = {"teacher_ttp_3b": {"General": 47.52, "Broad": 48.74, "LongTail": 38.65, "Avg": 44.97}}
    t = table8(
        summary,
        [("ttp_rl", "Teacher", "teacher_ttp_3b"), ("student", "Student", "student_305m")],
        paper=paper,
    )
    assert t["Method"].tolist() == ["Teacher", "Student"]
    assert t["Avg"].tolist() == pytest.approx([0.5, 0.4])
    assert t["General ci_low"].iloc[1] == pytest.approx(0.3)
    assert t["Avg paper"].iloc[0] == 44.97 and math.isnan(t["Avg paper"].iloc[1])
