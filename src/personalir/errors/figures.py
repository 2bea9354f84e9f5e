"""The errors stage's figure: mechanism distributions of a few users against their domain's.

Drawn from the profiles alone (no model is re-run), one panel per domain; the plotted
numbers are returned so they can be written next to the figure.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from personalir.common.domains import display_label
from personalir.common.plotting import pyplot, save
from personalir.errors.labels import MECHANISM_LABELS
from personalir.errors.mechanisms import MECHANISM_NAMES
from personalir.errors.profiles import ProfileSet


def figure_users(profiles: ProfileSet, n_users: int) -> list[str]:
    """The ``n_users`` users with most character-level edits (ties by id)."""
    ranked = sorted(profiles.users.values(), key=lambda p: (-p.n_char_edits, p.user_id))
    return [p.user_id for p in ranked[:n_users] if p.n_char_edits > 0]


def mechanism_figure(
    profiles: dict[str, ProfileSet], n_users: int, out: str | Path, *, label: str
) -> pd.DataFrame:
    """Grouped bars of P_u(m) for a few users against the domain's P_g(m), one panel per
    domain; returns the plotted numbers."""

    plt = pyplot()

    domains = list(profiles)
    fig, axes = plt.subplots(len(domains), 1, figsize=(7.0, 2.3 * len(domains)), squeeze=False)
    rows = []
    for ax, domain in zip(axes[:, 0], domains, strict=True):
        ps = profiles[domain]
        series = [("domain (global)", ps.global_profile)]
        for i, u in enumerate(figure_users(ps, n_users)):
            series.append((f"user {i + 1} ({ps[u].n_char_edits} edits)", ps[u]))
        width = 0.8 / len(series)
        for k, (name, prof) in enumerate(series):
            probs = prof.p_mechanisms()
            xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(MECHANISM_NAMES))]
            ys = [probs[m] for m in MECHANISM_NAMES]
            ax.bar(
                xs,
                ys,
                width=width,
                label=name,
                color="black" if k == 0 else None,
                alpha=1.0 if k == 0 else 0.85,
            )
            for m, y in zip(MECHANISM_NAMES, ys, strict=True):
                rows.append(
                    {
                        "domain": domain,
                        "series": name,
                        "user_id": prof.user_id,
                        "mechanism": m,
                        "probability": round(y, 6),
                    }
                )
        top = max(r["probability"] for r in rows if r["domain"] == domain)
        ax.set_ylim(0, 1.4 * top)
        ax.set_xticks(range(len(MECHANISM_NAMES)))
        ax.set_xticklabels([MECHANISM_LABELS[m] for m in MECHANISM_NAMES], fontsize=8)
        ax.set_ylabel("P(mechanism)", fontsize=8)
        ax.set_title(display_label(domain), fontsize=9)
        ax.legend(fontsize=6, ncol=3, frameon=False, loc="upper right")
        ax.tick_params(axis="y", labelsize=7)
    fig.suptitle(f"Error mechanisms of individual users vs the domain ({label})", fontsize=9)
    fig.tight_layout()
    save(fig, out)
    return pd.DataFrame(rows)
