"""``ttp.device``: the resolver, the schema, the plumbing into the jobs, and device placement.

No GPU is needed for the placement tests: the model stays on the CPU while
:func:`strict_device` is in force, under which a tensor that *the project's code* (a module
named ``personalir.*``) creates with a torch factory function (``torch.tensor``, ``zeros``,
``ones``, ``full``, ``arange``, ``eye``, ...) without naming a device lands on ``meta``; it
then meets the CPU model's tensors, which raises. Code that creates every tensor on the
model's device is unaffected. A plain ``torch.set_default_device("meta")`` would do the same
for every library too, and peft's trainable-token layer (``torch.tensor(...).to(W.device)``)
cannot copy out of ``meta``, so the default device is switched for our frames only. Torch lets
CPU index tensors index tensors of another device, and 0-dim tensors mix across devices, on
CUDA as on ``meta``: the trick misses only what a GPU forgives too. With CUDA visible, the last
test runs the encoder and an SFT step on the GPU against the CPU.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors

from personalir.common.config import ConfigError, validate_config
from personalir.common.device import resolve_device, ttp_device
from personalir.ttp.model.backbone import (
    BackboneConfig,
    LoraSettings,
    attach_lora,
    load_backbone,
    prepare_backbone,
    save_backbone,
)
from personalir.ttp.model.encoder import TTPEncoder
from personalir.ttp.model.prompts import query_prompt
from personalir.ttp.training.sft import TTPLossModule, collate
from personalir.ttp.training.sft_data import SFTSettings, build_rows
from tests.fixtures.models import build_tiny_causal_lm
from tests.unit.test_ttp_model import _encoder as _model_encoder
from tests.unit.test_ttp_model import _world

ROOT = Path(__file__).resolve().parents[2]


class _OurTensorsOnMeta(TorchFunctionMode):
    """``device="meta"`` for factory calls without a device made from ``personalir.*`` code."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in _device_constructors() and kwargs.get("device") is None:
            frame = sys._getframe(1)
            while frame is not None and frame.f_globals.get("__name__", "").startswith("torch"):
                frame = frame.f_back
            if frame is not None and frame.f_globals.get("__name__", "").startswith("personalir."):
                kwargs["device"] = "meta"
        return func(*args, **kwargs)


@contextlib.contextmanager
def strict_device():
    """The project's device-less tensors land on ``meta`` (see the module doc)."""
    with _OurTensorsOnMeta():
        yield


def test_strict_device_catches_a_tensor_created_without_a_device(tmp_path, monkeypatch):
    """The trick itself: a device-less ``torch.eye`` in a ``personalir.*`` module fails
    against a CPU tensor, the same call with ``device=`` passes, other code is untouched."""
    import importlib.util

    (tmp_path / "probe.py").write_text(
        "import torch\n"
        "def bad(x):\n"
        "    return x.masked_fill(torch.eye(len(x), dtype=torch.bool), 0.0)\n"
        "def good(x):\n"
        "    return x.masked_fill(torch.eye(len(x), dtype=torch.bool, device=x.device), 0.0)\n"
    )
    spec = importlib.util.spec_from_file_location("personalir._probe", tmp_path / "probe.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    x = torch.ones(3, 3)
    with strict_device():
        assert torch.eye(2).device.type == "cpu"  # not our code: the usual default
        assert probe.good(x).device.type == "cpu"
        with pytest.raises(RuntimeError, match="meta"):
            probe.bad(x)


# --------------------------------------------------------------------------- the resolver
def test_resolve_device_cpu_auto_and_cuda_without_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("cpu", "ttp.device") == "cpu"
    assert resolve_device(None, "ttp.device") == "cpu"
    assert resolve_device("auto", "ttp.device") == "cpu"
    for name in ("cuda", "cuda:1"):
        with pytest.raises(ValueError, match=r"ttp\.device") as err:
            resolve_device(name, "ttp.device")
        assert "no CUDA GPU" in str(err.value)
    assert ttp_device({}) == "cpu"
    assert ttp_device({"device": "auto"}) == "cpu"
    with pytest.raises(ValueError, match=r"ttp\.device"):
        ttp_device({"device": "cuda"})


def test_resolve_device_with_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("auto", "ttp.device") == "cuda"
    assert resolve_device("cuda", "ttp.device") == "cuda"
    assert resolve_device("cuda:1", "ttp.device") == "cuda:1"
    with pytest.raises(ValueError, match=r"ttp\.device.*2 CUDA GPU"):
        resolve_device("cuda:2", "ttp.device")


def test_retrieval_device_goes_through_the_same_resolver(monkeypatch):
    from personalir.retrieval.base import RunSettings

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert RunSettings(device="auto").torch_device() == "cpu"
    assert RunSettings(device="cpu").torch_device() == "cpu"
    with pytest.raises(ValueError, match=r"retrieval\.device"):
        RunSettings(device="cuda").torch_device()


def test_schema_default_values_and_rejection():
    assert validate_config({})["ttp"]["device"] == "cpu"
    for ok in ("cpu", "auto", "cuda", "cuda:0", "cuda:12"):
        assert validate_config({"ttp": {"device": ok}})["ttp"]["device"] == ok
    for bad in ("gpu", "cuda:", "cuda:x", "CPU", "cuda0"):
        with pytest.raises(ConfigError, match="device"):
            validate_config({"ttp": {"device": bad}})


def test_shipped_configs_set_the_device():
    import yaml

    assert yaml.safe_load((ROOT / "config/config.yaml").read_text())["ttp"]["device"] == "cpu"
    assert yaml.safe_load((ROOT / "config/paper.yaml").read_text())["ttp"]["device"] == "cuda"


# --------------------------------------------------------------------------- the plumbing
# Rules whose jobs load a model (a bi-encoder, reranker, generator or the TTP backbone) and
# read their `ttp` params from params_json / history_params.
MODEL_RULES = (
    "ttp_examples",
    "ttp_teacher",
    "ttp_sft",
    "ttp_rewriter",
    "ttp_embedder",
    "ttp_rewrites",
    "ttp_rl",
    "ttp_dense_ft",
    "ttp_fusion",
    "ttp_teacher_rewrites",
    "ttp_student",
    "ttp_history_examples",
    "ttp_history_teacher",
    "ttp_history_sft",
    "ttp_public_examples",
    "ttp_pqb_examples",
)


# Rules whose `ttp` params come from a workflow helper (checked in test_run_params_*).
HELPER_RULES = ("ttp_run", "ttp_relevance", "ttp_cache_store", "ttp_history_run")
RULES_TEXT = "\n".join(p.read_text() for p in sorted((ROOT / "rules").glob("ttp*.smk")))


def _rule_section(text: str, rule: str, section: str) -> str:
    """A section of ``rule`` as written; a ``use rule base as rule with:`` that does not
    override the section inherits the base rule's."""
    start = r"^(?:rule {rule}:|use rule (\w+) as {rule} with:)\n(.*?)(?=^rule |^use rule |^\S|\Z)"
    body = re.search(start.format(rule=rule), text + "\n", re.S | re.M)
    assert body, rule
    found = re.search(rf"^    {section}:\n(.*?)(?=^    \w+:|\Z)", body.group(2), re.S | re.M)
    if found is None and body.group(1):
        return _rule_section(text, body.group(1), section)
    assert found, f"{rule}: no {section}"
    return found.group(1)


def test_rule_sections_are_read_through_use_rule():
    text = (
        "rule base:\n    params:\n        a=1\n    resources:\n        gpu=2\n\n\n"
        "use rule base as child with:\n    params:\n        a=3\n"
    )
    assert "a=3" in _rule_section(text, "child", "params")
    assert "gpu=2" in _rule_section(text, "child", "resources")


@pytest.mark.parametrize("rule", MODEL_RULES)
def test_every_model_rule_passes_the_device(rule):
    params = _rule_section(RULES_TEXT, rule, "params")
    assert '"device"' in params, f"{rule}: its ttp params do not list device"


@pytest.mark.parametrize("rule", MODEL_RULES + HELPER_RULES)
def test_every_model_rule_asks_for_a_gpu_on_cuda(rule):
    resources = _rule_section(RULES_TEXT, rule, "resources")
    assert "gpu=" in resources and "ttp_wf.ttp_gpu(config" in resources, rule


def test_ttp_gpu_follows_the_device():
    from personalir.workflow import ttp as workflow

    for device, want in (("cpu", 0), ("auto", 0), ("cuda", 1), ("cuda:1", 1)):
        cfg = validate_config({"ttp": {"device": device}})
        assert workflow.ttp_gpu(cfg) == want
        assert workflow.ttp_gpu(cfg, "ttp") == want
        assert workflow.ttp_gpu(cfg, "bm25") == 0  # loads no model


def test_run_params_carry_the_device():
    from personalir.workflow import ttp as workflow

    cfg = validate_config({"ttp": {"device": "auto"}})
    for method in ("ttp", "bm25", "dense", "hyde"):
        assert json.loads(workflow.run_params(cfg, method))["device"] == "auto"
    assert json.loads(workflow.run_params(cfg, "ttp", ("evaluation",)))["device"] == "auto"
    assert json.loads(workflow.cache_store_params(cfg))["device"] == "auto"
    assert json.loads(workflow.history_run_params(cfg, 3))["device"] == "auto"
    keys = ("backbone", "lora", "sft", "items", "inference", "selection", "device")
    assert json.loads(workflow.history_params(cfg, 3, keys))["device"] == "auto"


def test_method_context_resolves_the_device(monkeypatch):
    from personalir.ttp.inputs.data import Item, ItemCorpus
    from personalir.ttp.methods.base import method_context

    corpus = ItemCorpus({"I0": Item("I0", "a capo", "Music")})
    ttp = {"items": {"fields": ["title"], "max_features": 3}}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    ctx = method_context(corpus, {**ttp, "device": "auto"}, {}, depth=5, seed=0, threads=1)
    assert ctx.device == "cpu"
    assert method_context(corpus, ttp, {}, depth=5, seed=0, threads=1).device == "cpu"
    with pytest.raises(ValueError, match=r"ttp\.device"):
        method_context(corpus, {**ttp, "device": "cuda"}, {}, depth=5, seed=0, threads=1)


# --------------------------------------------------------------------------- placement
@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_device")
    src = build_tiny_causal_lm(root / "src", architecture="qwen2", tie_word_embeddings=True)
    model, tok, info = prepare_backbone(BackboneConfig(model=str(src), init_noise_std=0.01), 3)
    save_backbone(model, tok, info, root / "backbone")
    model, tok, _ = load_backbone(root / "backbone")
    peft_model = attach_lora(model, tok, LoraSettings(r=4, alpha=8, dropout=0.0), seed=1)
    peft_model.save_pretrained(root / "sft")
    return root


def _encoder(tiny, device="cpu"):
    """test_ttp_model's encoder (same LoRA, lengths and batch size), moved to ``device``."""
    peft_model, enc = _model_encoder(tiny)
    return peft_model.to(device), enc


def _prompts(tok):
    return [
        query_prompt(tok, [f"title: item {i} red", "title: blue strap"], f"capo {i}")
        for i in range(4)
    ]


def test_loaders_move_the_model_to_the_device(tiny):
    """``meta`` stands in for a GPU: the loaders move what they load to the device given."""
    from personalir.ttp.model.backbone import load_adapter
    from personalir.ttp.training import rl

    model, _, _ = load_backbone(tiny / "backbone", device="meta")
    assert {p.device.type for p in model.parameters()} == {"meta"}
    model, _, _ = load_backbone(tiny / "backbone")
    assert {p.device.type for p in model.parameters()} == {"cpu"}
    model = load_adapter(model, tiny / "sft", device="meta")
    assert {p.device.type for p in model.parameters()} == {"meta"}
    policy, _, _ = rl.load_policy(str(tiny / "backbone"), str(tiny / "sft"), device="meta")
    devices = {n: p.device.type for n, p in policy.named_parameters()}
    assert set(devices.values()) == {"meta"}
    assert any(rl.FROZEN_ADAPTER in n for n in devices)  # the reward's scorer moved too


def test_ttp_run_loads_on_the_context_device(tiny):
    from personalir.ttp.inputs.data import Item, ItemCorpus
    from personalir.ttp.methods.base import RetrievalContext, build_retriever

    corpus = ItemCorpus({"I0": Item("I0", "a capo", "Music")})
    models = {"ttp_backbone": str(tiny / "backbone"), "ttp_adapter": str(tiny / "sft")}
    ctx = RetrievalContext(corpus=corpus, models=models, depth=1, device="meta")
    retriever = build_retriever("ttp", ctx)
    retriever.load()
    assert retriever.encoder.device.type == "meta"


def test_encoder_creates_its_tensors_on_the_model_device(tiny):
    _, enc = _encoder(tiny)
    prompts = _prompts(enc.tokenizer)
    items = ["title: a red capo", "title: blue strap", "title: green sticks", "title: d"]
    want_items = enc.encode_items(items)
    want_queries = enc.encode_queries(prompts, ["red capo"] * 4)
    want_gen = enc.generate_and_embed(prompts, 4)
    with strict_device():
        got_items = enc.encode_items(items)
        got_queries = enc.encode_queries(prompts, ["red capo"] * 4)
        got_gen = enc.generate_and_embed(prompts, 4)
    assert np.array_equal(got_items, want_items)
    assert np.array_equal(got_queries, want_queries)
    assert got_gen[0] == want_gen[0] and got_gen[2] == want_gen[2]
    assert np.array_equal(got_gen[1], want_gen[1])


def test_an_sft_step_creates_its_tensors_on_the_model_device(tiny):
    peft_model, enc = _encoder(tiny)
    corpus, records = _world()
    for settings in (
        SFTSettings(item_fields=("title",), max_item_tokens=40, max_query_tokens=400),
        SFTSettings(
            item_fields=("title",),
            max_item_tokens=40,
            max_query_tokens=400,
            token_weight=1.0,
            contrastive_weight=0.0,
        ),
    ):
        rows = build_rows(records, corpus, enc, settings)
        module = TTPLossModule(peft_model, enc, settings)
        want = [float(x) for x in module(*collate(rows[:4], enc))]
        with strict_device():
            batch = collate(rows[:4], enc)
            assert {t.device.type for t in batch if t is not None} == {"cpu"}
            total, tok, nce = module(*batch)
            total.backward()
        assert [float(total), float(tok), float(nce)] == want
        peft_model.zero_grad(set_to_none=True)


def test_grpo_helpers_create_their_tensors_on_the_policy_device(tiny):
    from personalir.ttp.training import grpo, rl

    policy, tok, _ = rl.load_policy(str(tiny / "backbone"), str(tiny / "sft"))
    enc = TTPEncoder(policy, tok, max_query_tokens=256, max_item_tokens=16)
    prompts = _prompts(tok)
    rows = [
        {"query_prompt": p, "rewrite": f"red capo {i}", "target": f"p{i % 3}", "item_text": "x"}
        for i, p in enumerate(prompts)
    ]
    want = float(grpo.contrastive_loss(enc, rows, 0.05))
    with strict_device():
        for share in (True, False):
            loss = grpo.contrastive_loss(enc, rows, 0.05, share_prefix=share)
            loss.backward()
            assert loss.device.type == "cpu"
        ids, mask = enc.pad_left([[5, 6, 7, 8, 9], [5, 6, 10, 11], [5, 6, 7, 8, 12]])
        logps, _ = grpo.grouped_completion_logps(enc.decoder, enc.lm_head, ids, mask, 2)
        assert logps.shape == (3, 2) and logps.device.type == "cpu"
        scorer = grpo.RetrievalScorer(policy, enc, {"p0": "a red capo"}, grpo.FROZEN_ADAPTER)
        assert scorer.items(["p0"]).shape[0] == 1
        assert scorer.queries(prompts[:2], ["a", "b"]).shape[0] == 2
    assert float(grpo.contrastive_loss(enc, rows, 0.05)) == pytest.approx(want, abs=1e-6)
    policy.zero_grad(set_to_none=True)


def test_grpo_config_keeps_a_cpu_policy_on_the_cpu(monkeypatch, tmp_path):
    from personalir.ttp.training import grpo, rl

    settings = grpo.GRPOSettings(group_size=2, prompts_per_step=2)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    # Without a GPU the configuration is what it always was (use_cpu not set).
    assert not rl.grpo_config(settings, str(tmp_path), seed=0, steps=1).use_cpu


# --------------------------------------------------------------------------- a real GPU
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_encoding_and_an_sft_step_match_the_cpu(tiny):
    results = {}
    for device in ("cpu", "cuda"):
        peft_model, enc = _encoder(tiny, device)
        corpus, records = _world()
        settings = SFTSettings(item_fields=("title",), max_item_tokens=40, max_query_tokens=400)
        prompts = _prompts(enc.tokenizer)
        items = enc.encode_items(["title: a red capo", "title: blue strap"])
        queries = enc.encode_queries(prompts, ["red capo"] * 4)
        gen = enc.generate_and_embed(prompts, 4)
        rows = build_rows(records, corpus, enc, settings)
        total, _, _ = TTPLossModule(peft_model, enc, settings)(*collate(rows[:4], enc))
        total.backward()
        assert enc.device.type == device
        results[device] = (items, queries, gen[1], float(total))
    for cpu, gpu in zip(results["cpu"][:3], results["cuda"][:3], strict=True):
        assert np.allclose(cpu, gpu, atol=1e-4)
    assert results["cpu"][3] == pytest.approx(results["cuda"][3], abs=1e-4)
