"""Constrained decoding of LM candidates (personalir.queries.constrained).

Golden allowed-token sets on a hand-made 17-token vocabulary (the sets were derived by hand
from the rules in the module docstring and checked against the implementation), then
generation with a tiny random Qwen2 (tests/fixtures/models.py): whatever the random model
prefers, every output names each core value exactly once and no forbidden value.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from personalir.queries.constrained import (  # noqa: E402
    CoreValueProcessor,
    TokenTable,
    build_constraint,
    product_constraint,
)
from personalir.queries.terms import AttributeVocabulary, count_terms, normalised  # noqa: E402

RAW = [
    "<eos>",  # 0 end token
    "<pad>",  # 1 never generated
    " Vel",  # 2
    "vet",  # 3
    " Fret",  # 4
    " Red",  # 5
    "Red",  # 6
    " Blue",  # 7 (forbidden value)
    " and",  # 8
    ",",  # 9
    "s",  # 10
    " red",  # 11
    " guitar",  # 12
    " dark",  # 13
    " Metal",  # 14
    "Vel",  # 15
    " Blue,",  # 16 completes the forbidden "blue" inside the token
]
ID = {text: i for i, text in enumerate(RAW)}
# At the start: every token but the end token, the never-generated one, and the free-text
# tokens that would name "blue" (forbidden) or "red" (a core value, only as the value itself).
EVERY = set(RAW) - {"<eos>", "<pad>", " Blue,", " Blue", " red"}
BOUNDARY = {t for t in EVERY if not t[0].isalnum()}  # of those, the ones that start a new word


def _encode(text: str) -> list[int]:
    """Greedy longest match over the toy vocabulary."""
    out, i = [], 0
    while i < len(text):
        best = max((t for t in range(2, len(RAW)) if text.startswith(RAW[t], i)), key=_len)
        out.append(best)
        i += len(RAW[best])
    return out


def _len(t: int) -> int:
    return len(RAW[t])


@pytest.fixture
def table():
    return TokenTable([normalised(r) for r in RAW], frozenset({1}), (0,), _encode)


@pytest.fixture
def spec(table):
    return build_constraint(table, ["Velvet Fret", "Red"], ["Blue", "Dark Red"])


def _walk(table, spec, tokens, max_new=12):
    """Allowed-token sets (as texts) before each token of ``tokens`` and after the last."""
    proc = CoreValueProcessor(table, spec, max_new)
    proc.start(1)
    row, sets = proc.rows[0], []
    for tok in [*tokens, None]:
        sets.append({RAW[i] for i in proc.allowed(row).nonzero().flatten().tolist()})
        if tok is not None:
            proc.step(row, ID[tok])
    return sets, proc


def test_constraint_tokenisations_and_watched_runs(spec):
    # each value as given, with and without a leading space; watched runs by their last word
    assert spec.variants == (
        (((2, 3, 4), " velvet fret"), ((15, 3, 4), "velvet fret")),
        (((5,), " red"), ((6,), "red")),
    )
    assert spec.watched == {
        "blue": (("blue",),),
        "fret": (("velvet", "fret"),),
        "red": (("dark", "red"), ("red",)),
    }
    assert spec.longest == (3, 1) and spec.inner_candidates == (16,)


def test_a_started_value_is_completed_and_eos_waits_for_every_value(table, spec):
    sets, proc = _walk(table, spec, [" Vel", "vet", " Fret", ",", " Red", "<eos>"])
    assert sets[0] == EVERY  # no EOS before the values
    assert sets[1] == {"vet"}  # once started, the value is completed
    assert sets[2] == {" Fret"}
    assert sets[3] == BOUNDARY  # a value is a whole word: no "Fretvet"; no EOS (Red pending)
    assert sets[4] == EVERY
    assert sets[5] == (BOUNDARY - {" Red"}) | {"<eos>"}  # every value written: EOS allowed
    assert sets[6] == {"<eos>"}  # after the end
    assert proc.report().pop("seconds") == 0.0  # the hook itself was not called here
    assert {k: v for k, v in proc.report().items() if k != "seconds"} == {
        "rows": 1,
        "rows_with_every_value": 1,
        "budget_steps": 0,
        "fallback_steps": 0,
        "dead_ends": 0,
        "violations": 0,
    }
    assert proc.rows[0].written == [0, 1]


def test_values_in_any_order(table, spec):
    sets, proc = _walk(table, spec, ["Red", " and", " Vel", "vet", " Fret"])
    assert sets[0] == EVERY
    assert sets[1] == BOUNDARY - {" Red"}  # "Red" (no space) at the start; it is written
    assert sets[5] == (BOUNDARY - {" Red"}) | {"<eos>"}
    assert proc.written(proc.rows[0]) == [1, 0]


def test_exactly_once_a_written_value_is_not_named_again(table, spec):
    seq = [" Red", ",", " Vel", "vet", " Fret", " Vel", "vet"]
    sets, proc = _walk(table, spec, seq)
    assert sets[2] == EVERY - {" Red", "Red"}  # Red is written: neither form again
    assert sets[5] == (BOUNDARY - {" Red"}) | {"<eos>"}
    # "velvet" in free text is another word, but " Fret" after it would name the value again
    assert sets[7] == (EVERY - {" Red", " Fret"}) | {"<eos>"}  # "velvetred" is a word
    assert proc.rows[0].written == [1, 0] and proc.rows[0].value is None


def test_forbidden_catalogue_values(table, spec):
    sets, _ = _walk(table, spec, [])
    assert not {" Blue", " Blue,"} & sets[0]  # "blue" is another catalogue colour
    # "Dark Red" is one too: after "dark", Red may not start, and " red" is not free text
    sets, proc = _walk(table, spec, [" dark"])
    assert sets[1] == EVERY - {" Red"}
    assert "Red" in sets[1]  # glued to "dark" it is another word ("darkred"), not the value


def test_a_value_glued_to_the_word_before_is_not_the_value(table, spec):
    sets, proc = _walk(table, spec, [" guitar", "Red"])
    assert proc.rows[0].value is None and not proc.rows[0].written  # "guitarred"
    assert "Red" in sets[1]  # allowed as free text (a longer word), not as the value


def test_budget_forces_the_pending_values_then_eos(table, spec):
    # 6 tokens: Velvet Fret (3) + Red (1) + EOS (1) leave one free token
    sets, proc = _walk(table, spec, [" guitar", " Red", " Vel", "vet", " Fret", "<eos>"], 6)
    assert sets[0] == EVERY
    assert sets[1] == {" Vel", " Red"}  # only value starts that make a new word
    assert sets[2] == {" Vel"}
    assert sets[3] == {"vet"} and sets[4] == {" Fret"}
    assert sets[5] == {"<eos>"}
    assert proc.report()["budget_steps"] == 3  # after " guitar", " Red" and " Fret"
    assert proc.report()["rows_with_every_value"] == 1


def test_a_budget_too_small_is_counted_not_hidden(table, spec):
    sets, proc = _walk(table, spec, [" Vel", "vet", " Fret"], 3)
    assert sets[0] == {" Vel", "Vel", " Red", "Red"}  # forced from the first token
    assert proc.report()["rows_with_every_value"] == 0


def test_processor_masks_a_batch_with_one_constraint_per_row(table, spec):
    other = build_constraint(table, ["Red"], [])
    proc = CoreValueProcessor(table, [spec, other], 12)
    prompt = torch.tensor([[8, 12], [8, 12]])  # width 2 = the prompt
    scores = proc(prompt, torch.zeros(2, len(RAW) + 3))  # model vocab wider than the table
    assert scores.shape == (2, len(RAW) + 3)
    assert torch.isinf(scores[:, len(RAW) :]).all()  # ids beyond the tokenizer: never
    ids = torch.cat([prompt, torch.tensor([[ID[" Red"]], [ID[" Red"]]])], dim=1)
    scores = proc(ids, torch.zeros(2, len(RAW)))
    allowed = [{RAW[i] for i in torch.isfinite(s).nonzero().flatten().tolist()} for s in scores]
    assert allowed[0] == BOUNDARY - {" Red"}  # Velvet Fret still pending
    # the second row: its only value is written, and it forbids nothing
    assert allowed[1] == (BOUNDARY - {" Red"}) | {"<eos>", " Blue", " Blue,"}
    with pytest.raises(ValueError, match="2 constraints for a batch of 3"):
        CoreValueProcessor(table, [spec, other], 12)(torch.zeros(3, 2, dtype=torch.long), scores)


def test_build_constraint_names_a_value_it_cannot_write(table):
    with pytest.raises(ValueError, match="'---' has no words"):
        build_constraint(table, ["---"])
    info = _product()
    info.core_terms = ["---"]
    with pytest.raises(ValueError, match="product B0TEST: core value '---'"):
        product_constraint(table, info, _vocab())
    wrong = TokenTable(table.texts, table.never, table.ends, lambda s: [ID["Red"]])
    with pytest.raises(ValueError, match="'Blue': no tokenisation decodes to its words"):
        build_constraint(wrong, ["Blue"])  # a tokenizer that writes "red" for it


def test_forbidden_values_are_what_the_contradiction_filter_rejects():
    vocab = AttributeVocabulary.from_products(
        [["Color", "Brand"], ["Color", "Brand"], ["Color", "Brand"]],
        [["Red", "Velvet Fret"], ["Dark Red", "Arcbolt"], ["Velvet", "Nimbus"]],
    )
    keys, values = ["Color", "Brand"], ["Red", "Velvet Fret"]
    banned = vocab.forbidden(keys, values, title="Velvet Fret Nimbus Guitar")
    # "Velvet" is made of the product's own words; "Nimbus" is in its title
    assert banned == [("Brand", ("arcbolt",)), ("Color", ("dark", "red"))]
    text = "an arcbolt dark red velvet fret"
    assert vocab.contradictions(text, keys, values, title="Velvet Fret Nimbus Guitar") == [
        ("Brand", "arcbolt"),
        ("Color", "dark red"),
    ]


# ---------------------------------------------------------------------------- tiny Qwen2
VALUES = ["Nestwell", "Gray", "Cotton", "Newborn", "Foldable"]
KEYS = ["Brand", "Color", "Material", "Age Range", "Style"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from personalir.common.causal_lm import load_causal_lm
    from personalir.common.models import resolve_model
    from tests.fixtures.models import build_seed_qwen2

    path = build_seed_qwen2(tmp_path_factory.mktemp("tiny_qwen2"))
    model, tok = load_causal_lm(resolve_model(str(path)))
    return model, tok, TokenTable.from_tokenizer(tok)


def _product():
    from personalir.queries.filters import ProductInfo

    return ProductInfo(
        asin="B0TEST",
        title="Nestwell Foldable Stroller",
        document="Nestwell stroller, gray cotton, foldable, for newborns",
        core_terms=VALUES,
        keys=KEYS,
        values=VALUES,
        head="stroller",
    )


def _vocab():
    return AttributeVocabulary.from_products(
        [KEYS, ["Color", "Brand"]], [VALUES, ["Blue", "Arcbolt"]]
    )


def _assert_valid(text):
    assert count_terms(text, VALUES) == {v: 1 for v in VALUES}, text
    assert not _vocab().contradictions(text, KEYS, VALUES, title=_product().title), text


def test_shared_prompt_sampling_names_every_value_exactly_once(tiny):
    from personalir.queries import lm

    model, tok, table = tiny
    spec = product_constraint(table, _product(), _vocab())
    assert spec.forbidden == ("arcbolt", "blue")
    prompt = lm.chat_prompt(tok, "stroller", list(zip(KEYS, VALUES, strict=True)))
    width = len(tok(prompt, add_special_tokens=False)["input_ids"])
    proc = CoreValueProcessor(table, spec, 24, prompt_length=width)
    settings = lm.SamplingSettings(temperature=0.7, top_p=0.95, max_new_tokens=24)
    res = lm.sample_shared_prompt(
        model, tok, prompt, 8, settings, torch.Generator().manual_seed(0), proc
    )
    assert len(res) == 8
    for r in res:
        _assert_valid(r["text"])
    report = proc.report()
    assert report["rows_with_every_value"] == 8 and report["violations"] == 0


def test_batched_generate_with_sampling_one_state_per_sequence(tiny):
    from transformers import LogitsProcessorList

    from personalir.queries import lm

    model, tok, table = tiny
    second = ["Arcbolt", "Blue"]
    specs = [build_constraint(table, VALUES, ["Blue"]), build_constraint(table, second, [])]
    prompts = [
        lm.chat_prompt(tok, "stroller", list(zip(KEYS, VALUES, strict=True))),
        lm.chat_prompt(tok, "bottle", [("Brand", "Arcbolt"), ("Color", "Blue")]),
    ]
    tok.padding_side = "left"
    enc = tok(prompts, add_special_tokens=False, return_tensors="pt", padding=True)
    n = 3  # num_return_sequences: rows are prompt-major
    proc = CoreValueProcessor(table, [specs[0]] * n + [specs[1]] * n, 20)
    torch.manual_seed(0)
    out = model.generate(
        **enc,
        do_sample=True,
        temperature=0.7,
        top_p=0.95,
        max_new_tokens=20,
        num_return_sequences=n,
        logits_processor=LogitsProcessorList([proc]),
        eos_token_id=list(table.ends),
        pad_token_id=tok.pad_token_id,
    )
    texts = tok.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    for text in texts[:n]:
        assert count_terms(text, VALUES) == {v: 1 for v in VALUES}, text
        assert "blue" not in text.lower().split()
    for text in texts[n:]:
        assert count_terms(text, second) == {v: 1 for v in second}, text
    assert proc.report()["rows_with_every_value"] == 2 * n


def test_lm_backend_constrained_candidates_pass_lexical_and_contradiction(tiny):
    import pandas as pd

    from personalir.queries.backends import LanguageModelBackend
    from personalir.queries.filters import FilterContext, apply_filters

    model, tok, _ = tiny
    settings = {
        "products": None,
        "candidates_per_round": 6,
        "max_rounds": 1,
        "min_valid": None,
        "temperature": 0.7,
        "top_p": 0.95,
        "max_new_tokens": 24,
        "constrained": True,
    }
    info = _product()
    backend = LanguageModelBackend(
        settings, seed=1, domain="Baby_Products", model=model, tokenizer=tok,
        frequency=1, vocabulary=_vocab(), contradiction_keys=None,
    )  # fmt: skip
    made = backend.generate([info])
    assert len(made) == 6
    cands = pd.DataFrame(made).assign(candidate_id=[f"c{i}" for i in range(6)])
    filt = {"lexical": {"frequency": 1}, "contradiction": {"keys": None}}
    ctx = FilterContext({info.asin: info}, _vocab(), filt)
    judged = apply_filters(cands, ctx, ["lexical", "contradiction"])
    assert (judged["status"] == "valid").all(), judged[["text", "reason"]]
    stats = backend.stats
    assert stats["constrained"] and stats["constraint"]["rows_with_every_value"] == 6
    with pytest.raises(ValueError, match="queries.filters.lexical.frequency = 1"):
        LanguageModelBackend(
            settings, seed=1, domain="Baby_Products", model=model, tokenizer=tok,
            frequency=2, vocabulary=_vocab(),
        ).generate([info])  # fmt: skip


def test_lm_backend_batches_products_without_changing_their_candidates(tiny):
    """Three products decoded two per batch (left-padded prompts of different lengths, one
    hook over the batch) get the candidates each gets decoded alone."""
    import dataclasses

    from personalir.queries.backends import LanguageModelBackend

    model, tok, _ = tiny
    base = _product()
    infos = [
        base,
        dataclasses.replace(base, asin="B0SECOND", head="baby stroller"),
        dataclasses.replace(base, asin="B0THIRD", head="jogging stroller for twins"),
    ]
    settings = {
        "products": None, "candidates_per_round": 3, "max_rounds": 1, "min_valid": None,
        "temperature": 0.8, "top_p": 0.95, "max_new_tokens": 20, "constrained": True,
    }  # fmt: skip

    def run(per_batch):
        backend = LanguageModelBackend(
            {**settings, "products_per_batch": per_batch}, seed=5, domain="Baby_Products",
            model=model, tokenizer=tok, frequency=1, vocabulary=_vocab(), contradiction_keys=None,
        )  # fmt: skip
        return backend.generate(infos), backend.stats

    alone, _ = run(1)
    batched, stats = run(2)
    assert [c["product"] for c in batched] == ["B0TEST"] * 3 + ["B0SECOND"] * 3 + ["B0THIRD"] * 3
    assert batched == alone
    assert stats["products_per_batch"] == 2
    assert stats["constraint"]["rows_with_every_value"] == 9
    for c in batched:
        _assert_valid(c["text"])
