"""Stand-ins for the paper configuration's hub models: a tiny locally built model of the same
architecture, file layout, tokenizer kind and special tokens for every hub model that
``config/paper.yaml`` names, each in a folder named after its hub id (``org--name``).

:data:`STANDINS` says which builder stands in for which hub repository; :func:`hub_models`
finds every hub model a configuration names (and refuses one without a stand-in), and
:func:`build_standins` builds them all into one folder with a manifest (``standins.json``:
config key -> hub id -> folder). ``config/rehearsal.yaml`` names these folders in the hub
models' places; the rule ``rehearsal_models`` (rules/rehearsal.smk) runs
``python -m personalir.rehearsal.standins``.

The tokenizers are word-level (retrieval encoders, rerankers), byte-level BPE (the Qwen2 query
generator and TTP backbone) or WordPiece (GECToR), as :mod:`.tiny_models` builds them; their
words come from the sample world's own data files, so the rehearsal's texts are mostly in
vocabulary. The weights are random: every output is meaningless, every shape, file and
special token is not.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import yaml

from personalir.common.io import write_json
from personalir.rehearsal import tiny_encoders as te
from personalir.rehearsal import tiny_models as tm

MANIFEST = "standins.json"
VOCABULARY_LIMIT = 6000
# Hub models a configuration names that are not loaded from files: the TTP teacher and the
# judge are served behind OpenAI-compatible endpoints (their names are the server's).
SERVED = {
    "ttp.teacher.model": "the teacher is an OpenAI-compatible server's model (ttp.teacher.type)",
    "validation.judge.model": "the judge is an OpenAI-compatible server's model",
}
# Keys whose values name a model (a config walk looks at these only).
MODEL_KEYS = ("model", "transformer_model")


@dataclass(frozen=True)
class Standin:
    kind: str  # a key of BUILDERS
    what: str  # what the hub model is, for the manifest


# Hub repository (without revision) -> its stand-in.
STANDINS: dict[str, Standin] = {
    "gotutiyan/gector-roberta-large-5k": Standin("gector", "GECToR tagger (Hugging Face format)"),
    "FacebookAI/roberta-large": Standin("roberta_encoder", "GECToR's RoBERTa encoder"),
    "Qwen/Qwen2.5-0.5B-Instruct": Standin("qwen2_chat", "query generator (Qwen2, BPE, ChatML)"),
    "sentence-transformers/all-MiniLM-L6-v2": Standin("bert_encoder", "BERT bi-encoder"),
    "sentence-transformers/all-mpnet-base-v2": Standin("mpnet_encoder", "MPNet bi-encoder"),
    "BAAI/bge-base-en-v1.5": Standin("bert_encoder", "BERT bi-encoder"),
    "thenlper/gte-base": Standin("bert_encoder", "BERT bi-encoder"),
    "naver/splade-cocondenser-ensembledistil": Standin("splade", "BERT MLM (SPLADE)"),
    "BAAI/bge-m3": Standin("bge_m3", "XLM-R + colbert/sparse heads (BGE-M3)"),
    "colbert-ir/colbertv2.0": Standin("colbert", "Stanford ColBERT checkpoint"),
    "Qwen/Qwen3-Reranker-8B": Standin("qwen3_lm", "Qwen3 causal LM, ChatML (yes/no reranker)"),
    "meta-llama/Llama-3.1-8B-Instruct": Standin("llama_lm", "Llama causal LM, Llama-3 chat"),
    "BAAI/bge-reranker-v2-m3": Standin("xlmr_reranker", "XLM-R cross-encoder"),
    "Qwen/Qwen2.5-3B-Instruct": Standin("qwen2_backbone", "TTP backbone (Qwen2, byte BPE)"),
}


def _gector(path: Path, words: list[str]) -> Path:
    # Every word tagged $KEEP: the tagger's whole path runs and changes nothing.
    folder, _ = tm.save_tiny_gector(path, "$KEEP")
    return folder


BUILDERS: dict[str, Callable[[Path, list[str]], Path]] = {
    "gector": _gector,
    "roberta_encoder": te.save_roberta_encoder,
    "qwen2_chat": lambda path, words: Path(tm.build_seed_qwen2(path)),
    "bert_encoder": tm.save_bert_encoder,
    "mpnet_encoder": te.save_mpnet_encoder,
    "splade": tm.save_splade,
    "bge_m3": tm.save_bge_m3,
    "colbert": tm.save_stanford_colbert,
    "qwen3_lm": lambda path, words: tm.save_causal_lm(path, words, arch="qwen3"),
    "llama_lm": lambda path, words: tm.save_causal_lm(path, words, arch="llama"),
    "xlmr_reranker": te.save_xlmr_cross_encoder,
    "qwen2_backbone": lambda path, words: tm.build_tiny_causal_lm(path, architecture="qwen2"),
}
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+(@[0-9a-f]{40})?")


def folder_name(repo_id: str) -> str:
    """The stand-in folder of a hub repository: ``org/name`` -> ``org--name``."""
    return repo_id.replace("/", "--")


def repo_of(name: str) -> str:
    return name.split("@", 1)[0]


def _walk(node, prefix: str = "") -> Iterator[tuple[str, object]]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield from _walk(value, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, node


def hub_models(config: Mapping) -> dict[str, str]:
    """Config key -> hub id of every hub model the configuration names (served models left
    out, see :data:`SERVED`); a hub model without a stand-in raises, naming its key."""
    found = {}
    for key, value in _walk(config):
        if key.rsplit(".", 1)[-1] not in MODEL_KEYS or key in SERVED:
            continue
        if not isinstance(value, str) or not HUB_ID.fullmatch(value):
            continue
        if Path(value).exists():
            continue  # a local folder
        found[key] = value
    missing = {k: v for k, v in found.items() if repo_of(v) not in STANDINS}
    if missing:
        raise KeyError(
            "hub models without a stand-in (add them to personalir.rehearsal.standins."
            f"STANDINS): {missing}"
        )
    return found


def standin_words() -> list[str]:
    """The stand-ins' word list: every word of the sample world's data files and the seed
    queries (digits and yes/no answers first, :func:`~.tiny_models.vocabulary`)."""
    texts: list[str] = []
    package = files("personalir.data.sample_world")
    for folder in ("domains", "tables"):
        for item in sorted(package.joinpath(folder).iterdir(), key=lambda p: p.name):
            if item.name.endswith(".yaml"):
                texts += [str(v) for _, v in _walk(yaml.safe_load(item.read_text("utf-8")))]
    seeds = files("personalir.queries").joinpath("seed_queries.jsonl").read_text("utf-8")
    texts += [json.loads(line)["query"] for line in seeds.splitlines() if line.strip()]
    return tm.vocabulary(texts, limit=VOCABULARY_LIMIT)


def build_standins(config: Mapping, out_dir: str | Path) -> dict:
    """Build one stand-in per hub repository the configuration names into ``out_dir`` and
    write the manifest; returns it. The folder is rebuilt from scratch."""
    out = Path(out_dir)
    models = hub_models(config)
    words = standin_words()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    built: dict[str, dict] = {}
    for repo in sorted({repo_of(v) for v in models.values()}):
        standin = STANDINS[repo]
        folder = out / folder_name(repo)
        model_dir = BUILDERS[standin.kind](folder, words)
        built[repo] = {
            "kind": standin.kind,
            "what": standin.what,
            "folder": model_dir.as_posix(),
            "files": sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")),
        }
    manifest = {
        "models": built,
        "config_keys": {key: built[repo_of(name)]["folder"] for key, name in models.items()},
        "served": SERVED,
        "vocabulary": len(words),
    }
    write_json(out / MANIFEST, manifest)
    return manifest


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True, help="the configuration whose hub models to build")
    ap.add_argument("--out-dir", required=True, help="the stand-ins' folder (rebuilt)")
    args = ap.parse_args(argv)
    config = yaml.safe_load(Path(args.config).read_text(encoding="utf-8"))
    manifest = build_standins(config, args.out_dir)
    for key, folder in sorted(manifest["config_keys"].items()):
        print(f"{key}: {folder}")


if __name__ == "__main__":
    main()
