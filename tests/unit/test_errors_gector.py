"""The real GECToR code path (public `gector` package) on a tiny randomly initialised model.

The fixture (``tests.fixtures.models.save_tiny_gector``) builds a 1-layer BERT with a 20-word
WordPiece vocabulary, wraps it in gector's GECToR with a 5-label tag set, fixes the output
layers so that every word gets one known tag and saves it like a Hugging Face checkpoint; the
test runs the backend on it: loading, tokenisation, iterative decoding and detokenisation are
the production code.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
gector = pytest.importorskip("gector")

from tests.fixtures.models import save_tiny_gector  # noqa: E402


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

    model, verb = save_tiny_gector(tmp_path, "$TRANSFORM_CASE_CAPITAL")
    b = GectorBackend(_params(model, verb))
    out = b.correct(["this is a test.", "I don't like it.", ""])
    # spaCy splits "don't" into do + n't; the detokeniser glues them back
    assert out == ["This Is A Test.", "I DoN't Like It.", ""]
    assert len(b.fingerprint()) == 64
    keep = GectorBackend(_params(model, verb, min_error_prob=1.0))
    assert keep.correct(["this is a test."]) == ["this is a test."]


def test_gector_iterations_are_applied(tmp_path):
    from personalir.errors.gec import GectorBackend

    model, verb = save_tiny_gector(tmp_path, "$APPEND_very")
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
