"""Stand-ins of the paper configuration's hub models (personalir.rehearsal.standins)."""

from pathlib import Path

import pytest
import yaml

from personalir.rehearsal import standins as st
from personalir.rehearsal import tiny_encoders as te

REPO = Path(__file__).resolve().parents[2]


def paper_config() -> dict:
    return yaml.safe_load((REPO / "config" / "paper.yaml").read_text(encoding="utf-8"))


def test_every_hub_model_of_the_paper_config_has_a_stand_in():
    models = st.hub_models(paper_config())
    # 16 model keys name 14 hub repositories (MiniLM and BGE-base are named twice).
    assert len(models) == 16
    assert len({st.repo_of(v) for v in models.values()}) == 14
    assert models["ttp.backbone.model"].startswith("Qwen/Qwen2.5-3B-Instruct@")
    # served models and packaged or non-model names are left out
    assert "ttp.teacher.model" not in models and "validation.judge.model" not in models
    assert "syntax.parse.pipeline" not in models


def test_a_hub_model_without_a_stand_in_is_refused():
    config = {"retrieval": {"retrievers": {"x": {"model": "acme/unknown-encoder"}}}}
    with pytest.raises(KeyError, match="retrieval.retrievers.x.model"):
        st.hub_models(config)
    # packaged names and local folders are not hub models
    assert st.hub_models({"a": {"model": "packaged:splade-tiny"}}) == {}
    assert st.hub_models({"a": {"model": str(REPO / "config")}}) == {}


def test_folder_names_follow_the_hub_id():
    assert st.folder_name("Qwen/Qwen2.5-3B-Instruct") == "Qwen--Qwen2.5-3B-Instruct"
    assert st.repo_of("BAAI/bge-m3@" + "0" * 40) == "BAAI/bge-m3"


def test_new_encoders_load_with_their_real_classes(tmp_path):
    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

    words = ["guitar", "strings", "a", "cable"]
    mpnet = te.save_mpnet_encoder(tmp_path / "mpnet", words)
    assert AutoModel.from_pretrained(mpnet).config.model_type == "mpnet"
    rr = te.save_xlmr_cross_encoder(tmp_path / "rr", words)
    tok = AutoTokenizer.from_pretrained(rr)
    enc = tok(["guitar strings"], ["a cable"], return_tensors="pt")
    # the word-level template frames a pair as <s> A </s> B </s> (XLM-R's own: </s></s>)
    tokens = tok.convert_ids_to_tokens(enc["input_ids"][0])
    assert tokens == ["<s>", "guitar", "strings", "</s>", "a", "cable", "</s>"]
    with torch.no_grad():
        logits = AutoModelForSequenceClassification.from_pretrained(rr)(**enc).logits
    assert tuple(logits.shape) == (1, 1)


def test_words_come_from_the_sample_world():
    words = st.standin_words()
    assert words[:10] == [str(d) for d in range(10)]
    assert 1000 < len(words) <= st.VOCABULARY_LIMIT + len(st.tm.DIGITS) + len(st.tm.ANSWERS)
    assert "guitar" in words
