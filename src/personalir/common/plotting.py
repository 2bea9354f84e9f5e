"""One style for every figure of both documents: seaborn's ``whitegrid`` theme with its
colour-blind palette, small fonts that match a LaTeX page, embedded TrueType fonts, and vector
PDFs written atomically without creation dates (the same data give the same bytes).

Figure modules call :func:`pyplot` (matplotlib on the Agg backend, the style applied) and
:func:`save`; only the plotting rules import them, so restyling never reruns a computation.
"""

from __future__ import annotations

from pathlib import Path

from personalir.common.io import atomic_path

RC = {
    "font.size": 8,
    "axes.titlesize": 9,
    "axes.labelsize": 8,
    "legend.fontsize": 7,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "pdf.fonttype": 42,
    "svg.hashsalt": "personalir",
    "axes.spines.top": False,
    "axes.spines.right": False,
}
#: Per format, the metadata left out so that a figure's bytes depend on its data only.
METADATA = {
    "pdf": {"CreationDate": None, "ModDate": None, "Producer": None},
    "png": {"Software": None},
    "svg": {"Date": None},
}


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend with the shared theme applied (fontTools'
    per-glyph subsetting messages, which embedding TrueType fonts logs at INFO, kept out of
    the rules' logs)."""
    import logging

    import matplotlib

    logging.getLogger("fontTools").setLevel(logging.WARNING)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", palette="colorblind", rc=RC)
    return plt


def palette(n: int) -> list:
    """``n`` colours of the shared colour-blind palette."""
    import seaborn as sns

    return sns.color_palette("colorblind", n_colors=max(1, n))


def save(fig, out: str | Path, *, close: bool = True, **savefig) -> None:
    """Write ``fig`` atomically in the format of ``out``'s suffix; close it unless told not."""

    suffix = Path(out).suffix
    fmt = suffix.lstrip(".")
    with atomic_path(out, suffix=suffix) as tmp:
        fig.savefig(tmp, format=fmt, metadata=METADATA.get(fmt), **savefig)
    if close:
        import matplotlib.pyplot as plt

        plt.close(fig)
