"""The TTP backbone: a causal LM with ``<think>``, ``</think>``, ``<embed>`` added, and its LoRA.

:func:`prepare_backbone` loads the configured causal LM (the packaged SmolLM2-135M-Instruct
GGUF, dequantised, by default; ``Qwen/Qwen2.5-3B-Instruct`` at paper scale), optionally keeps
only its first ``num_layers`` decoder layers (a sample-scale economy that the outputs name),
adds the three special tokens with new embedding rows set to the mean of the existing rows
plus small Gaussian noise, and unties the output layer (as the reference code does) so the
new tokens get their own output rows. The prepared backbone is saved once (safetensors) and
every later step loads it.

:func:`attach_lora` puts LoRA on every attention and MLP projection and makes the new tokens'
input and output rows trainable (peft's trainable tokens), nothing else.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from personalir.common.causal_lm import load_causal_lm
from personalir.common.device import to_device
from personalir.common.hf_files import stable_tokenizer_config
from personalir.common.io import write_json
from personalir.common.models import resolve_model
from personalir.common.seeding import derive_seed
from personalir.ttp.model.prompts import (
    THINK_CLOSE,
    THINK_OPEN,
    special_tokens,
    use_embedding_token,
)

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
BACKBONE_INFO = "ttp_backbone.json"


@dataclass(frozen=True)
class BackboneConfig:
    model: str = "packaged:SmolLM2-135M-Instruct"
    num_layers: int | None = None
    untie_lm_head: bool = True
    init_noise_std: float = 0.01
    dtype: str = "float32"
    allow_download: bool = False
    embedding_token: str = "<embed>"

    @classmethod
    def from_config(cls, section: dict) -> BackboneConfig:
        return cls(**{k: section[k] for k in cls.__dataclass_fields__ if k in section})


@dataclass(frozen=True)
class LoraSettings:
    r: int = 16
    alpha: int = 32
    dropout: float = 0.1
    target_modules: tuple[str, ...] = LORA_TARGETS

    @classmethod
    def from_config(cls, section: dict) -> LoraSettings:
        return cls(
            r=int(section["r"]),
            alpha=int(section["alpha"]),
            dropout=float(section["dropout"]),
            target_modules=tuple(section["target_modules"]),
        )


@dataclass
class BackboneInfo:
    model: str
    architecture: str
    num_layers: int
    num_layers_original: int
    hidden_size: int
    parameters: int
    special_token_ids: dict = field(default_factory=dict)
    description: str = ""


def _torch_dtype(name: str):
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


def _decoder_layers(model):
    base = getattr(model, model.base_model_prefix)
    return base, base.layers


def prepare_backbone(cfg: BackboneConfig, seed: int, model_cache: str | Path | None = None):
    """Load, truncate, add special tokens (mean init), untie. Returns (model, tokenizer, info).

    A GGUF model (the packaged SmolLM2) is dequantised to float32 on load; with
    ``model_cache`` the dequantised copy the other stages share is read (or filled) instead,
    the same tensors and tokenizer (:func:`personalir.common.causal_lm.load_causal_lm`)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    use_embedding_token(cfg.embedding_token)
    ref = resolve_model(cfg.model, allow_download=cfg.allow_download)
    if ref.gguf_file:
        model, tokenizer = load_causal_lm(ref, cache_dir=model_cache)
        model = model.to(_torch_dtype(cfg.dtype))
    else:
        # ref.path is a local folder (resolve_model), not a hub id.
        tokenizer = AutoTokenizer.from_pretrained(ref.path)  # nosec B615
        model = AutoModelForCausalLM.from_pretrained(  # nosec B615
            ref.path, dtype=_torch_dtype(cfg.dtype)
        )
    base, layers = _decoder_layers(model)
    original = len(layers)
    if cfg.num_layers is not None:
        if not 1 <= cfg.num_layers <= original:
            raise ValueError(f"num_layers {cfg.num_layers} outside 1..{original}")
        base.layers = torch.nn.ModuleList(list(layers)[: cfg.num_layers])
        model.config.num_hidden_layers = cfg.num_layers
        if getattr(model.config, "layer_types", None):
            model.config.layer_types = list(model.config.layer_types)[: cfg.num_layers]
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    added = list(special_tokens())
    tokenizer.add_tokens(added, special_tokens=True)
    ids = tokenizer.convert_tokens_to_ids(added)
    was_tied = bool(getattr(model.config, "tie_word_embeddings", False))
    old = model.get_input_embeddings().weight.detach().clone()
    model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    gen = torch.Generator().manual_seed(seed % (2**63))
    with torch.no_grad():
        emb = model.get_input_embeddings().weight
        mean, std = old.mean(0), old.std(0)
        for tid in ids:
            noise = torch.randn(old.shape[1], generator=gen) * std * cfg.init_noise_std
            emb[tid] = (mean + noise).to(emb.dtype)
        if cfg.untie_lm_head and was_tied:
            model.lm_head.weight = torch.nn.Parameter(emb.detach().clone())
            model.config.tie_word_embeddings = False
            if hasattr(model, "_tied_weights_keys"):
                model._tied_weights_keys = {}
        elif not was_tied:
            head = model.get_output_embeddings().weight
            head_mean = head[: old.shape[0]].mean(0)
            for tid in ids:
                head[tid] = head_mean
    model.config.pad_token_id = tokenizer.pad_token_id
    info = BackboneInfo(
        model=cfg.model,
        architecture=type(model).__name__,
        num_layers=len(_decoder_layers(model)[1]),
        num_layers_original=original,
        hidden_size=int(model.config.hidden_size),
        parameters=int(sum(p.numel() for p in model.parameters())),
        special_token_ids=dict(zip(added, ids, strict=True)),
    )
    info.description = describe_backbone(info)
    return model, tokenizer, info


def describe_backbone(info: BackboneInfo) -> str:
    name = info.model.split(":", 1)[-1]
    if info.num_layers < info.num_layers_original:
        return f"{name} (first {info.num_layers} of {info.num_layers_original} layers)"
    return name


def save_backbone(model, tokenizer, info: BackboneInfo, out_dir: str | Path) -> None:

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # One weights file whatever the size (the workflow declares it as a temporary output).
    model.save_pretrained(out_dir, max_shard_size="1000GB")
    tokenizer.save_pretrained(out_dir)
    stable_tokenizer_config(out_dir)
    write_json(out_dir / BACKBONE_INFO, asdict(info))


def load_backbone(path: str | Path, dtype: str = "float32", device: str = "cpu"):
    """A prepared backbone folder -> (model, tokenizer, info), the model on ``device``
    (loaded on the CPU, then moved; ``ttp.device``)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(path)
    tokenizer = AutoTokenizer.from_pretrained(path)  # nosec B615  # a local backbone folder
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(  # nosec B615  # a local backbone folder
        path, dtype=_torch_dtype(dtype)
    )
    info = BackboneInfo(**json.loads((path / BACKBONE_INFO).read_text()))
    names = sorted(info.special_token_ids, key=info.special_token_ids.get)  # order added
    if len(names) != 3 or names[:2] != [THINK_OPEN, THINK_CLOSE]:
        raise ValueError(f"{path / BACKBONE_INFO}: special tokens {names} are not TTP's")
    use_embedding_token(names[2])  # the token this backbone was prepared with
    return to_device(model, device), tokenizer, info


def attach_lora(model, tokenizer, lora: LoraSettings, *, seed: int):
    """LoRA on the configured projections plus the new tokens' rows. The LoRA A matrices are
    drawn from torch's global generator, so it is seeded here: B starts at zero, so the first
    step's loss cannot tell an unseeded A, but every later step would differ run to run."""
    import torch
    from peft import LoraConfig, get_peft_model

    ids = tokenizer.convert_tokens_to_ids(list(special_tokens()))
    trainable = {"embed_tokens": ids}
    if not getattr(model.config, "tie_word_embeddings", False):
        trainable["lm_head"] = ids
    config = LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=list(lora.target_modules),
        trainable_token_indices=trainable,
        task_type="CAUSAL_LM",
    )
    torch.manual_seed(derive_seed(seed, "ttp_lora_init") % (2**63))
    return get_peft_model(model, config)


def load_adapter(model, adapter_dir: str | Path, device: str = "cpu"):
    """``model`` with the saved adapter, moved to ``device`` (load both on the CPU and move
    once: the adapter's tensors then follow the model wherever it goes)."""
    from peft import PeftModel

    return to_device(PeftModel.from_pretrained(model, str(adapter_dir)), device)
