"""Torch set-up shared by the neural retrievers: threads, seeds, device, dtype."""

from __future__ import annotations

from personalir.retrieval.base import RunSettings


def setup_torch(settings: RunSettings):
    """Import torch, pin its threads and seed; return the module."""
    import torch

    torch.set_num_threads(max(1, settings.threads))
    torch.manual_seed(settings.seed % (2**63))
    return torch


def resolve_dtype(name: str | None, device: str):
    """``auto``: bfloat16 on a GPU, float32 on the CPU (where bfloat16 matmuls are slow)."""
    import torch

    if name in (None, "auto"):
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    try:
        return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[
            name
        ]
    except KeyError:
        raise ValueError(
            f"dtype {name!r} not in ['auto', 'float32', 'float16', 'bfloat16']"
        ) from None


def maxsim_scores(
    queries: list,
    documents: list,
    *,
    device: str = "cpu",
    budget: int = 2**25,
):
    """Late-interaction scores ``S[i, j] = sum_t max_u <q_i[t], d_j[u]>`` as a numpy array.

    ``queries`` and ``documents`` are lists of (tokens x dim) tensors (already normalised and
    masked as the model wants). Work is split so no intermediate exceeds ``budget`` elements.
    """
    import numpy as np
    import torch

    if not queries or not documents:
        return np.zeros((len(queries), len(documents)), dtype=np.float32)
    dim = queries[0].shape[-1]
    q_len = max(q.shape[0] for q in queries)
    d_len = max(d.shape[0] for d in documents)
    qs = torch.zeros(len(queries), q_len, dim, device=device, dtype=torch.float32)
    q_mask = torch.zeros(len(queries), q_len, device=device, dtype=torch.bool)
    for i, q in enumerate(queries):
        qs[i, : q.shape[0]] = torch.as_tensor(q, dtype=torch.float32, device=device)
        q_mask[i, : q.shape[0]] = True
    out = np.zeros((len(queries), len(documents)), dtype=np.float32)
    per_doc = q_len * d_len * len(queries)
    step = max(1, budget // max(1, per_doc))
    for start in range(0, len(documents), step):
        batch = documents[start : start + step]
        ds = torch.full((len(batch), d_len, dim), 0.0, device=device)
        d_mask = torch.zeros(len(batch), d_len, device=device, dtype=torch.bool)
        for j, d in enumerate(batch):
            ds[j, : d.shape[0]] = torch.as_tensor(d, dtype=torch.float32, device=device)
            d_mask[j, : d.shape[0]] = True
        sim = torch.einsum("qtd,nud->qntu", qs, ds)
        sim = sim.masked_fill(~d_mask[None, :, None, :], float("-inf"))
        best = sim.max(dim=-1).values  # (q, n, t)
        best = best.masked_fill(~q_mask[:, None, :], 0.0)
        out[:, start : start + len(batch)] = best.sum(dim=-1).cpu().numpy()
    return out
