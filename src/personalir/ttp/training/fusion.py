"""History-fusion baselines of Table 4: UIA and MAPs-style, one small trained attention module
on the frozen query-only bi-encoder.

``uia``   UIA (Zeng et al., SIGIR 2023: a unified personalised dense retriever whose query
          attends over the user's history). Ours: one attention layer. The query vector q
          attends over the selected history's vectors H (query, key and value projections,
          initialised to the identity, so the untrained module is plain attention pooling),
          and a learnt scale alpha adds the pooled vector to the query:
          ``q' = norm(q + alpha * attn(q, H))``.
``maps``  MAPs (Qin et al., ACL 2025: motivation-aware personalised search, built from
          LLM-derived consultation/motivation texts, a mixture of attention experts and dual
          alignment). Ours: ``experts`` attention experts over the history, mixed by a gate
          on the query (softmax, uniform at initialisation). Training adds a
          motivation-alignment term: InfoNCE of the mixed history summary (before it is added
          to q) against the items, so the summary aligns with what the user buys next. Our
          data has no consultations and no LLM-written motivations, so the motivation is
          that summary.

Both encode with the fine-tuned query-only dense bi-encoder (role ``dense``), frozen.
Training (rule ``ttp_fusion``, :func:`fit_fusion`) minimises InfoNCE of the fused query
against every item of the example's set (temperature ``ttp.fusion.temperature``, Adam),
seeded, on split ``train``. After each epoch the validation split ranks its candidate pool
(as every selection does, :mod:`personalir.ttp.training.selection`); the best epoch's weights are
kept, the earlier among equals. An empty history leaves the query as it is.

The module is saved with a fingerprint of the bi-encoder's files; :func:`load_fusion` refuses
a module trained on another encoder.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from personalir.common.device import ttp_device
from personalir.common.io import read_json, write_json
from personalir.common.seeding import derive_seed, rng
from personalir.ttp.inputs.data import ItemCorpus, item_fields, read_examples
from personalir.ttp.model.bi_encoder import (
    st_encode as _st_encode,
)
from personalir.ttp.model.bi_encoder import (
    st_encoder as _st_encoder,
)
from personalir.ttp.model.search import exact_search, per_query_measures
from personalir.ttp.training.selection import SelectionSettings, candidate_pool

KINDS = ("uia", "maps")


@dataclass(frozen=True)
class FusionSettings:
    epochs: int = 8
    batch_size: int = 32
    learning_rate: float = 1e-3
    temperature: float = 0.05
    experts: int = 4

    @classmethod
    def from_config(cls, ttp: Mapping) -> FusionSettings:
        section = ttp.get("fusion") or {}
        return cls(**{k: section[k] for k in cls.__dataclass_fields__ if k in section})


def experts_of(kind: str, settings: FusionSettings) -> int:
    if kind not in KINDS:
        raise ValueError(f"unknown fusion kind {kind!r}; expected one of {KINDS}")
    return 1 if kind == "uia" else int(settings.experts)


def _module(dim: int, experts: int, noise_scale: float | None = None):
    import torch

    class HistoryFusion(torch.nn.Module):
        """``experts`` single-head attentions of q over H; a gate on q mixes them (one
        expert: no gate); ``fuse`` returns (fused query, mixed summary, gate weights)."""

        def __init__(self):
            super().__init__()
            eye = torch.eye(dim).repeat(experts, 1, 1)

            def init():
                # Several experts start apart (identity plus seeded noise, drawn from torch's
                # generator that training seeds): identical experts get identical gradients
                # and never specialise. One expert (UIA) starts at the identity exactly.
                noise = noise_scale if noise_scale is not None else 0.1 / float(np.sqrt(dim))
                if experts == 1 or noise == 0:
                    return eye.clone()
                return eye + noise * torch.randn(experts, dim, dim)

            self.w_q = torch.nn.Parameter(init())
            self.w_k = torch.nn.Parameter(init())
            self.w_v = torch.nn.Parameter(init())
            self.gate = torch.nn.Parameter(torch.zeros(experts, dim))
            self.alpha = torch.nn.Parameter(torch.tensor(0.5))

        def fuse(self, q, h, mask):
            # q (B, d), h (B, L, d), mask (B, L) True for real history entries
            qe = torch.einsum("bd,edf->bef", q, self.w_q)  # (B, E, d)
            ke = torch.einsum("bld,edf->belf", h, self.w_k)  # (B, E, L, d)
            ve = torch.einsum("bld,edf->belf", h, self.w_v)
            scores = torch.einsum("bef,belf->bel", qe, ke) / float(np.sqrt(dim))
            scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
            has = mask.any(dim=1)
            attn = torch.softmax(scores.masked_fill(~has[:, None, None], 0.0), dim=-1)
            pooled = torch.einsum("bel,belf->bef", attn, ve)  # (B, E, d)
            gate = (
                torch.softmax(q @ self.gate.T, dim=-1)
                if experts > 1
                else q.new_ones((q.shape[0], 1))
            )
            mixed = torch.einsum("be,bef->bf", gate, pooled) * has[:, None]
            fused = torch.nn.functional.normalize(q + self.alpha * mixed, dim=-1)
            return fused, mixed, gate

    return HistoryFusion()


def _batch(q: np.ndarray, hist: Sequence[np.ndarray], dim: int):
    import torch

    width = max([len(h) for h in hist] + [1])
    h = np.zeros((len(hist), width, dim), np.float32)
    m = np.zeros((len(hist), width), bool)
    for i, x in enumerate(hist):
        if len(x):
            h[i, : len(x)] = x
            m[i, : len(x)] = True
    return torch.from_numpy(np.asarray(q, np.float32)), torch.from_numpy(h), torch.from_numpy(m)


def fuse(module, q: np.ndarray, hist: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Fused queries (normalised) and gate weights for query vectors and history matrices."""
    import torch

    if len(q) == 0:
        return np.zeros((0, module.w_q.shape[-1]), np.float32), np.zeros((0, 1), np.float32)
    with torch.no_grad():
        fused, _, gate = module.fuse(*_batch(q, hist, module.w_q.shape[-1]))
    return fused.numpy().astype(np.float32), gate.numpy().astype(np.float32)


def train_fusion(
    kind: str,
    train: Sequence[tuple[np.ndarray, np.ndarray, int]],
    items: np.ndarray,
    settings: FusionSettings,
    *,
    seed: int,
    validate=None,
    log=print,
) -> tuple[object, dict]:
    """Train on ``(query vector, history matrix, target item row)`` triples against every
    item of ``items``; ``validate(module) -> float`` scores an epoch (None: the last epoch
    is kept). Returns the module with the kept epoch's weights and the selection record."""
    import torch

    dim = items.shape[1]
    torch.manual_seed(derive_seed(seed, "ttp_fusion", kind) % (2**63))
    module = _module(dim, experts_of(kind, settings))
    opt = torch.optim.Adam(module.parameters(), lr=settings.learning_rate)
    item_t = torch.from_numpy(np.asarray(items, np.float32))
    epochs = []
    best, best_state = -np.inf, None
    for epoch in range(1, int(settings.epochs) + 1):
        order = rng(seed, "ttp_fusion", kind, epoch).permutation(len(train))
        losses = []
        for start in range(0, len(order), settings.batch_size):
            rows = [train[i] for i in order[start : start + settings.batch_size]]
            q, h, m = _batch(np.stack([r[0] for r in rows]), [r[1] for r in rows], dim)
            target = torch.tensor([r[2] for r in rows])
            fused, mixed, _ = module.fuse(q, h, m)
            loss = torch.nn.functional.cross_entropy(
                fused @ item_t.T / settings.temperature, target
            )
            if kind == "maps" and bool(m.any()):
                has = m.any(dim=1)
                summary = torch.nn.functional.normalize(mixed[has], dim=-1)
                loss = loss + torch.nn.functional.cross_entropy(
                    summary @ item_t.T / settings.temperature, target[has]
                )
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
        record = {"epoch": epoch, "loss": round(float(np.mean(losses)), 6)}
        if validate is not None:
            module.eval()
            record["validation"] = round(float(validate(module)), 6)
            module.train()
            if record["validation"] > best:
                best = record["validation"]
                best_state = {k: v.detach().clone() for k, v in module.state_dict().items()}
        log(json.dumps(record))
        epochs.append(record)
    if best_state is not None:
        module.load_state_dict(best_state)
    chosen = (
        max(epochs, key=lambda r: (r["validation"], -r["epoch"]))["epoch"]
        if validate is not None
        else len(epochs)
    )
    module.eval()
    return module, {"epochs": epochs, "chosen": chosen}


def folder_fingerprint(folder: str | Path) -> str:
    """sha256 over the sorted relative names and bytes of a model folder's files (or one file,
    or a model name that is no path); provenance records, Markdown, hidden files and caches
    are left out."""
    path = Path(folder)
    h = hashlib.sha256()
    if not path.exists():
        h.update(str(folder).encode())
        return h.hexdigest()
    files = sorted(p for p in ([path] if path.is_file() else path.rglob("*")) if p.is_file())
    for p in files:
        rel = p.relative_to(path) if path.is_dir() else Path(p.name)
        # Only the model's own files: the workflow writes provenance records and integrity
        # sidecars into model folders after training, which must not change the fingerprint.
        if (
            p.name == "provenance.json"
            or p.suffix == ".md"
            or any(part.startswith(".") or part == "__pycache__" for part in rel.parts)
        ):
            continue
        h.update(p.relative_to(path if path.is_dir() else path.parent).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def save_fusion(module, folder: str | Path, meta: Mapping) -> None:
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / "fusion.safetensors.tmp"
    save_file({k: v.contiguous() for k, v in module.state_dict().items()}, str(tmp))
    tmp.replace(folder / "fusion.safetensors")
    write_json(folder / "fusion.json", dict(meta))


def load_fusion(folder: str | Path, dense_model: str | Path):
    """The saved module; refuses one trained on another bi-encoder than ``dense_model``."""
    from safetensors.torch import load_file

    meta = read_json(Path(folder) / "fusion.json")
    fp = folder_fingerprint(dense_model)
    if meta["dense_fingerprint"] != fp:
        raise ValueError(
            f"{folder}: this {meta['kind']} module was trained on the bi-encoder "
            f"{meta['dense_model']} (fingerprint {meta['dense_fingerprint'][:12]}), not on "
            f"{dense_model} ({fp[:12]}): retrain it (rule ttp_fusion)"
        )
    module = _module(int(meta["dim"]), int(meta["experts"]))
    module.load_state_dict(load_file(str(Path(folder) / "fusion.safetensors")))
    module.eval()
    return module, meta


def _encode_sets(encoder, sets, fields, max_features):
    """Per set: item ids, item vectors, and a function example -> (q, H, target row)."""
    out = []
    for examples, corpus in sets:
        texts = corpus.texts(fields, max_features)
        items = _st_encode(encoder, texts)
        row = {i: k for k, i in enumerate(corpus.ids)}
        need = sorted({i for ex in examples for i in (ex.selected_history or [])})
        hv = dict(
            zip(
                need,
                _st_encode(encoder, [corpus[i].text(fields, max_features) for i in need]),
                strict=True,
            )
        )
        qv = _st_encode(encoder, [ex.query for ex in examples])
        triples = [
            (
                qv[k],
                np.asarray([hv[i] for i in (ex.selected_history or [])], np.float32).reshape(
                    -1, items.shape[1]
                ),
                row[ex.target],
            )
            for k, ex in enumerate(examples)
        ]
        out.append((list(corpus.ids), items, triples))
    return out


def fit_fusion(
    *,
    kind: str,
    examples_paths: Sequence[str | Path],
    items_paths: Sequence[str | Path],
    dense_model: str,
    ttp: Mapping,
    seed: int,
    threads: int,
    out_dir: str | Path,
    report_out: str | Path,
    log=print,
) -> dict:
    """Rule ttp_fusion: train one fusion module on every set's training examples, the epoch
    kept chosen on the validation examples; save it with its report."""
    import torch

    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    settings = FusionSettings.from_config(ttp)
    sel = SelectionSettings.from_config(ttp)
    fields, max_features = item_fields(ttp), int(ttp["items"]["max_features"])
    # The bi-encoder on ``ttp.device``; the fusion module (a few small matrices over its
    # embeddings) trains on the CPU whatever the device.
    encoder = _st_encoder(dense_model, ttp_device(ttp))
    loaded = [
        (read_examples(e), ItemCorpus.read(i))
        for e, i in zip(examples_paths, items_paths, strict=True)
    ]
    train_sets = [([x for x in ex if x.split == "train"], c) for ex, c in loaded]
    valid_sets = [([x for x in ex if x.split == "valid"], c) for ex, c in loaded]
    encoded_train = _encode_sets(encoder, train_sets, fields, max_features)
    encoded_valid = _encode_sets(encoder, valid_sets, fields, max_features)
    if len(encoded_train) != 1:
        raise ValueError("ttp_fusion trains on one example set (ttp.domains with one domain)")
    ids, items, train = encoded_train[0]
    if not train:
        raise ValueError(f"{examples_paths[0]}: no training examples")
    valid_examples, valid_corpus = valid_sets[0]
    _, _, valid = encoded_valid[0]

    def validate(module):
        pool = candidate_pool(valid_examples, valid_corpus, sel.pool_size, seed)
        rows = [ids.index(i) for i in pool]
        fused, _ = fuse(module, np.stack([t[0] for t in valid]), [t[1] for t in valid])
        ranking = exact_search(
            [e.example_id for e in valid_examples], fused, pool, items[rows], 100
        )
        run = {q: [d for d, _ in docs] for q, docs in ranking.items()}
        return float(per_query_measures(valid_examples, run, kind)[sel.measure].mean())

    module, selection = train_fusion(
        kind, train, items, settings, seed=seed, validate=validate if valid else None, log=log
    )
    meta = {
        "kind": kind,
        "dim": int(items.shape[1]),
        "experts": experts_of(kind, settings),
        "settings": asdict(settings),
        "dense_model": str(dense_model),
        "dense_fingerprint": folder_fingerprint(dense_model),
        "selection": {"measure": sel.measure, "pool_size": sel.pool_size, **selection},
    }
    save_fusion(module, out_dir, meta)
    report = {
        **meta,
        "train_examples": len(train),
        "valid_examples": len(valid),
        "train_without_history": sum(1 for t in train if len(t[1]) == 0),
        "items": len(ids),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    write_json(report_out, report)
    log(json.dumps({k: v for k, v in report.items() if k != "settings"}))
    return report
