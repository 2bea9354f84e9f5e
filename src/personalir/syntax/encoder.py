"""Same-product contrastive encoder: sparse rule vectors -> a low-dimensional style space.

Architecture (reference code): truncated SVD of the rule vectors (fitted on ``train``), then
an MLP (SVD -> hidden ... -> dim) and L2 normalisation. The SVD scores are centred and divided
by one global scale (their root mean variance), which keeps the singular spectrum: whitening
each direction to unit variance amplified rare-rule noise and cost several points of
attribution accuracy on the sample world.

Training signal: a *cohort* is a product with at least two reviewers among the users being
modelled. A batch holds whole cohorts; from each cohort member it takes up to
``sentences_per_user`` training sentences, the ones written about that product first. The loss
is multi-positive InfoNCE (supervised contrastive, temperature ``tau``) in which an anchor's
positives are the other sentences of its user and its denominator holds only sentences of its
own cohort: the anchor has to be told apart from people who wrote about the same product, so
product topic cannot be the cue and the space learns how a user writes, not what about.
Early stopping watches the same loss on ``calib`` sentences (fixed batches).

Rule step syntax_encoder (:func:`run_encoder`): train on the rule vectors of the features step,
save the weights, and embed every usable sentence for the profile and attribution steps.
"""

from __future__ import annotations

import copy
import json
import logging
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import scipy.sparse as sp
import torch
from torch import nn

from personalir.common.artifacts import StageInputError, read_reviewers
from personalir.common.io import atomic_path, read_parquet_table, write_json, write_parquet
from personalir.common.seeding import derive_seed, rng
from personalir.syntax.features import load_csr
from personalir.syntax.protocols import product_user_labels

log = logging.getLogger("personalir.syntax")


@dataclass(frozen=True)
class EncoderSettings:
    svd_dim: int = 256
    hidden: tuple[int, ...] = (128,)
    dim: int = 16
    temperature: float = 0.1
    epochs: int = 30
    patience: int = 5
    batch_size: int = 128
    lr: float = 3e-3
    weight_decay: float = 0.0
    sentences_per_user: int = 8
    max_users_per_cohort: int = 16
    dropout: float = 0.0

    @classmethod
    def from_config(cls, section: dict) -> EncoderSettings:
        fields = {k: section[k] for k in cls.__dataclass_fields__}
        fields["hidden"] = tuple(fields["hidden"])
        return cls(**fields)


class StyleMLP(nn.Module):
    def __init__(self, n_in: int, hidden: tuple[int, ...], dim: int, dropout: float = 0.0):
        super().__init__()
        layers: list[nn.Module] = [nn.Dropout(dropout)] if dropout > 0 else []
        width = n_in
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
            width = h
        layers.append(nn.Linear(width, dim))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.normalize(self.net(x), dim=-1)


@dataclass
class Cohort:
    product: str
    rows: np.ndarray  # sentence rows
    users: np.ndarray  # user label per row (int)


def build_cohorts(
    rows_by_user: dict[int, np.ndarray],
    row_product: np.ndarray,
    product_users: dict[str, list[int]],
    settings: EncoderSettings,
    generator: np.random.Generator,
) -> list[Cohort]:
    """One cohort per product with >= 2 modelled users that have sentences in this split."""
    cohorts = []
    for product in sorted(product_users):
        users = [u for u in product_users[product] if len(rows_by_user.get(u, ())) >= 2]
        if len(users) < 2:
            continue
        if len(users) > settings.max_users_per_cohort:
            users = sorted(generator.choice(users, settings.max_users_per_cohort, replace=False))
        rows, labels = [], []
        for u in users:
            mine = rows_by_user[u]
            about = mine[row_product[mine] == product]
            rest = mine[row_product[mine] != product]
            take = np.concatenate([generator.permutation(about), generator.permutation(rest)])
            take = take[: settings.sentences_per_user]
            rows.append(take)
            labels.append(np.full(len(take), u))
        cohorts.append(Cohort(product, np.concatenate(rows), np.concatenate(labels)))
    return cohorts


def pack_batches(
    cohorts: list[Cohort], batch_size: int, generator, max_rows: int | None = None
) -> list[list[Cohort]]:
    """Shuffle cohorts and pack them into batches of >= ``batch_size`` rows; stop once
    ``max_rows`` rows are packed (an epoch is one pass's worth of sentences, not every cohort:
    a user reviews many products, so all cohorts would show each sentence several times)."""
    order = generator.permutation(len(cohorts))
    batches, current, size, total = [], [], 0, 0
    for i in order:
        if max_rows is not None and total >= max_rows:
            break
        total += len(cohorts[i].rows)
        current.append(cohorts[i])
        size += len(cohorts[i].rows)
        if size >= batch_size:
            batches.append(current)
            current, size = [], 0
    if current:
        batches.append(current)
    return batches


def cohort_infonce(z: torch.Tensor, users: torch.Tensor, cohort: torch.Tensor, tau: float):
    """Multi-positive InfoNCE; the softmax of each anchor runs over its own cohort only.

    Returns ``(mean loss over anchors with >= 1 positive and >= 1 negative, n_anchors)``.
    """
    sim = z @ z.T / tau
    n = z.shape[0]
    eye = torch.eye(n, dtype=torch.bool, device=z.device)
    same_cohort = cohort[:, None] == cohort[None, :]
    pos = same_cohort & (users[:, None] == users[None, :]) & ~eye
    neg = same_cohort & (users[:, None] != users[None, :])
    valid = pos.any(1) & neg.any(1)
    if not bool(valid.any()):
        return z.sum() * 0.0, 0
    logits = sim.masked_fill(~(same_cohort & ~eye), float("-inf"))
    log_prob = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    pos_f = pos.float()
    per_anchor = -(log_prob.masked_fill(~pos, 0.0) * pos_f).sum(1) / pos_f.sum(1).clamp(min=1)
    return per_anchor[valid].mean(), int(valid.sum())


def _batch_tensors(batch: list[Cohort], x: torch.Tensor):
    rows = np.concatenate([c.rows for c in batch])
    users = torch.from_numpy(np.concatenate([c.users for c in batch]).astype(np.int64))
    cohort = torch.from_numpy(
        np.concatenate([np.full(len(c.rows), i) for i, c in enumerate(batch)]).astype(np.int64)
    )
    return x[torch.from_numpy(rows)], users, cohort


@dataclass
class SVDProjection:
    components: np.ndarray  # (k, vocab)
    mean: np.ndarray  # (k,) standardisation of the projected scores
    scale: np.ndarray  # (k,)

    def transform(self, x: sp.csr_matrix) -> np.ndarray:
        return ((x @ self.components.T - self.mean) / self.scale).astype(np.float32)


def fit_svd(x_train: sp.csr_matrix, n_components: int, seed: int) -> SVDProjection:
    from sklearn.decomposition import TruncatedSVD

    k = int(min(n_components, x_train.shape[1] - 1, x_train.shape[0] - 1))
    if k < 1:
        raise ValueError(f"cannot fit an SVD on a {x_train.shape} matrix")
    svd = TruncatedSVD(k, algorithm="randomized", n_iter=7, random_state=seed % 2**32)
    scores = svd.fit_transform(x_train)
    comps = svd.components_.astype(np.float32)
    # Deterministic signs: the largest-magnitude entry of each component is positive.
    flip = np.sign(comps[np.arange(k), np.abs(comps).argmax(1)])
    comps *= flip[:, None]
    scores = scores * flip
    mean = scores.mean(0)
    # One global scale (root mean variance): unit-size inputs with the spectrum kept.
    rms = float(np.sqrt(((scores - mean) ** 2).mean())) or 1.0
    scale = np.full(k, rms, dtype=np.float32)
    return SVDProjection(comps, mean.astype(np.float32), scale)


@dataclass
class TrainedEncoder:
    settings: EncoderSettings
    svd: SVDProjection
    mlp: StyleMLP
    history: list[dict] = field(default_factory=list)
    best_epoch: int = 0
    stopped_early: bool = False

    @torch.no_grad()
    def encode(self, x: sp.csr_matrix, batch: int = 4096) -> np.ndarray:
        self.mlp.eval()
        proj = self.svd.transform(x)
        out = [
            self.mlp(torch.from_numpy(proj[i : i + batch])).numpy()
            for i in range(0, proj.shape[0], batch)
        ]
        return np.concatenate(out) if out else np.zeros((0, self.settings.dim), np.float32)

    def save(self, weights_path: str | Path, meta_path: str | Path, vocabulary: list[str]):
        """Weights as safetensors; vocabulary, settings and history as JSON beside them."""
        from safetensors.torch import save_file

        tensors = {
            "svd.components": torch.from_numpy(np.ascontiguousarray(self.svd.components)),
            "svd.mean": torch.from_numpy(self.svd.mean),
            "svd.scale": torch.from_numpy(self.svd.scale),
        }
        tensors.update(
            {f"mlp.{k}": v.detach().contiguous() for k, v in self.mlp.state_dict().items()}
        )
        with atomic_path(weights_path, suffix=".safetensors") as tmp:
            save_file(tensors, str(tmp), metadata={"format": "personalir-syntax-encoder-1"})
        meta = {
            "settings": asdict(self.settings),
            "svd_dim": int(self.svd.components.shape[0]),
            "vocabulary": list(vocabulary),
            "best_epoch": self.best_epoch,
            "stopped_early": self.stopped_early,
            "history": self.history,
        }

        write_json(meta_path, meta)


def load_encoder(weights_path: str | Path, meta_path: str | Path) -> tuple[TrainedEncoder, list]:
    from safetensors.torch import load_file

    meta = json.loads(Path(meta_path).read_text(encoding="utf-8"))
    settings = EncoderSettings(**{**meta["settings"], "hidden": tuple(meta["settings"]["hidden"])})
    tensors = load_file(str(weights_path))
    svd = SVDProjection(
        tensors["svd.components"].numpy(), tensors["svd.mean"].numpy(), tensors["svd.scale"].numpy()
    )
    mlp = StyleMLP(meta["svd_dim"], settings.hidden, settings.dim, settings.dropout)
    mlp.load_state_dict({k[4:]: v for k, v in tensors.items() if k.startswith("mlp.")})
    enc = TrainedEncoder(
        settings, svd, mlp, meta["history"], meta["best_epoch"], meta["stopped_early"]
    )
    return enc, meta["vocabulary"]


def train_encoder(
    x: sp.csr_matrix,
    user_label: np.ndarray,
    split: np.ndarray,
    row_product: np.ndarray,
    product_users: dict[str, list[int]],
    settings: EncoderSettings,
    *,
    seed: int,
    log=None,
) -> TrainedEncoder:
    """Fit the SVD and the MLP on ``train`` rows; early-stop on the ``calib`` loss.

    ``user_label`` is an int per row, ``product_users`` maps a product to the int labels of
    its modelled reviewers, ``row_product`` is the product each sentence's review is about.
    """
    train_rows = np.flatnonzero(split == "train")
    calib_rows = np.flatnonzero(split == "calib")
    svd = fit_svd(x[train_rows], settings.svd_dim, derive_seed(seed, "svd"))
    proj = torch.from_numpy(svd.transform(x))

    def by_user(rows: np.ndarray) -> dict[int, np.ndarray]:
        groups: dict[int, list[int]] = defaultdict(list)
        for r in rows:
            groups[int(user_label[r])].append(int(r))
        return {u: np.asarray(v) for u, v in groups.items()}

    train_by_user, calib_by_user = by_user(train_rows), by_user(calib_rows)
    torch.manual_seed(derive_seed(seed, "mlp") % 2**63)
    mlp = StyleMLP(proj.shape[1], settings.hidden, settings.dim, settings.dropout)
    opt = torch.optim.Adam(mlp.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
    calib_gen = rng(seed, "calib-batches")
    calib_batches = pack_batches(
        build_cohorts(calib_by_user, row_product, product_users, settings, calib_gen),
        settings.batch_size,
        calib_gen,
    )

    def evaluate(batches) -> float:
        mlp.eval()
        total, count = 0.0, 0
        with torch.no_grad():
            for batch in batches:
                xb, ub, cb = _batch_tensors(batch, proj)
                loss, n = cohort_infonce(mlp(xb), ub, cb, settings.temperature)
                total += loss.item() * n
                count += n
        return total / count if count else float("nan")

    history = [
        {
            "epoch": 0,
            "train_loss": float("nan"),
            "calib_loss": evaluate(calib_batches),
            "train_anchors": 0,
        }
    ]
    best = (history[0]["calib_loss"], 0, copy.deepcopy(mlp.state_dict()))
    stale = 0
    stopped_early = False
    for epoch in range(1, settings.epochs + 1):
        gen = rng(seed, "epoch", epoch)
        batches = pack_batches(
            build_cohorts(train_by_user, row_product, product_users, settings, gen),
            settings.batch_size,
            gen,
            max_rows=len(train_rows),
        )
        if not batches:
            raise ValueError(
                "no training cohort: no product has two modelled reviewers with training sentences"
            )
        mlp.train()
        total, count = 0.0, 0
        for batch in batches:
            xb, ub, cb = _batch_tensors(batch, proj)
            loss, n = cohort_infonce(mlp(xb), ub, cb, settings.temperature)
            if n == 0:
                continue
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach().item() * n
            count += n
        calib_loss = evaluate(calib_batches)
        history.append(
            {
                "epoch": epoch,
                "train_loss": total / max(count, 1),
                "calib_loss": calib_loss,
                "train_anchors": count,
            }
        )
        if log is not None:
            log.info("epoch %d: train %.4f calib %.4f", epoch, total / max(count, 1), calib_loss)
        if not np.isfinite(best[0]) or calib_loss < best[0] - 1e-6:
            best = (calib_loss, epoch, copy.deepcopy(mlp.state_dict()))
            stale = 0
        else:
            stale += 1
            if stale >= settings.patience:
                stopped_early = True
                break
    mlp.load_state_dict(best[2])
    return TrainedEncoder(settings, svd, mlp, history, best[1], stopped_early)


def _labels(index: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    users = sorted(index["user_id"].unique())
    code = {u: i for i, u in enumerate(users)}
    return index["user_id"].map(code).to_numpy(np.int64), users


EMBEDDING_SCHEMA_FIELDS = [
    ("sentence_id", pa.string()),
    ("user_id", pa.string()),
    ("split", pa.string()),
]


def run_encoder(
    vectors_path,
    index_path,
    vocab_path,
    reviewers_path,
    out: dict,
    params: dict,
    seed: int,
    threads: int = 1,
) -> dict:
    torch.set_num_threads(max(1, threads))
    x = load_csr(vectors_path)
    index = read_parquet_table(index_path).to_pandas()
    vocab = read_parquet_table(vocab_path).column("rule").to_pylist()
    if x.shape != (len(index), len(vocab)):
        raise StageInputError(
            f"{vectors_path}: shape {x.shape} does not match {len(index)} "
            f"indexed sentences x {len(vocab)} rules"
        )
    labels, users = _labels(index)
    product_users = product_user_labels(read_reviewers(reviewers_path), users)
    settings = EncoderSettings.from_config(params)
    t0 = time.perf_counter()
    enc = train_encoder(
        x,
        labels,
        index["split"].to_numpy(),
        index["parent_asin"].to_numpy(),
        product_users,
        settings,
        seed=derive_seed(seed, "syntax-encoder"),
        log=log,
    )
    seconds = time.perf_counter() - t0
    enc.save(out["weights"], out["meta"], vocab)
    z = enc.encode(x)
    dim = z.shape[1]
    emb = pa.table(
        {
            "sentence_id": index["sentence_id"].tolist(),
            "user_id": index["user_id"].tolist(),
            "split": index["split"].tolist(),
            "embedding": pa.FixedSizeListArray.from_arrays(
                pa.array(z.reshape(-1), pa.float32()), dim
            ),
        }
    )
    write_parquet(out["embeddings"], emb)
    curve = pd.DataFrame(enc.history)
    with atomic_path(out["curve"], suffix=".csv") as tmp:
        curve.to_csv(tmp, index=False, float_format="%.6f")
    cohort_sizes = sorted(len(v) for v in product_users.values() if len(v) >= 2)
    in_cohort = {u for v in product_users.values() if len(v) >= 2 for u in v}
    report = {
        "best_epoch": enc.best_epoch,
        "stopped_early": enc.stopped_early,
        "epochs_run": len(enc.history) - 1,
        "seconds": round(seconds, 2),
        "cohort_products": len(cohort_sizes),
        "cohort_users_median": float(np.median(cohort_sizes)) if cohort_sizes else 0.0,
        "cohort_users_max": cohort_sizes[-1] if cohort_sizes else 0,
        # Users who share no product with another modelled user never enter a training batch
        # (real reviews are sparse here, the sample world is not); they are still embedded,
        # profiled and evaluated.
        "users_in_no_cohort": len(users) - len(in_cohort),
        "users": len(users),
        "dim": dim,
        "svd_dim": int(enc.svd.components.shape[0]),
    }
    log.info("encoder: %s", report)
    return report
