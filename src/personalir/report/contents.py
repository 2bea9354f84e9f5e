"""What each paper shows and where ours is: the contents table that opens each document.

:data:`CONTENTS` lists, per document (``pqb``, ``ttp``), every table and figure the paper has
that carries results (as far as ``config/paper_results/`` records them) and the extra items
this project adds: the LaTeX label of ours, or the reason ours is absent. The manuscripts
number TTP's items as the paper does (``\\PaperTable{4}``); the PQB manuscript's own numbers
are not in the paper-results data, so PQB's items are named by subject.

:func:`contents_tex` renders the table; :func:`front_matter_tex` the configuration, commit and
data fingerprints that produced the document. Tests read :data:`CONTENTS` to check that a
built PDF shows every present item.
"""

from __future__ import annotations

import hashlib
import subprocess  # nosec B404  # git with an argv list, no shell
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from personalir.common.io import sha256_file
from personalir.common.latex import escape

DOCUMENTS = ("pqb", "ttp")


@dataclass(frozen=True)
class PaperItem:
    """One table or figure of a paper: its name there, what it shows, ours."""

    paper: str  # "Table 4", or the subject where the paper's number is unknown
    subject: str
    label: str | None  # ours, in this document; None: absent
    reason: str = ""  # why ours is absent (or how ours differs)
    ours_only: bool = False  # not in the paper: added here

    @property
    def kind(self) -> str:
        return "figure" if self.label and self.label.startswith("fig:") else "table"


_P = PaperItem
#: The closing discussion of both documents (``personalir.ttp.evaluation.on_pqb``).
_TTP_ON_PQB = (
    _P(
        "TTP on PQB",
        "personalised retrievers on PQB's query pairs, with and without the user's history",
        "tab:ttp-on-pqb",
        ours_only=True,
    ),
    _P(
        "History effect on PQB",
        "does the history make the ranking more robust? (with - without, held / not held)",
        "tab:ttp-on-pqb-effects",
        ours_only=True,
    ),
)
CONTENTS: dict[str, tuple[PaperItem, ...]] = {
    "pqb": (
        _P(
            "Dataset table",
            "pairs, user profiles and sentences per domain",
            "tab:pqb-paper-dataset",
        ),
        _P(
            "Flip@K and Mean RRstd",
            "ranking instability under syntactic variation",
            "tab:pqb-paper-flip-rrstd",
        ),
        _P("Deg@K and MRRdeg", "degradation from writing errors", "tab:pqb-paper-degradation"),
        _P("Validation", "LLM judge and human ratings", "tab:validation-ratings"),
        _P(
            "Agreement",
            "annotators' Krippendorff's alpha and Cohen's kappa",
            "tab:validation-agreement",
        ),
        _P("Attribution", "user attribution by seven profile models", "tab:pqb-paper-attribution"),
        _P(
            "Error sampling",
            "the user's errors ranked among five samplers",
            "tab:pqb-paper-error-sampling",
        ),
        _P(
            "Claims",
            "the paper's stated claims checked on this run",
            "tab:pqb-claims",
            ours_only=True,
        ),
        _P(
            "Robustness against the paper",
            "Flip@1, Mean RRstd, Deg@20, MRRdeg: the paper's and ours per system",
            "fig:pqb-paper-retrieval",
            ours_only=True,
        ),
        _P(
            "Profiles against the paper",
            "attribution and error sampling: the paper's and ours per model",
            "fig:pqb-paper-profiles",
            ours_only=True,
        ),
        _P(
            "Per-domain robustness",
            "Flip@K and RRstd per domain and retriever",
            "tab:retrieval-flip-rrstd",
            ours_only=True,
        ),
        _P(
            "Per-domain degradation",
            "Deg@K and MRRdeg per domain and retriever",
            "tab:retrieval-degradation",
            ours_only=True,
        ),
        *_TTP_ON_PQB,
    ),
    "ttp": (
        _P("Table 3", "test-set statistics", "tab:ttp-table3"),
        _P("Table 4", "personalised retrieval against the baselines", "tab:ttp-table4"),
        _P("Table 5", "public benchmarks (PersonalWAB Amazon, KuaiSearch)", "tab:ttp-table5"),
        _P("Table 6", "core component ablation", "tab:ttp-table6"),
        _P("Table 7", "RL component ablation", "tab:ttp-table7"),
        _P("Table 8", "distilled student", "tab:ttp-table8"),
        _P(
            "Table 9",
            "seven-day online A/B test",
            None,
            "needs live search traffic; cannot be reproduced offline",
        ),
        _P(
            "Figure 3",
            "rewrite categories of Broad queries",
            "fig:ttp-figure3",
            "an automatic classifier of our rewrites, where the paper annotated by hand",
        ),
        _P("Figure 5", "gain over the query-only embedding", "fig:ttp-figure5"),
        _P("Figure 6", "history length", "fig:ttp-figure6"),
        _P("Figure 8", "effectiveness against serving latency", "fig:ttp-figure8"),
        _P(
            "Claims",
            "the paper's stated claims checked on this run",
            "tab:ttp-claims",
            ours_only=True,
        ),
        _P(
            "Table 4 as a figure",
            "Recall@20 per test set and method, ours and the paper's",
            "fig:ttp-table4",
            ours_only=True,
        ),
        _P("SFT loss", "token loss and InfoNCE per step", "fig:ttp-loss", ours_only=True),
        _P("GRPO curves", "rewards and KL per step and variant", "fig:ttp-rl", ours_only=True),
        *_TTP_ON_PQB,
    ),
}
#: Said under each contents table: what the paper-results data do not cover.
UNCOVERED = {
    "pqb": "The paper-results data name the PQB paper's tables by subject, not number, and "
    "record no values of its figures; its figures are not reproduced as such.",
    "ttp": "Tables 1--2 and Figures 1, 2, 4 and 7 carry no values in the paper-results data "
    "(the data record Tables 3--9 and Figures 3, 5, 6, 8); they are not reproduced.",
}


def items(doc: str) -> tuple[PaperItem, ...]:
    if doc not in CONTENTS:
        raise KeyError(f"unknown document {doc!r}; have {', '.join(CONTENTS)}")
    return CONTENTS[doc]


def contents_tex(doc: str) -> str:
    """The contents table: each paper item, and Table/Figure~\\ref of ours or the reason."""
    lines = [
        r"\begin{table}[h]",
        r"\centering",
        r"\small",
        r"\caption{The paper's tables and figures and where ours are. Absent ones say why; "
        r"items marked + are not in the paper. " + escape(UNCOVERED[doc]) + "}",
        rf"\label{{tab:{doc}-contents}}",
        # Every column wraps: an item's name ("Robustness against the paper +") is long.
        r"\begin{tabular}{p{0.24\linewidth}p{0.4\linewidth}p{0.26\linewidth}}",
        r"\toprule",
        r"Paper & Shows & Here \\",
        r"\midrule",
    ]
    for it in items(doc):
        name = escape(it.paper) + (" +" if it.ours_only else "")
        if it.label:
            where = ("Figure" if it.kind == "figure" else "Table") + rf"~\ref{{{it.label}}}"
            where += f" ({escape(it.reason)})" if it.reason else ""
        else:
            where = "absent: " + escape(it.reason)
        lines.append(rf"{name} & {escape(it.subject)} & {where} \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(lines)


def git_commit(repo: str | Path) -> str:
    """HEAD's hash, ``+ uncommitted changes`` when tracked files differ; ``unknown`` outside
    a git checkout (a copied tree, an archive)."""

    def git(*args: str) -> str:
        proc = subprocess.run(  # nosec B603 B607  # fixed git argv, no shell
            ["git", *args], cwd=repo, capture_output=True, text=True, check=True
        )
        return proc.stdout.strip()

    try:
        head = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + (" + uncommitted changes" if dirty else "")


def inputs_digest(paths: Sequence[str | Path]) -> str:
    """One sha256 over the files' names and contents (order-free)."""
    digest = hashlib.sha256()
    for path in sorted(map(Path, paths), key=lambda p: p.name):
        digest.update(f"{path.name}\0{sha256_file(path)}\n".encode())
    return digest.hexdigest()


def front_matter_tex(
    *,
    label: str,
    config_sha256: str,
    config_files: Sequence[str],
    commit: str,
    data: Mapping[str, str | Path],
    inputs: Sequence[str | Path],
    synthetic: bool,
) -> str:
    """The paragraph and table that open a document: configuration, commit, data
    fingerprints (sha256 of each raw file), and one digest of the tables and figures."""
    rows = [
        rf"Configuration & \texttt{{{escape(label)}}} (config sha256 "
        rf"\texttt{{{config_sha256[:16]}}}) \\",
        rf"Config files & \texttt{{{escape(' '.join(config_files) or '(defaults)')}}} \\",
        rf"Commit & \texttt{{{escape(commit)}}} \\",
    ]
    for name, path in data.items():
        rows.append(rf"{escape(name)} & \texttt{{{sha256_file(path)[:32]}}} \\")
    rows.append(
        rf"Tables and figures ({len(inputs)} files) & \texttt{{{inputs_digest(inputs)[:32]}}} \\"
    )
    note = (
        "The data are the embedded synthetic sample world: every number below exercises the "
        "pipeline and is not a finding about real users."
        if synthetic
        else "The data are the files fingerprinted below."
    )
    return "\n".join(
        [
            r"\noindent\textbf{Produced by.} " + note + " Fingerprints are sha256 "
            r"prefixes; each results folder's \texttt{provenance.json} has every artifact's.",
            r"\begin{center}\small",
            r"\begin{tabular}{lp{0.62\linewidth}}",
            r"\toprule",
            *rows,
            r"\bottomrule",
            r"\end{tabular}",
            r"\end{center}",
            "",
        ]
    )
