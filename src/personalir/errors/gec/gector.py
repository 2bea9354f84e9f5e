"""The ``gector`` GEC backend: the paper's GECToR, iterative decoding.

Through the public ``gector`` implementation (gotutiyan, PyPI ``gector==1.2.0``), 3 iterations
as in the paper, from a Hugging Face checkpoint (``gotutiyan/gector-roberta-large-5k``) or an
official Grammarly ``.th`` checkpoint. Needs the verb-form dictionary of the official
repository.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from pathlib import Path

from personalir.common.models import resolve_model
from personalir.errors.gec.base import (
    GEC_BACKENDS,
    GECBackend,
    GECError,
    json_hash,
    package_version,
)


def _detokenize(tokens: list[str]) -> str:
    from quire_grammar.edits import detokenize

    return detokenize(tokens)


def load_gector(params: dict):
    """(model, tokenizer, verb encode dict, verb decode dict) from the configured checkpoint.

    ``GECToR.from_pretrained`` of gector 1.2.0 builds the encoder inside ``__init__`` with
    ``AutoModel.from_pretrained``, which transformers 5 refuses under its meta-device loading.
    So the model is built from its config and the checkpoint's weights are loaded explicitly
    (the same tensors ``from_pretrained`` would load).
    """
    try:
        import torch
        from gector import GECToR, GECToRConfig, load_verb_dict
        from transformers import AutoTokenizer

    except ImportError as exc:
        raise GECError(f"the gector backend needs the `gector` package ({exc})") from None
    verb_dict = params.get("verb_dict")
    if not verb_dict or not Path(verb_dict).is_file():
        raise GECError(
            f"gector.verb_dict must name the official verb-form-vocab.txt, got {verb_dict!r} "
            "(https://github.com/grammarly/gector/raw/master/data/verb-form-vocab.txt)"
        )
    encode, decode = load_verb_dict(verb_dict)
    source = params["model"]
    if params["checkpoint_format"] == "official":
        if not params.get("vocab_path"):
            raise GECError("gector.vocab_path (official output_vocabulary folder) is required")
        # The configured encoder (a hub id at its pinned revision, checked against the model
        # lock, or a folder chosen by the user), given to gector as a local folder.
        encoder = resolve_model(params["transformer_model"], allow_download=True)
        model = GECToR.from_official_pretrained(
            source,
            special_tokens_fix=params["special_tokens_fix"],
            transformer_model=encoder.path,
            vocab_path=params["vocab_path"],
            max_length=params["max_length"],
        )
        tokenizer = AutoTokenizer.from_pretrained(encoder.path)  # nosec B615  # a local folder
    else:
        # The checkpoint the user configured (a folder, or a hub id fetched at its pinned
        # revision and checked against the model lock); weights are read below with
        # safetensors or torch.load(weights_only=True), never unpickled as code.
        local = Path(resolve_model(source, allow_download=True).path)
        config = GECToRConfig.from_pretrained(str(local))
        model = GECToR(config)
        weights = local / "model.safetensors"
        if weights.is_file():
            from safetensors.torch import load_file

            state = load_file(str(weights))
        elif (local / "pytorch_model.bin").is_file():
            state = torch.load(local / "pytorch_model.bin", map_location="cpu", weights_only=True)
        else:
            raise GECError(f"no model.safetensors or pytorch_model.bin in {local}")
        missing, unexpected = model.load_state_dict(state, strict=False)
        # The encoder's pooler is unused by GECToR; anything else missing is a broken checkpoint.
        missing = [k for k in missing if "pooler" not in k]
        if missing:
            raise GECError(f"checkpoint {source} lacks weights: {missing[:5]}")
        local_dir = str(local)
        tokenizer = AutoTokenizer.from_pretrained(local_dir)  # nosec B615  # a local folder
    # transformers 5 no longer keeps generation keys such as max_length on a config.
    model.config.max_length = params["max_length"]
    device = params["device"]
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    model = model.to(device).eval()
    return model, tokenizer, encode, decode


@GEC_BACKENDS.register("gector")
class GectorBackend(GECBackend):
    """GECToR through the public ``gector`` package, iterative decoding."""

    name = "gector"
    cacheable = True

    def __init__(self, params: dict, *, threads: int = 1):
        super().__init__(params, threads=threads)
        import spacy
        import torch

        torch.set_num_threads(max(1, threads))
        self.model, self.tokenizer, self.encode, self.decode = load_gector(params)
        self._split = spacy.blank("en").tokenizer
        self.counters = {"sentences_corrected": 0}

    def fingerprint(self) -> str:
        keys = (
            "model",
            "checkpoint_format",
            "transformer_model",
            "special_tokens_fix",
            "n_iterations",
            "keep_confidence",
            "min_error_prob",
            "max_length",
        )
        verb = Path(self.params["verb_dict"]).read_bytes()
        return json_hash(
            {
                "backend": self.name,
                "gector": package_version("gector"),
                "transformers": package_version("transformers"),
                "params": {k: self.params.get(k) for k in keys},
                "verb_dict": hashlib.sha256(verb).hexdigest(),
            }
        )

    def correct(self, sentences: list[str]) -> list[str]:
        from gector import predict

        token_lists = [[t.text for t in self._split(s) if not t.is_space] for s in sentences]
        srcs = [" ".join(toks) for toks in token_lists]
        keep = [i for i, s in enumerate(srcs) if s]
        with contextlib.redirect_stdout(io.StringIO()):  # the package prints per iteration
            preds = (
                predict(
                    self.model,
                    self.tokenizer,
                    [srcs[i] for i in keep],
                    self.encode,
                    self.decode,
                    keep_confidence=self.params["keep_confidence"],
                    min_error_prob=self.params["min_error_prob"],
                    batch_size=self.params["batch_size"],
                    n_iteration=self.params["n_iterations"],
                )
                if keep
                else []
            )
        out = list(sentences)
        for i, pred in zip(keep, preds, strict=True):
            tokens = pred.split(" ") if pred else []
            if tokens != token_lists[i]:
                out[i] = _detokenize(tokens)
                self.counters["sentences_corrected"] += 1
        return out
