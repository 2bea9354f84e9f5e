"""SFT's data: the settings, the query prompt of an example and the training rows.

Kept apart from the training loop (:mod:`personalir.ttp.training.sft`, which needs torch at
import), because the methods, the rewriter and model selection build the same prompts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from personalir.ttp.inputs.data import Example, ItemCorpus, item_fields
from personalir.ttp.model.encoder import TTPEncoder
from personalir.ttp.model.prompts import query_prompt, target_text, truncate_to_tokens


class SFTDataError(ValueError):
    """An SFT record cannot be turned into a training row (said loudly, never skipped)."""


@dataclass(frozen=True)
class SFTSettings:
    batch_size: int = 8
    epochs: float = 1.0
    max_steps: int | None = None
    learning_rate: float = 2e-4
    weight_decay: float = 0.0
    warmup_ratio: float = 0.1
    grad_clip: float = 1.0
    token_weight: float = 0.5
    contrastive_weight: float = 1.0
    temperature: float = 0.02
    max_query_tokens: int = 512
    max_item_tokens: int = 64
    history_item_tokens: int = 48
    checkpoint_every: int = 50
    keep_checkpoints: int = 2
    item_fields: tuple[str, ...] = ("title", "main_category", "features")
    max_features: int = 3
    system_prompt: str | None = None

    @classmethod
    def from_config(cls, section: dict) -> SFTSettings:
        kw = {k: section[k] for k in cls.__dataclass_fields__ if k in section}
        if "item_fields" in kw:
            kw["item_fields"] = tuple(kw["item_fields"])
        return cls(**kw)


def sft_settings(ttp: Mapping, **overrides):
    """The SFT settings of the ``ttp`` section (item text from ``ttp.items``)."""
    return SFTSettings.from_config(
        {
            **ttp["sft"],
            "item_fields": item_fields(ttp),
            "max_features": ttp["items"]["max_features"],
            **overrides,
        }
    )


def ttp_encoder(model, tok, sft, ttp: Mapping | None = None):
    """The encoder of a TTP model under the SFT settings ``sft``; with ``ttp`` at the
    inference batch size (evaluation, generation), else the encoder's default (training)."""
    extra = {"batch_size": int(ttp["inference"]["batch_size"])} if ttp is not None else {}
    return TTPEncoder(
        model,
        tok,
        max_query_tokens=sft.max_query_tokens,
        max_item_tokens=sft.max_item_tokens,
        **extra,
    )


@dataclass
class TrainingRow:
    example_id: str
    query_ids: list[int]
    n_target: int
    item_ids: list[int]
    target_item: str


def build_prompt(ex: Example, corpus: ItemCorpus, tokenizer, settings: SFTSettings) -> str:
    """The query prompt of an example (shared by SFT and evaluation)."""
    if ex.selected_history is None:
        raise SFTDataError(
            f"{ex.example_id}: no selected_history; run history selection before building "
            "prompts (an empty list means an empty history, None means not selected)"
        )
    history = [
        truncate_to_tokens(
            tokenizer,
            corpus[i].text(settings.item_fields, settings.max_features),
            settings.history_item_tokens,
        )
        for i in ex.selected_history
    ]
    return query_prompt(tokenizer, history, ex.query, settings.system_prompt)


def build_rows(
    records: Sequence[dict], corpus: ItemCorpus, encoder: TTPEncoder, settings: SFTSettings
) -> list[TrainingRow]:
    rows = []
    for rec in records:
        ex = Example.from_record(rec, f"sft record {rec.get('example_id')!r}")
        rewrite = rec.get("rewrite")
        if not isinstance(rewrite, str) or not rewrite.strip():
            raise SFTDataError(f"{ex.example_id}: missing teacher rewrite")
        prompt = build_prompt(ex, corpus, encoder.tokenizer, settings)
        q_ids, n_target = encoder.query_ids(prompt, target_text(rewrite))
        item = corpus[ex.target].text(settings.item_fields, settings.max_features)
        rows.append(TrainingRow(ex.example_id, q_ids, n_target, encoder.item_ids(item), ex.target))
    return rows
