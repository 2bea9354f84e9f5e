"""Supervised fine-tuning of the TTP model on teacher rewrites, resumable from checkpoints.

Loss per batch of B examples (the paper's and the reference code's weights)::

    L = token_weight * CE(<think>rewrite</think><embed> | prompt) + contrastive_weight * InfoNCE

InfoNCE compares each query embedding (at the ``<embed>`` after the target) with the B item
embeddings of the batch (``item text<embed>``, same model), temperature ``temperature``; an
item that is the target of two rows of a batch is not counted as a negative for either.
Both sides go through one ``torch.nn.Module`` forward (:class:`TTPLossModule`), so
``accelerate`` can wrap it for several GPUs at paper scale (in-batch negatives per device).

Determinism and resumption: the order of examples in epoch ``e`` is a permutation seeded by
``(seed, "sft_order", e)``; step ``s`` always trains on the same batch. Every
``checkpoint_every`` steps the LoRA/trainable-token weights, the AdamW moments, the schedule
position, torch's RNG state and the loss history are written (safetensors + JSON, no pickle)
into ``checkpoints/step-NNNNNN/``; a restarted run continues from the latest complete one
and reproduces the uninterrupted run.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from personalir.common.causal_lm import stable_adapter_config
from personalir.common.device import use_cuda_index
from personalir.common.io import split_volatile, write_json
from personalir.common.seeding import derive_seed
from personalir.ttp.model.encoder import TTPEncoder
from personalir.ttp.training.sft_data import SFTDataError, SFTSettings, TrainingRow


class TTPLossModule(torch.nn.Module):
    """Token loss + InfoNCE in one forward (so DDP/accelerate can wrap it)."""

    def __init__(self, peft_model, encoder: TTPEncoder, settings: SFTSettings):
        super().__init__()
        self.peft_model = peft_model
        self.encoder = encoder
        self.settings = settings

    def forward(
        self, q_ids, q_mask, n_target, i_ids, i_mask, same_item, q_prefix=None, i_prefix=None
    ):
        enc = self.encoder
        h_q = enc.hidden(q_ids, q_mask, q_prefix)
        width = q_ids.shape[1]
        # Target tokens sit at the end of every (left-padded) row; position p predicts p + 1.
        rows, cols = [], []
        for r, n in enumerate(n_target.tolist()):
            rows += [r] * n
            cols += list(range(width - n - 1, width - 1))
        device = q_ids.device
        rows_t = torch.tensor(rows, device=device)
        cols_t = torch.tensor(cols, device=device)
        logits = enc.lm_head(h_q[rows_t, cols_t])
        token_loss = F.cross_entropy(logits.float(), q_ids[rows_t, cols_t + 1])
        if not self.settings.contrastive_weight:
            # Token loss only (Decoupled-Stage's rewriter): the items are never encoded.
            return (
                self.settings.token_weight * token_loss,
                token_loss.detach(),
                torch.zeros((), device=device),
            )
        q_emb = enc.pool(h_q, q_ids)
        i_emb = enc.pool(enc.hidden(i_ids, i_mask, i_prefix), i_ids)
        sims = q_emb @ i_emb.T / self.settings.temperature
        eye = torch.eye(sims.shape[0], dtype=torch.bool, device=sims.device)
        sims = sims.masked_fill(same_item & ~eye, float("-inf"))
        nce = F.cross_entropy(sims, torch.arange(sims.shape[0], device=sims.device))
        total = self.settings.token_weight * token_loss + self.settings.contrastive_weight * nce
        return total, token_loss.detach(), nce.detach()


def collate(rows: Sequence[TrainingRow], encoder: TTPEncoder):
    """Padded query and item rows on the encoder's (the model's) device; a prefix the batch's
    rows share is split off (computed once, see :mod:`personalir.ttp.model.encoder`),
    never reaching
    into a row's target or the prompt token that predicts its first target token."""
    q_ids, q_mask, q_prefix = encoder.batch_tensors(
        [r.query_ids for r in rows], keep=[r.n_target + 1 for r in rows]
    )
    i_ids, i_mask, i_prefix = encoder.batch_tensors([r.item_ids for r in rows])
    device = encoder.device
    n_target = torch.tensor([r.n_target for r in rows], device=device)
    targets = [r.target_item for r in rows]
    same = torch.tensor(
        [[a == b for b in targets] for a in targets], dtype=torch.bool, device=device
    )
    return q_ids, q_mask, n_target, i_ids, i_mask, same, q_prefix, i_prefix


def batch_tokens(batch) -> int:
    """Tokens a training step runs through the model (a shared prefix counts once)."""
    q_ids, q_mask, _, i_ids, i_mask, _, q_prefix, i_prefix = batch
    shared = sum(int(p.shape[-1]) for p in (q_prefix, i_prefix) if p is not None)
    return int(q_mask.sum() + i_mask.sum()) + shared


def batch_order(n_rows: int, batch_size: int, seed: int, step: int) -> list[int]:
    """Row indices of training step ``step`` (deterministic, epoch-wise permutations)."""
    per_epoch = max(1, math.ceil(n_rows / batch_size))
    epoch, k = divmod(step, per_epoch)
    perm = np.random.default_rng(derive_seed(seed, "sft_order", epoch)).permutation(n_rows)
    return perm[k * batch_size : (k + 1) * batch_size].tolist()


def total_steps(n_rows: int, settings: SFTSettings) -> int:
    per_epoch = max(1, math.ceil(n_rows / settings.batch_size))
    steps = max(1, int(math.ceil(settings.epochs * per_epoch)))
    return min(steps, settings.max_steps) if settings.max_steps else steps


def _lr_factor(step: int, steps: int, warmup: int) -> float:
    if warmup and step < warmup:
        return (step + 1) / warmup
    return max(0.0, (steps - step) / max(1, steps - warmup))


# ------------------------------------------------------------------------------ checkpoints
def _trainable(model) -> dict:
    return {n: p for n, p in model.named_parameters() if p.requires_grad}


# The modules whose code decides what a training step computes (part of the run key).
_RUN_CODE = (
    Path(__file__),
    Path(__file__).parents[1] / "model" / "backbone.py",
    Path(__file__).parents[1] / "model" / "encoder.py",
    Path(__file__).parents[1] / "model" / "prompts.py",
)


def run_key(params: Mapping, rows: Sequence[TrainingRow], settings: SFTSettings, seed: int) -> str:
    """What makes checkpoints resumable: the settings, seed, training rows, initial trainable
    weights (backbone, LoRA initialisation) and the training code, hashed. A checkpoint of
    another key is from a different run (say, a changed setting or code) and is never resumed."""
    h = hashlib.sha256()
    h.update(json.dumps({"settings": asdict(settings), "seed": seed}, sort_keys=True).encode())
    for r in rows:
        h.update(json.dumps([r.example_id, r.query_ids, r.n_target, r.item_ids]).encode())
    for name in sorted(params):
        h.update(name.encode())
        h.update(params[name].detach().cpu().contiguous().numpy().tobytes())
    for code in _RUN_CODE:
        h.update(code.read_bytes())
    return h.hexdigest()


def save_checkpoint(
    path: Path, model, optimizer, step: int, history: list[dict], key: str = ""
) -> None:
    from safetensors.torch import save_file

    tmp = path.with_name(path.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    params = _trainable(model)
    save_file(
        {n: p.detach().contiguous() for n, p in params.items()}, tmp / "trainable.safetensors"
    )
    moments, steps = {}, {}
    name_of = {id(p): n for n, p in params.items()}
    for group in optimizer.param_groups:
        for p in group["params"]:
            st = optimizer.state.get(p)
            if not st:
                continue
            n = name_of[id(p)]
            moments[f"{n}::exp_avg"] = st["exp_avg"].contiguous()
            moments[f"{n}::exp_avg_sq"] = st["exp_avg_sq"].contiguous()
            steps[n] = float(st["step"])
    save_file(moments, tmp / "optimizer.safetensors")
    rng = {"cpu": torch.get_rng_state()}
    device = next(iter(params.values())).device if params else torch.device("cpu")
    if device.type == "cuda":  # LoRA dropout on a GPU draws from its generator
        rng["cuda"] = torch.cuda.get_rng_state(device)
    save_file(rng, tmp / "rng.safetensors")
    state, _ = split_volatile(
        {"step": step, "run_key": key, "adam_steps": steps, "history": history}
    )  # step times are in the log
    (tmp / "state.json").write_text(json.dumps(state, indent=1))
    if path.exists():
        shutil.rmtree(path)
    tmp.rename(path)


def latest_checkpoint(ckpt_dir: Path, key: str | None = None) -> Path | None:
    """The latest complete checkpoint (of run ``key`` when given)."""
    done = sorted(p for p in ckpt_dir.glob("step-*") if (p / "state.json").exists())
    if key is not None:
        done = [p for p in done if json.loads((p / "state.json").read_text()).get("run_key") == key]
    return done[-1] if done else None


def discard_other_runs(ckpt_dir: Path, key: str) -> int:
    """Remove the checkpoints (and half-written ones) and the epoch candidates that are not
    of run ``key``."""
    removed = 0
    for p in sorted(ckpt_dir.glob("step-*")):
        state = p / "state.json"
        if not state.exists() or json.loads(state.read_text()).get("run_key") != key:
            shutil.rmtree(p)
            removed += 1
    for p in sorted(ckpt_dir.glob("epoch-*.safetensors")):
        if _candidate_meta(p).get("run_key") != key:
            p.unlink()
            removed += 1
    return removed


# -------------------------------------------------------------------- epoch candidates
def _candidate_meta(path: Path) -> dict:
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as fh:
            meta = dict(fh.metadata() or {})
        # One JSON value: safetensors writes several metadata keys in a per-process order.
        return json.loads(meta["personalir"]) if "personalir" in meta else meta
    except Exception:  # a half-written or damaged candidate belongs to no run
        return {}


def save_candidate(path: Path, model, key: str, step: int, epoch: float) -> None:
    """The trainable weights after ``step`` (the end of epoch ``epoch``), for model selection
    on the validation split (:mod:`personalir.ttp.training.selection`); written atomically."""
    from safetensors.torch import save_file

    tmp = path.with_name(path.name + ".tmp")
    save_file(
        {n: p.detach().contiguous() for n, p in _trainable(model).items()},
        tmp,
        metadata={
            "personalir": json.dumps(
                {"run_key": key, "step": str(step), "epoch": repr(epoch)}, sort_keys=True
            )
        },
    )
    tmp.replace(path)


def epoch_candidates(ckpt_dir: str | Path, key: str | None = None) -> list[dict]:
    """``{"epoch", "step", "path"}`` of every epoch candidate (of run ``key``), in order."""
    out = []
    for p in sorted(Path(ckpt_dir).glob("epoch-*.safetensors")):
        meta = _candidate_meta(p)
        if meta and (key is None or meta.get("run_key") == key):
            out.append({"epoch": float(meta["epoch"]), "step": int(meta["step"]), "path": p})
    return sorted(out, key=lambda c: c["step"])


def load_trainable(model, path: str | Path) -> None:
    """Copy saved trainable weights (a checkpoint's or a candidate's) into ``model``."""
    from safetensors.torch import load_file

    params = _trainable(model)
    saved = load_file(str(path))
    if set(saved) != set(params):
        raise ValueError(f"{path}: saved parameters do not match the model's trainable ones")
    with torch.no_grad():
        for n, p in params.items():
            p.copy_(saved[n])


def load_checkpoint(path: Path, model, optimizer) -> tuple[int, list[dict]]:
    from safetensors.torch import load_file

    params = _trainable(model)
    saved = load_file(path / "trainable.safetensors")
    if set(saved) != set(params):
        raise ValueError(f"{path}: checkpoint parameters do not match the model's")
    with torch.no_grad():
        for n, p in params.items():
            p.copy_(saved[n])
    state = json.loads((path / "state.json").read_text())
    moments = load_file(path / "optimizer.safetensors")
    for n, p in params.items():
        if n in state["adam_steps"]:
            optimizer.state[p] = {
                "step": torch.tensor(state["adam_steps"][n]),
                "exp_avg": moments[f"{n}::exp_avg"].to(p.device).clone(),
                "exp_avg_sq": moments[f"{n}::exp_avg_sq"].to(p.device).clone(),
            }
    rng = load_file(path / "rng.safetensors")
    torch.set_rng_state(rng["cpu"])
    if "cuda" in rng and params:
        device = next(iter(params.values())).device
        if device.type == "cuda":
            torch.cuda.set_rng_state(rng["cuda"], device)
    return int(state["step"]), list(state["history"])


# ---------------------------------------------------------------------------------- training
def train(
    peft_model,
    encoder: TTPEncoder,
    rows: Sequence[TrainingRow],
    settings: SFTSettings,
    out_dir: str | Path,
    *,
    seed: int,
    stop_after: int | None = None,
    log=print,
) -> dict:
    """Train (or resume) and write ``adapter/`` (the last step's weights), ``loss.json`` and
    the weights at the end of every epoch (``checkpoints/epoch-*.safetensors``, the
    candidates of model selection); return the training report.

    ``stop_after`` ends the run after that many steps of this call (tests of resumption).
    """
    from accelerate import Accelerator

    if not rows:
        raise SFTDataError("no training rows")
    out_dir = Path(out_dir)
    ckpt_dir = out_dir / "checkpoints"
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(derive_seed(seed, "sft_torch") % (2**63))
    module = TTPLossModule(peft_model, encoder, settings)
    params = [p for p in peft_model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(
        params, lr=settings.learning_rate, weight_decay=settings.weight_decay
    )
    steps = total_steps(len(rows), settings)
    per_epoch = max(1, math.ceil(len(rows) / settings.batch_size))
    warmup = int(round(settings.warmup_ratio * steps))
    # The model is already where ``ttp.device`` puts it (the caller moved it); accelerate
    # keeps it there: on the CPU whenever the model is, a visible GPU notwithstanding.
    model_device = encoder.device
    use_cuda_index(model_device)
    accelerator = Accelerator(cpu=model_device.type == "cpu" or not torch.cuda.is_available())
    module, optimizer = accelerator.prepare(module, optimizer)
    start, history = 0, []
    key = run_key(_trainable(peft_model), rows, settings, seed)
    stale = discard_other_runs(ckpt_dir, key)
    if stale:
        log(f"discarded {stale} checkpoint(s) of another run (settings, data, weights or code)")
    found = latest_checkpoint(ckpt_dir, key)
    if found is not None:
        start, history = load_checkpoint(found, peft_model, optimizer)
        log(f"resumed from {found} at step {start}")
    module.train()
    t_run, tokens_run, steps_run = time.perf_counter(), 0, 0
    for step in range(start, steps):
        if stop_after is not None and steps_run >= stop_after:
            break
        t0 = time.perf_counter()
        batch_rows = [rows[i] for i in batch_order(len(rows), settings.batch_size, seed, step)]
        batch = collate(batch_rows, encoder)
        lr = settings.learning_rate * _lr_factor(step, steps, warmup)
        for group in optimizer.param_groups:
            group["lr"] = lr
        loss, tok, nce = module(*batch)
        optimizer.zero_grad(set_to_none=True)
        accelerator.backward(loss)
        if settings.grad_clip:
            accelerator.clip_grad_norm_(params, settings.grad_clip)
        optimizer.step()
        n_tokens = batch_tokens(batch)
        tokens_run += n_tokens
        steps_run += 1
        history.append(
            {
                "step": step + 1,
                "loss": round(float(loss.detach()), 6),
                "token_loss": round(float(tok), 6),
                "contrastive_loss": round(float(nce), 6),
                "lr": lr,
                "tokens": n_tokens,
                "seconds": round(time.perf_counter() - t0, 4),
            }
        )
        if (step + 1) % per_epoch == 0 or step + 1 == steps:
            epoch = round((step + 1) / per_epoch, 6)
            save_candidate(
                ckpt_dir / f"epoch-{step + 1:06d}.safetensors", peft_model, key, step + 1, epoch
            )
        if (step + 1) % max(1, settings.checkpoint_every) == 0 or step + 1 == steps:
            save_checkpoint(
                ckpt_dir / f"step-{step + 1:06d}", peft_model, optimizer, step + 1, history, key
            )
            for old in sorted(ckpt_dir.glob("step-*"))[: -settings.keep_checkpoints]:
                shutil.rmtree(old)
        if (step + 1) % 10 == 0 or step + 1 == steps:
            h = history[-1]
            log(
                f"step {step + 1}/{steps} loss {h['loss']:.4f} "
                f"(token {h['token_loss']:.4f}, nce {h['contrastive_loss']:.4f})"
            )
    elapsed = time.perf_counter() - t_run
    finished = bool(history) and history[-1]["step"] == steps
    report = {
        "steps": steps,
        "completed_steps": history[-1]["step"] if history else 0,
        "finished": finished,
        # what an earlier run left (a fact of this run: the rule's log keeps it)
        "resumed_from_step_this_run": start,
        "rows": len(rows),
        "settings": {
            k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(settings).items()
        },
        "steps_this_run": steps_run,
        "seconds_this_run": round(elapsed, 3),
        "steps_per_s": round(steps_run / elapsed, 4) if elapsed > 0 and steps_run else None,
        "tokens_per_s": round(tokens_run / elapsed, 2) if elapsed > 0 and steps_run else None,
        "trainable_parameters": int(sum(p.numel() for p in params)),
    }
    report["run_key"] = key
    if finished:
        peft_model.save_pretrained(out_dir / "adapter")
        stable_adapter_config(out_dir / "adapter")
        write_json(out_dir / "loss.json", history)
    return report
