"""Rule ttp_loss_figure: the SFT loss curve (total, token CE and InfoNCE per step).

A plotting rule apart from training, so restyling the figure never re-trains; only that rule
imports this module (and matplotlib). PDFs carry no creation date, so they are reproducible.
"""

from __future__ import annotations

from pathlib import Path

from personalir.common.io import atomic_path, read_json


def save_figure(fig, out: str | Path, **savefig) -> None:
    """Write ``fig`` atomically in the format of ``out``'s suffix (PDFs without a creation
    date, so they are reproducible) and close it."""
    import matplotlib.pyplot as plt

    suffix = Path(out).suffix
    with atomic_path(out, suffix=suffix) as tmp:
        fig.savefig(
            tmp,
            format=suffix.lstrip("."),
            metadata={"CreationDate": None} if suffix == ".pdf" else None,
            **savefig,
        )
    plt.close(fig)


def loss_figure(*, loss_path: str | Path, out: str | Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    palette = sns.color_palette("colorblind", n_colors=max(1, len(variants)))
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
