"""The real GECToR code path (public `gector` package) on a tiny randomly initialised model.

The test builds a 1-layer BERT with a 20-word WordPiece vocabulary, wraps it in gector's
GECToR with a 5-label tag set, fixes the output layers so that every word gets one known tag,
saves it like a Hugging Face checkpoint and runs the backend on it: loading, tokenisation,
iterative decoding and detokenisation are the production code.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
gector = pytest.importorskip("gector")

WORDS = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "$START",
    "this",
    "is",
    "a",
    "test",
    ".",
    "the",
    "guitar",
    "sounds",
    "good",
    "very",
    "do",
    "n't",
    "like",
    "it",
]


def _tiny_checkpoint(root, tag: str):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from tokenizers.processors import TemplateProcessing
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(WORDS)}
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    base = root / "base"
    fast.save_pretrained(base)
    torch.manual_seed(0)
    BertModel(
        BertConfig(
            vocab_size=len(vocab),
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=64,
        )
    ).save_pretrained(base)
    labels = ["<OOV>", "$KEEP", "$DELETE", "$TRANSFORM_CASE_CAPITAL", "$APPEND_very", "<PAD>"]
    label2id = {lab: i for i, lab in enumerate(labels)}
    cfg = gector.GECToRConfig(
        model_id=str(base),
        label2id=label2id,
        id2label={i: lab for lab, i in label2id.items()},
        has_add_pooling_layer=True,
    )
    model = gector.GECToR(cfg)
    with torch.no_grad():
        model.label_proj_layer.weight.zero_()
        model.label_proj_layer.bias.zero_()
        model.label_proj_layer.bias[label2id[tag]] = 6.0
        model.d_proj_layer.weight.zero_()
        model.d_proj_layer.bias.copy_(torch.tensor([0.0, 6.0]))  # every word "incorrect"
    out = root / "gector"
    model.save_pretrained(out)
    fast.save_pretrained(out)
    verb = root / "verb-form-vocab.txt"
    verb.write_text("sound_sounds:VB_VBZ\nsounds_sound:VBZ_VB\n")
    return out, verb


def _params(model, verb, **kw):
    p = {
        "model": str(model),
        "checkpoint_format": "hf",
        "transformer_model": "unused",
        "vocab_path": None,
        "special_tokens_fix": 1,
        "verb_dict": str(verb),
        "n_iterations": 3,
        "keep_confidence": 0.0,
        "min_error_prob": 0.0,
        "batch_size": 2,
        "max_length": 32,
        "device": "cpu",
    }
    p.update(kw)
    return p


def test_gector_backend_capitalises(tmp_path):
    from personalir.errors.gec import GectorBackend

    model, verb = _tiny_checkpoint(tmp_path, "$TRANSFORM_CASE_CAPITAL")
    b = GectorBackend(_params(model, verb))
    out = b.correct(["this is a test.", "I don't like it.", ""])
    # spaCy splits "don't" into do + n't; the detokeniser glues them back
    assert out == ["This Is A Test.", "I DoN't Like It.", ""]
    assert len(b.fingerprint()) == 64
    keep = GectorBackend(_params(model, verb, min_error_prob=1.0))
    assert keep.correct(["this is a test."]) == ["this is a test."]


def test_gector_iterations_are_applied(tmp_path):
    from personalir.errors.gec import GectorBackend

    model, verb = _tiny_checkpoint(tmp_path, "$APPEND_very")
    counts = []
    for n in (1, 2):
        out = GectorBackend(_params(model, verb, n_iterations=n)).correct(["the guitar"])[0]
        counts.append(out.split().count("very"))
    # one round appends after $START, "the" and "guitar"; the next tags the new words too
    assert counts[0] == 3 and counts[1] > counts[0]


def test_gector_needs_the_verb_dictionary(tmp_path):
    from personalir.errors.gec import GECError, load_gector

    with pytest.raises(GECError, match="verb_dict"):
        load_gector(_params(tmp_path, tmp_path / "missing.txt"))
