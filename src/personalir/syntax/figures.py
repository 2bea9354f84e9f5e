"""Figures of the syntax stage, drawn from the files the compute rules wrote (never recomputed).

- ROC curves: per model and domain, the per-user ROC curves of the AUROC protocol
  (genuine vs same-product impostor scores under the user's own profile), vertically averaged
  on a fixed false-positive grid by the attribution rule (``attribution_roc.csv``), so the
  area under the drawn curve is the reported mean per-user AUROC up to the grid.
- Training curves: the encoder's training and calib InfoNCE loss per epoch, the kept epoch
  marked.
"""

from __future__ import annotations

import pandas as pd

from personalir.common.domains import display_label
from personalir.common.plotting import pyplot, save


def _plt():

    return pyplot()


def _save(fig, paths) -> None:

    for path in paths:
        save(fig, path, close=False, bbox_inches="tight")


def plot_roc(
    domains: list[str],
    rocs: list[pd.DataFrame],
    labels: dict[str, str],
    aurocs: dict[tuple[str, str], float],
    paths,
) -> None:
    """One panel per domain; the legend (shared, below) names each model with its mean AUROC
    averaged over the domains shown."""
    plt = _plt()
    fig, axes = plt.subplots(1, len(domains), figsize=(2.4 * len(domains), 3.2), squeeze=False)
    handles = {}
    for ax, domain, table in zip(axes[0], domains, rocs, strict=True):
        for model, curve in table.groupby("model", sort=False):
            lw = 1.8 if model == "rank_one_diagonal_gaussian" else 0.9
            (line,) = ax.plot(curve["fpr"], curve["tpr"], lw=lw)
            handles.setdefault(model, line)
        ax.plot([0, 1], [0, 1], ls=":", c="grey", lw=0.8)
        ax.set_title(display_label(domain))
        ax.set_xlabel("False positive rate")
        ax.set_aspect("equal")
    axes[0][0].set_ylabel("True positive rate")
    names = []
    for model in handles:
        values = [aurocs[(d, model)] for d in domains if (d, model) in aurocs]
        mean = sum(values) / len(values) if values else float("nan")
        names.append(f"{labels.get(model, model)} ({mean:.3f})")
    fig.legend(
        list(handles.values()),
        names,
        loc="lower center",
        ncol=2,
        frameon=False,
        fontsize=6,
        bbox_to_anchor=(0.5, -0.02),
    )
    fig.tight_layout(rect=(0, 0.22, 1, 1))
    _save(fig, paths)
    plt.close(fig)


def plot_training(domains: list[str], curves: list[pd.DataFrame], best: list[int], paths):
    plt = _plt()
    fig, axes = plt.subplots(1, len(domains), figsize=(2.6 * len(domains), 2.2), squeeze=False)
    for ax, domain, curve, best_epoch in zip(axes[0], domains, curves, best, strict=True):
        trained = curve[curve["epoch"] > 0]
        ax.plot(trained["epoch"], trained["train_loss"], label="train", lw=1.2)
        ax.plot(curve["epoch"], curve["calib_loss"], label="calib (held out)", lw=1.2)
        ax.axvline(best_epoch, ls="--", c="grey", lw=0.8)
        ax.set_title(display_label(domain))
        ax.set_xlabel("Epoch")
    axes[0][0].set_ylabel("InfoNCE loss")
    axes[0][0].legend(frameon=False)
    fig.tight_layout()
    _save(fig, paths)
    plt.close(fig)
