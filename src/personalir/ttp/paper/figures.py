"""Rule ttp_loss_figure: the SFT loss curve (total, token CE and InfoNCE per step).

A plotting rule apart from training, so restyling the figure never re-trains; only that rule
imports this module (and matplotlib). PDFs carry no creation date, so they are reproducible.
"""

from __future__ import annotations

from pathlib import Path

from personalir.common.io import read_json
from personalir.common.plotting import palette as colours
from personalir.common.plotting import pyplot, save


def save_figure(fig, out: str | Path, **savefig) -> None:
    """Write ``fig`` atomically (:func:`personalir.common.plotting.save`) and close it."""

    save(fig, out, **savefig)


def _pyplot():

    return pyplot()


def loss_figure(*, loss_path: str | Path, out: str | Path, title: str) -> None:
    plt = _pyplot()

    hist = read_json(loss_path)
    steps = [h["step"] for h in hist]
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    for key, name in (
        ("loss", "total"),
        ("token_loss", "token CE"),
        ("contrastive_loss", "InfoNCE"),
    ):
        ax.plot(steps, [h[key] for h in hist], label=name, linewidth=1.2)
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(title, fontsize=9)
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    save_figure(fig, out)


RL_CURVES = (
    ("reward", "total reward"),
    ("rewards/format/mean", "R_format"),
    ("rewards/length/mean", "R_length"),
    ("rewards/retrieval/mean", "R_retrieval"),
    ("kl", "KL to SFT policy"),
    ("cl_loss", "InfoNCE (selected positives)"),
)


def rl_figure(*, log_paths, variants, out: str | Path, title: str) -> None:
    """One panel per logged quantity (reward components, KL, the contrastive loss), one line
    per RL variant, against the GRPO step."""

    plt = _pyplot()
    palette = colours(len(variants))
    fig, axes = plt.subplots(2, 3, figsize=(9.0, 4.8), sharex=True)
    for path, variant, colour in zip(log_paths, variants, palette, strict=True):
        hist = read_json(path)
        steps = [h["step"] for h in hist]
        for ax, (key, _) in zip(axes.flat, RL_CURVES, strict=True):
            ax.plot(
                steps,
                [h.get(key, float("nan")) for h in hist],
                marker="o",
                markersize=2.5,
                linewidth=1.1,
                color=colour,
                label=variant,
            )
    for ax, (_, name) in zip(axes.flat, RL_CURVES, strict=True):
        ax.set_title(name, fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("GRPO step", fontsize=8)
    axes.flat[0].legend(frameon=False, fontsize=6)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    save_figure(fig, out)
