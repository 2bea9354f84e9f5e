"""Rule ttp_loss_figure: the SFT loss curve (total, token CE and InfoNCE per step).

A plotting rule apart from training, so restyling the figure never re-trains; only that rule
imports this module (and matplotlib). PDFs carry no creation date, so they are reproducible.
"""

from __future__ import annotations

from pathlib import Path

from personalir.common.io import atomic_path, read_json


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
    suffix = Path(out).suffix
    with atomic_path(out, suffix=suffix) as tmp:
        fig.savefig(
            tmp,
            format=suffix.lstrip("."),
            metadata={"CreationDate": None} if suffix == ".pdf" else None,
        )
    plt.close(fig)
