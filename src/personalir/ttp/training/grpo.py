"""GRPO alignment of the TTP model on TRL (paper section 3.4), starting from the SFT adapter.

TRL's :class:`trl.GRPOTrainer` samples ``group_size`` rollouts per prompt, computes the
group-relative advantages, the clipped policy loss and the KL to the reference policy; this
module gives it

* three reward functions (:class:`TTPRewards`: ``format``, ``length``, ``retrieval``, with
  TRL's ``reward_weights`` 0.5 / 0.5 / 2.0, see
  :mod:`personalir.ttp.training.rewards`), the retrieval
  one scored by :class:`RetrievalScorer`: the **frozen SFT adapter** (loaded a second time,
  never trained) or, in the "unfrozen" ablation, the training policy itself;
* :class:`TTPGRPOTrainer`, a subclass adding the dynamic positive selection: after each
  generation batch the best-reward rollout of every prompt (the original query when that
  reward is negative; a random rollout in the ablation) is re-encoded by the current policy
  and enters an InfoNCE term against the batch's purchased items, ``L = L_GRPO + lambda_cl
  L_cl``.

The policy continues training the SFT adapter; TRL keeps a frozen copy of it as the KL
reference (adapter ``ref``), so the reference is the SFT policy, not the bare backbone.
The rollouts' prompt ends with ``<think>``, exactly as at inference (the opening of the
output is fixed; the format reward reads ``<think>`` + the completion), and generation stops
at the embedding token.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from personalir.common.seeding import derive_seed
from personalir.ttp.model.encoder import TTPEncoder
from personalir.ttp.model.prompts import THINK_OPEN, parse_generated, target_text
from personalir.ttp.training.rewards import (
    ORIGINAL,
    RewardSettings,
    format_reward,
    length_reward,
    retrieval_rewards,
    select_positives,
)

FROZEN_ADAPTER = "sft_frozen"  # the SFT adapter loaded a second time, never trained


@dataclass(frozen=True)
class GRPOSettings:
    group_size: int = 8
    prompts_per_step: int = 16
    epochs: float = 1.0
    max_steps: int | None = None
    learning_rate: float = 2e-7
    lr_scheduler: str = "constant"
    temperature: float = 0.7
    top_p: float = 0.95
    max_completion_tokens: int = 64
    beta_kl: float = 0.001
    epsilon: float = 0.2
    loss_type: str = "grpo"
    contrastive_weight: float = 0.1
    contrastive_temperature: float = 0.02
    selection: str = "dynamic"
    scorer: str = "frozen"
    data_share: float = 0.3
    checkpoint_every: int = 50
    keep_checkpoints: int = 2
    gradient_checkpointing: bool = False
    shared_prompt: bool = True
    reward: RewardSettings = field(default_factory=RewardSettings)

    @classmethod
    def from_config(cls, section: Mapping) -> GRPOSettings:
        kw = {k: section[k] for k in cls.__dataclass_fields__ if k in section and k != "reward"}
        return cls(**kw, reward=RewardSettings.from_config(dict(section.get("reward") or {})))

    def __post_init__(self):
        if self.group_size < 2:
            raise ValueError("GRPO needs at least 2 rollouts per prompt (group_size)")
        if self.prompts_per_step < 2:
            raise ValueError("prompts_per_step must be >= 2: the margin needs in-batch negatives")
        if self.selection not in ("dynamic", "random"):
            raise ValueError(f"selection {self.selection!r}: dynamic or random")
        if self.scorer not in ("frozen", "policy"):
            raise ValueError(f"scorer {self.scorer!r}: frozen or policy")


def variant_settings(rl: Mapping, variant: str) -> dict:
    """The ``ttp.rl`` section with one variant's overrides applied (``reward`` merged)."""
    variants = rl.get("variants") or {}
    if variant not in variants:
        raise ValueError(f"unknown RL variant {variant!r}; configured: {sorted(variants)}")
    base = {k: v for k, v in rl.items() if k != "variants"}
    over = dict(variants[variant] or {})
    reward = {**(base.get("reward") or {}), **(over.pop("reward", None) or {})}
    return {**base, **over, "reward": reward}


def rl_records(records: Sequence[dict], share: float) -> list[dict]:
    """The top ``share`` of SFT records by teacher gain (ties: example id), at least 2."""

    def key(r):
        g = r.get("gain")
        return (
            -(g if isinstance(g, int | float) and math.isfinite(g) else -math.inf),
            r["example_id"],
        )

    ranked = sorted(records, key=key)
    n = min(len(ranked), max(2, math.ceil(share * len(ranked))))
    return ranked[:n]


# --------------------------------------------------------------------------------- scoring
class RetrievalScorer:
    """Query and item embeddings for the retrieval reward. ``adapter`` names the frozen
    adapter to score with (embeddings of items and original queries are then cached: the
    scorer never changes); None scores with the model's active (training) adapter."""

    def __init__(self, model, encoder: TTPEncoder, item_texts: Mapping[str, str], adapter=None):
        self.model = model
        self.encoder = encoder
        self.item_texts = item_texts
        self.adapter = adapter
        self._items: dict[str, np.ndarray] = {}
        self._originals: dict[str, np.ndarray] = {}
        self.encoded = {"items": 0, "queries": 0, "cached": 0}

    @property
    def frozen(self) -> bool:
        return self.adapter is not None

    def _context(self):
        if not self.frozen:
            return nullcontext()
        from trl.trainer.utils import use_adapter

        return use_adapter(self.model, self.adapter)

    def _encode(self, seqs):
        was_training = self.model.training
        try:
            with self._context():
                return self.encoder.encode_ids(seqs)
        finally:
            self.model.train(was_training)

    def items(self, ids: Sequence[str]) -> np.ndarray:
        todo = [i for i in dict.fromkeys(ids) if not (self.frozen and i in self._items)]
        if todo:
            vecs = self._encode([self.encoder.item_ids(self.item_texts[i]) for i in todo])
            self.encoded["items"] += len(todo)
            fresh = dict(zip(todo, vecs, strict=True))
        else:
            fresh = {}
        if self.frozen:
            self._items.update(fresh)
            self.encoded["cached"] += len(ids) - len(todo)
        return np.stack([fresh[i] if i in fresh else self._items[i] for i in ids])

    def queries(self, prompts: Sequence[str], rewrites: Sequence[str]) -> np.ndarray:
        seqs = [
            self.encoder.query_ids(p, target_text(r))[0]
            for p, r in zip(prompts, rewrites, strict=True)
        ]
        self.encoded["queries"] += len(seqs)
        return self._encode(seqs)

    def originals(self, keys: Sequence[str], prompts: Sequence[str], queries: Sequence[str]):
        """The original query of each prompt, embedded as ``<think>query</think><embed>``."""
        if not self.frozen:
            return self.queries(prompts, queries)
        todo = {}
        for k, p, q in zip(keys, prompts, queries, strict=True):
            if k not in self._originals:
                todo.setdefault(k, (p, q))
        if todo:
            vecs = self.queries([p for p, _ in todo.values()], [q for _, q in todo.values()])
            self._originals.update(zip(todo, vecs, strict=True))
        self.encoded["cached"] += len(keys) - len(todo)
        return np.stack([self._originals[k] for k in keys])


# --------------------------------------------------------------------------------- rewards
class TTPRewards:
    """The three reward functions TRL calls (one list entry each, in :attr:`names` order);
    each call sees the generation batch's completions with the dataset's columns
    (``example_id``, ``query_prompt``, ``query``, ``target``). The last batch's rewrites and
    reward parts stay in :attr:`last` for the trainer's positive selection."""

    names = ("format", "length", "retrieval")

    def __init__(self, tokenizer, scorer: RetrievalScorer, settings: RewardSettings):
        self.tokenizer = tokenizer
        self.scorer = scorer
        self.settings = settings
        self.last: dict = {}
        self.skip = {t for t in (tokenizer.pad_token, tokenizer.eos_token) if t}

    def output_text(self, completion_ids: Sequence[int]) -> str:
        """``<think>`` (ending the prompt) + the completion, pad/eos tokens dropped."""
        ids = [
            i for i in completion_ids if self.tokenizer.convert_ids_to_tokens(i) not in self.skip
        ]
        return THINK_OPEN + self.tokenizer.decode(ids, skip_special_tokens=False)

    def functions(self):
        def fmt(prompts, completions, completion_ids, **kw):
            return [format_reward(self.output_text(c)) for c in completion_ids]

        def length(prompts, completions, completion_ids, **kw):
            # |y| counts the output's tokens: the fixed <think> and the completion.
            return [length_reward(1 + len(c), self.settings.length_limit) for c in completion_ids]

        def retrieval(prompts, completions, completion_ids, **kw):
            return self.retrieval(completion_ids, **kw)

        for fn, name in zip((fmt, length, retrieval), self.names, strict=True):
            fn.__name__ = name
        return [fmt, length, retrieval]

    def retrieval(self, completion_ids, *, example_id, query_prompt, query, target, **kw):
        rewrites = [parse_generated(self.output_text(c))[0] for c in completion_ids]
        items = list(dict.fromkeys(target))
        item_emb = self.scorer.items(items)
        positives = [items.index(t) for t in target]
        same = np.array([[t == i for i in items] for t in target], dtype=bool)
        roll = self.scorer.queries(
            query_prompt, [r or q for r, q in zip(rewrites, query, strict=True)]
        )
        orig = self.scorer.originals(example_id, query_prompt, query)
        parts = retrieval_rewards(roll, orig, item_emb, positives, same, self.settings)
        self.last = {"rewrites": rewrites, **parts}
        log_metric = kw.get("log_metric")
        if log_metric is not None:
            log_metric("retrieval/d_pos", float(parts["d_pos"].mean()))
            log_metric("retrieval/no_negative", float(parts["no_negative"].mean()))
            log_metric("retrieval/d_margin", float(parts["d_margin"].mean()))
            log_metric(
                "retrieval/clipped", float(np.mean(np.abs(parts["raw"]) > self.settings.clip))
            )
        return parts["reward"].tolist()


def contrastive_loss(
    encoder: TTPEncoder, rows: Sequence[dict], temperature: float, share_prefix: bool = True
):
    """InfoNCE of the selected positives (query prompt + chosen rewrite, current policy)
    against the rows' purchased items (same policy); rows with the same item are not each
    other's negatives. ``share_prefix``: run the rows' common prompt prefix once (as in SFT;
    off under gradient checkpointing, which keeps no cache)."""
    q = [encoder.query_ids(r["query_prompt"], target_text(r["rewrite"]))[0] for r in rows]
    items = [encoder.item_ids(r["item_text"]) for r in rows]
    if share_prefix:
        ids, mask, prefix = encoder.batch_tensors(q)
        i_ids, i_mask, i_prefix = encoder.batch_tensors(items)
    else:
        (ids, mask), (i_ids, i_mask) = encoder.pad_left(q), encoder.pad_left(items)
        prefix = i_prefix = None
    q_emb = encoder.pool(encoder.hidden(ids, mask, prefix), ids)
    i_emb = encoder.pool(encoder.hidden(i_ids, i_mask, i_prefix), i_ids)
    sims = q_emb @ i_emb.T / temperature
    targets = [r["target"] for r in rows]
    device = sims.device
    same = torch.tensor(
        [[a == b for b in targets] for a in targets], dtype=torch.bool, device=device
    )
    eye = torch.eye(len(rows), dtype=torch.bool, device=device)
    sims = sims.masked_fill(same & ~eye, float("-inf"))
    return F.cross_entropy(sims, torch.arange(len(rows), device=device))


def grouped_completion_logps(
    decoder,
    lm_head,
    input_ids,
    attention_mask,
    logits_to_keep: int,
    temperature: float = 1.0,
    compute_entropy: bool = False,
):
    """Per-token log-probabilities (and entropies) of the completions of ``[left-padded
    prompt | right-padded completion]`` rows, running each distinct prompt once.

    A GRPO batch holds ``group_size`` rollouts of every prompt; the prompt (about 110 of 120
    tokens on the sample) is run once per distinct prompt, its key/value cache is indexed out
    to the rows, and only the completions run on top. Positions follow the attention mask (as
    in generation). Equal to scoring every full row alone up to float rounding (tested)."""
    width = input_ids.shape[1] - logits_to_keep
    p_ids, p_mask = input_ids[:, :width], attention_mask[:, :width]
    c_ids, c_mask = input_ids[:, width:], attention_mask[:, width:]
    uniq, inverse = torch.unique(torch.cat([p_ids, p_mask], dim=1), dim=0, return_inverse=True)
    u_ids, u_mask = uniq[:, :width], uniq[:, width:]
    out = decoder(
        input_ids=u_ids,
        attention_mask=u_mask,
        position_ids=(u_mask.cumsum(-1) - 1).clamp(min=0),
        use_cache=True,
    )
    cache = out.past_key_values
    cache.batch_select_indices(inverse)
    first = out.last_hidden_state[:, -1][inverse]
    lengths = u_mask.sum(-1)[inverse]
    rest = decoder(
        input_ids=c_ids,
        attention_mask=torch.cat([p_mask, c_mask], dim=1),
        position_ids=lengths[:, None] + (c_mask.cumsum(-1) - 1).clamp(min=0),
        past_key_values=cache,
        use_cache=True,
    )
    hidden = torch.cat([first[:, None], rest.last_hidden_state[:, :-1]], dim=1)
    logp = F.log_softmax(lm_head(hidden).float() / temperature, dim=-1)
    token_logp = logp.gather(-1, c_ids.unsqueeze(-1)).squeeze(-1)
    entropy = -(logp.exp() * logp).sum(-1) if compute_entropy else None
    return token_logp, entropy


def grpo_trainer_class():
    from trl import GRPOTrainer

    class TTPGRPOTrainer(GRPOTrainer):
        """GRPO + the contrastive term on dynamically selected positives (module doc)."""

        def __init__(
            self,
            *args,
            ttp_rewards: TTPRewards,
            encoder: TTPEncoder,
            settings: GRPOSettings,
            item_texts: Mapping[str, str],
            seed: int,
            **kw,
        ):
            self.ttp_rewards = ttp_rewards
            self.ttp_encoder = encoder
            self.ttp_settings = settings
            self.ttp_item_texts = item_texts
            self.ttp_seed = seed
            self._cl_rows: list[dict] = []
            self.selections: list[dict] = []
            super().__init__(*args, **kw)

        def _get_per_token_logps_and_entropies(
            self,
            model,
            input_ids,
            attention_mask,
            logits_to_keep,
            batch_size=None,
            compute_entropy=False,
            compute_aux_loss=False,
            **extra,
        ):
            grouped = (
                self.ttp_settings.shared_prompt
                and not compute_aux_loss
                and self.accelerator.num_processes == 1
                and all(v is None for v in extra.values())
            )
            if not grouped:  # several processes: go through the wrapped model (DDP's hooks)
                return super()._get_per_token_logps_and_entropies(
                    model,
                    input_ids,
                    attention_mask,
                    logits_to_keep,
                    batch_size,
                    compute_entropy,
                    compute_aux_loss,
                    **extra,
                )
            enc = self.ttp_encoder
            logps, entropy = grouped_completion_logps(
                enc.decoder,
                enc.lm_head,
                input_ids,
                attention_mask,
                logits_to_keep,
                self.temperature,
                compute_entropy,
            )
            return logps, entropy, None

        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            out = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            self._ttp_rewards = out.detach().float().cpu()
            return out

        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            if not self.model.training:
                return out
            n, g = len(inputs), self.num_generations
            start = self.accelerator.process_index * n
            per_func = self._ttp_rewards[start : start + n]
            totals = (per_func * self.reward_weights.cpu().unsqueeze(0)).nansum(dim=1).numpy()
            step = int(self.state.global_step)
            rng = np.random.default_rng(derive_seed(self.ttp_seed, "rl_selection", step))
            choices = select_positives(totals, g, self.ttp_settings.selection, rng)
            rewrites = self.ttp_rewards.last.get("rewrites") or [""] * n
            rows = []
            for grp, choice in enumerate(choices):
                x = inputs[grp * g]
                text = (
                    x["query"] if choice == ORIGINAL else (rewrites[grp * g + choice] or x["query"])
                )
                rows.append(
                    {
                        "query_prompt": x["query_prompt"],
                        "rewrite": text,
                        "target": x["target"],
                        "item_text": self.ttp_item_texts[x["target"]],
                    }
                )
            self._cl_rows = rows
            self.selections.append(
                {
                    "step": step,
                    "original": sum(c == ORIGINAL for c in choices),
                    "groups": len(choices),
                }
            )
            self._metrics["train"]["selection/original_share"].append(
                float(np.mean([c == ORIGINAL for c in choices]))
            )
            return out

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            loss = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            weight = self.ttp_settings.contrastive_weight
            if not (self.model.training and weight > 0 and self._cl_rows):
                return loss
            k = max(1, int(self.args.steps_per_generation))
            rows = self._cl_rows
            if len(rows) >= 2 * k:
                rows = rows[self._step % k :: k]
            cl = contrastive_loss(
                self.ttp_encoder,
                rows,
                self.ttp_settings.contrastive_temperature,
                share_prefix=not self.ttp_settings.gradient_checkpointing,
            )
            self._metrics["train"]["cl_loss"].append(float(cl.detach()))
            return loss + weight * cl / (k if len(rows) == len(self._cl_rows) and k > 1 else 1)

    return TTPGRPOTrainer
