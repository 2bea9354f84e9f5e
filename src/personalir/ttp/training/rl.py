"""Rule ttp_rl's model plumbing around :mod:`personalir.ttp.training.grpo`: the policy loaded
from the
SFT adapter (trainable) with a frozen copy (the reward's scorer), TRL's reference adapter
synchronised with it, the RL prompts as a dataset, TRL's GRPO configuration, the training
call, and the trained adapter saved in the SFT adapter's format."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch

from personalir.common.causal_lm import stable_adapter_config
from personalir.common.device import to_device, use_cuda_index
from personalir.common.io import atomic_path, log_run_facts, split_volatile, write_text
from personalir.ttp.inputs.data import Example, item_fields
from personalir.ttp.model.backbone import load_backbone
from personalir.ttp.model.encoder import TTPEncoder
from personalir.ttp.model.prompts import THINK_OPEN, embedding_token
from personalir.ttp.training.grpo import (
    FROZEN_ADAPTER,
    GRPOSettings,
    RetrievalScorer,
    TTPRewards,
    grpo_trainer_class,
)
from personalir.ttp.training.sft_data import build_prompt, sft_settings

ADAPTER_WEIGHTS = "adapter_model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"
_HEAD_PREFIX = "base_model.model.lm_head."


def _sft_adapter_parts(sft_adapter):
    """(LoRA config without output-layer trainable tokens, adapter tensors without them, the
    output layer's token ids and rows)."""
    from peft import LoraConfig
    from safetensors.torch import load_file

    config = LoraConfig.from_pretrained(str(sft_adapter))
    state = load_file(str(Path(sft_adapter) / ADAPTER_WEIGHTS))
    head = {k: v for k, v in state.items() if k.startswith(_HEAD_PREFIX)}
    tokens = dict(config.trainable_token_indices or {})
    head_ids = tokens.pop("lm_head", None)
    config.trainable_token_indices = tokens or None
    config.inference_mode = False
    rows = None
    if head:
        if len(head) != 1 or head_ids is None:
            raise ValueError(f"{sft_adapter}: unexpected output-layer tensors {sorted(head)}")
        rows = next(iter(head.values()))
    return config, {k: v for k, v in state.items() if k not in head}, head_ids, rows


def _load_adapter_state(model, state, adapter: str, source) -> None:
    from peft import set_peft_model_state_dict

    result = set_peft_model_state_dict(model, state, adapter_name=adapter)
    missing = [k for k in result.missing_keys if f".{adapter}" in k]
    if missing or result.unexpected_keys:
        raise ValueError(
            f"{source}: adapter tensors do not fit the model (missing {missing[:3]}, "
            f"unexpected {list(result.unexpected_keys)[:3]})"
        )


def load_policy(backbone: str, sft_adapter: str, dtype: str = "float32", device: str = "cpu"):
    """(peft model, tokenizer, backbone info): the SFT adapter as the trainable ``default``
    adapter and again, frozen, as :data:`FROZEN_ADAPTER` (the reward's scorer), both on
    ``device`` (built on the CPU, then moved: the frozen scorer is the same model under
    another adapter, so it is always where the policy is).

    TRL computes log-probabilities from the output layer's ``weight`` directly, so peft's
    trainable-token rows on the output layer would be ignored there. The SFT adapter's
    output rows (for ``<think>``, ``</think>``, ``<embed>``) are therefore written into the
    backbone's output layer (exactly what peft computes in the forward) and kept frozen
    during RL; :func:`save_rl_adapter` puts them back into the saved adapter, which then
    loads like the SFT one."""
    from peft import get_peft_model

    model, tok, info = load_backbone(backbone, dtype)
    config, state, head_ids, rows = _sft_adapter_parts(sft_adapter)
    if rows is not None:
        with torch.no_grad():
            head = model.get_output_embeddings().weight
            head[torch.tensor(head_ids)] = rows.to(head.dtype)
    model = get_peft_model(model, config)
    _load_adapter_state(model, state, "default", sft_adapter)
    model.add_adapter(FROZEN_ADAPTER, config)
    _load_adapter_state(model, state, FROZEN_ADAPTER, sft_adapter)
    model.set_adapter("default")
    for name, p in model.named_parameters():
        if f".{FROZEN_ADAPTER}" in name:
            p.requires_grad_(False)
    return to_device(model, device), tok, info


def save_rl_adapter(model, sft_adapter, out_dir) -> Path:
    """The trained ``default`` adapter in the SFT adapter's format (its config, and the
    output layer's token rows that stayed frozen), loadable by :func:`load_adapter`."""
    from peft import get_peft_model_state_dict
    from safetensors.torch import load_file

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    state = {
        k: v.detach().cpu().contiguous()
        for k, v in get_peft_model_state_dict(model, adapter_name="default").items()
    }
    sft_state = load_file(str(Path(sft_adapter) / ADAPTER_WEIGHTS))
    state.update({k: v for k, v in sft_state.items() if k.startswith(_HEAD_PREFIX)})
    if set(state) != set(sft_state):
        raise RuntimeError(
            f"RL adapter tensors differ from the SFT adapter's: {set(state) ^ set(sft_state)}"
        )
    from safetensors.torch import save_file

    with atomic_path(out / ADAPTER_WEIGHTS) as tmp:
        save_file(state, str(tmp), metadata={"format": "pt"})
    shutil.copyfile(Path(sft_adapter) / ADAPTER_CONFIG, out / ADAPTER_CONFIG)
    return out


def adapter_params(model, adapter: str) -> dict[str, torch.Tensor]:
    """Parameters of one adapter, keyed with the adapter's name removed."""
    out = {}
    for name, p in model.named_parameters():
        parts = name.split(".")
        if adapter in parts:
            parts.remove(adapter)
            out[".".join(parts)] = p
    return out


def sync_reference(model, source: str = FROZEN_ADAPTER, reference: str = "ref") -> int:
    """Make TRL's reference adapter an exact copy of the SFT adapter (TRL copies only the
    parameters whose names contain ``.default.``, which misses peft's trainable-token rows).
    Returns how many tensors had to be copied."""
    if reference not in getattr(model, "peft_config", {}):
        return 0
    src, ref = adapter_params(model, source), adapter_params(model, reference)
    missing = sorted(set(src) ^ set(ref))
    if missing:
        raise RuntimeError(f"reference and SFT adapters differ in parameters: {missing[:3]}")
    copied = 0
    with torch.no_grad():
        for k, p in ref.items():
            p.requires_grad_(False)
            if not torch.equal(p, src[k]):
                p.copy_(src[k])
                copied += 1
    return copied


def rl_inputs(records: Sequence[dict], corpus, tokenizer, ttp: Mapping, data_share: float):
    """What GRPO trains on: the chosen SFT records (the top ``data_share`` by teacher gain,
    :func:`personalir.ttp.training.grpo.rl_records`), the SFT settings, each record's query prompt
    (as SFT and the runs build it) and its target item's text, by example and item id."""
    from personalir.ttp.training.grpo import rl_records

    chosen = rl_records(records, data_share)
    sft = sft_settings(ttp)
    prompts = {
        r["example_id"]: build_prompt(
            Example.from_record(r, f"sft record {r['example_id']!r}"), corpus, tokenizer, sft
        )
        for r in chosen
    }
    fields, feats = item_fields(ttp), ttp["items"]["max_features"]
    item_texts = {r["target"]: corpus[r["target"]].text(fields, feats) for r in chosen}
    return chosen, sft, prompts, item_texts


def build_dataset(records: Sequence[dict], prompts: Mapping[str, str]):
    from datasets import Dataset

    return Dataset.from_list(
        [
            {
                "prompt": prompts[r["example_id"]] + THINK_OPEN,
                "query_prompt": prompts[r["example_id"]],
                "query": r["query"],
                "target": r["target"],
                "example_id": r["example_id"],
            }
            for r in records
        ]
    )


def grpo_config(
    settings: GRPOSettings, out_dir: str, *, seed: int, steps: int, device: str = "cpu"
):
    """TRL's configuration of a run. ``device``: where the policy is (``ttp.device``);
    transformers puts the model on a visible GPU unless told ``use_cpu``, which is set only
    when a GPU is visible and the policy is on the CPU (on a machine without one the
    configuration is the same as it always was)."""
    from trl import GRPOConfig

    extra = {}
    if torch.device(device).type == "cpu" and torch.cuda.is_available():
        extra["use_cpu"] = True
    return GRPOConfig(
        output_dir=out_dir,
        per_device_train_batch_size=settings.prompts_per_step * settings.group_size,
        num_generations=settings.group_size,
        steps_per_generation=1,
        gradient_accumulation_steps=1,
        max_steps=steps,
        learning_rate=settings.learning_rate,
        lr_scheduler_type=settings.lr_scheduler,
        warmup_steps=0,
        temperature=settings.temperature,
        top_p=settings.top_p,
        max_completion_length=settings.max_completion_tokens,
        beta=settings.beta_kl,
        epsilon=settings.epsilon,
        loss_type=settings.loss_type,
        reward_weights=list(settings.reward.weights),
        logging_steps=1,
        save_strategy="steps",
        save_steps=settings.checkpoint_every,
        save_total_limit=settings.keep_checkpoints,
        report_to=[],
        seed=seed,
        data_seed=seed,
        bf16=False,
        fp16=False,
        disable_tqdm=False,
        dataloader_num_workers=0,
        # TRL turns checkpointing on by default; the sample's model is small enough without.
        gradient_checkpointing=settings.gradient_checkpointing,
        log_completions=False,
        **extra,
    )


def total_steps(n_prompts: int, settings: GRPOSettings) -> int:
    per_epoch = max(1, math.ceil(n_prompts / settings.prompts_per_step))
    steps = max(1, math.ceil(settings.epochs * per_epoch))
    return min(steps, settings.max_steps) if settings.max_steps else steps


def step_candidates(candidates_dir: str | Path) -> list[dict]:
    """``{"step", "path"}`` of every saved step candidate, in step order."""
    return sorted(
        (
            {"step": int(p.stem.split("-")[1]), "path": p}
            for p in Path(candidates_dir).glob("step-*.safetensors")
        ),
        key=lambda c: c["step"],
    )


def _step_callback(model, *, stop_at: int | None, candidates_dir: str | Path | None):
    """A transformers callback that saves the trainable weights after every step (the
    candidates of model selection) and ends training after ``stop_at`` steps. The learning
    rate schedule is not touched, so a run stopped at step k equals step k of a longer one."""
    from safetensors.torch import save_file
    from transformers import TrainerCallback

    class StepCandidates(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if candidates_dir is not None:
                path = Path(candidates_dir) / f"step-{state.global_step:06d}.safetensors"
                tmp = path.with_name(path.name + ".tmp")
                weights = {
                    n: p.detach().contiguous()
                    for n, p in model.named_parameters()
                    if p.requires_grad
                }
                save_file(weights, tmp)
                tmp.replace(path)
            if stop_at is not None and state.global_step >= stop_at:
                control.should_training_stop = True
            return control

    return StepCandidates()


def _checkpoint_step(folder: str | Path) -> int:
    """The global step a transformers checkpoint folder was saved at."""
    state = Path(folder) / "trainer_state.json"
    try:
        return int(json.loads(state.read_text(encoding="utf-8"))["global_step"])
    except (OSError, ValueError, KeyError, TypeError):
        return int(Path(folder).name.rsplit("-", 1)[-1])


def _stable_checkpoints():
    """A transformers callback that makes each saved checkpoint's bytes depend on the run only:
    PEFT's adapter configs with their module sets sorted, and the trainer state without step
    times (which go to the log)."""
    from transformers import TrainerCallback

    class StableCheckpoints(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            for config in sorted(folder.rglob("adapter_config.json")):
                stable_adapter_config(config.parent)
            trainer_state = folder / "trainer_state.json"
            if trainer_state.exists():
                kept, facts = split_volatile(json.loads(trainer_state.read_text(encoding="utf-8")))
                log_run_facts(trainer_state, facts)
                write_text(trainer_state, json.dumps(kept, indent=2, sort_keys=True) + "\n")
            return control

    return StableCheckpoints()


def train_grpo(
    model,
    tokenizer,
    dataset,
    item_texts: Mapping[str, str],
    settings: GRPOSettings,
    out_dir: str,
    *,
    encoder: TTPEncoder,
    seed: int,
    resume: bool = True,
    stop_at: int | None = None,
    candidates_dir: str | Path | None = None,
    log=print,
) -> tuple[object, dict]:
    """Run TRL's GRPO with the TTP rewards and the contrastive term. Returns (trainer,
    summary). Checkpoints are TRL/transformers checkpoints under ``out_dir``; with
    ``resume`` the latest is continued (the caller clears checkpoints of other runs).
    ``candidates_dir``: save the trainable weights after every step there; ``stop_at``: end
    after that many steps (of the schedule of the configured ones)."""
    from transformers.trainer_utils import get_last_checkpoint

    emb_id = tokenizer.convert_tokens_to_ids(embedding_token())
    eos = [emb_id] + ([tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else [])
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    scorer = RetrievalScorer(
        model, encoder, item_texts, FROZEN_ADAPTER if settings.scorer == "frozen" else None
    )
    rewards = TTPRewards(tokenizer, scorer, settings.reward)
    steps = total_steps(len(dataset), settings)
    device = encoder.device  # the policy's (and its frozen scorer's) device
    use_cuda_index(device)
    trainer_cls = grpo_trainer_class()
    trainer = trainer_cls(
        model=model,
        reward_funcs=rewards.functions(),
        args=grpo_config(settings, out_dir, seed=seed, steps=steps, device=str(device)),
        train_dataset=dataset,
        processing_class=tokenizer,
        ttp_rewards=rewards,
        encoder=encoder,
        settings=settings,
        item_texts=item_texts,
        seed=seed,
    )
    if candidates_dir is not None:
        Path(candidates_dir).mkdir(parents=True, exist_ok=True)
    if stop_at is not None or candidates_dir is not None:
        trainer.add_callback(_step_callback(model, stop_at=stop_at, candidates_dir=candidates_dir))
    trainer.add_callback(_stable_checkpoints())
    copied = sync_reference(trainer.model)
    last = get_last_checkpoint(out_dir) if resume else None
    if last and _checkpoint_step(last) >= (stop_at or steps):
        # A finished run's last checkpoint: transformers would train one step past it.
        log(f"not resuming from {last}: it is the end of a finished run; training afresh")
        for old in Path(out_dir).glob("checkpoint-*"):
            shutil.rmtree(old, ignore_errors=True)
        last = None
    if last:
        log(f"resuming GRPO from {last}")
    trainer.train(resume_from_checkpoint=last)
    return trainer, {
        "steps": steps,
        "completed_steps": int(trainer.state.global_step),
        "stop_at": stop_at,
        "prompts": len(dataset),
        # what an earlier, interrupted run left: a fact of this run, kept in the rule's log
        "resumed_from_this_run": str(last) if last else None,
        "reference_tensors_synced": copied,
        "scorer": settings.scorer,
        "scorer_encoded": dict(scorer.encoded),
        "selections": trainer.selections,
    }
