"""PQB's two validation tables (LLM vs human; agreement) and the rating-distribution figure.

Both tables put the paper's values (``config/paper_results/pqb.yaml``, ``validation``) beside
ours. Captions name the judge that produced the LLM column and say where the human column
comes from: imported annotation files, or, on the embedded default, simulated annotators (and
then that its numbers describe no people). Without human labels the human cells print "--".
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from personalir.common.io import read_json, write_text
from personalir.common.latex import dataframe_to_latex, escape
from personalir.common.plotting import pyplot, save
from personalir.common.seeding import derive_seed
from personalir.validation.dimensions import DIMENSIONS
from personalir.validation.measures import MEASURES, label_shares, measures
from personalir.validation.stage import csv_text, read_jsonl

#: ``config/paper_results/pqb.yaml`` as package data (as personalir.common.config.PAPER_RESULTS).
PAPER_RESULTS = resources.files("personalir") / "_resources" / "paper_results" / "pqb.yaml"
#: Agreement rows in the paper's wording, by dimension.
AGREEMENT_ROWS = {
    "naturalness": "Naturalness",
    "syntactic_quality": "Syntactic quality",
    "attribution": "Attribution",
    "error_consistency": "Error consistency",
}


def paper_validation(path: str | Path = PAPER_RESULTS) -> dict:
    """The paper's ``validation`` block (judge, ratings rows, agreement rows)."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    return data["validation"]


def _fmt_ci(value: float, low: float, high: float, digits: int) -> str:
    if value != value:
        return "--"
    text = f"{value:.{digits}f}"
    if low == low and high == high:
        text += f" [{low:.{digits}f}, {high:.{digits}f}]"
    return text


def ratings_frame(llm: pd.DataFrame, human: pd.DataFrame | None, paper: dict) -> pd.DataFrame:
    """Rows: the six measures; columns: ours (LLM, human, with n and CI) and the paper's."""
    rows = []
    paper_rows = paper["ratings"]["rows"]
    human_by = human.set_index("measure") if human is not None else None
    for (name, _dim, _unit), (_, ours) in zip(MEASURES, llm.iterrows(), strict=True):
        assert ours["measure"] == name
        h = human_by.loc[name] if human_by is not None else None
        ref = paper_rows.get(name, {})
        rows.append(
            {
                "measure": name,
                "llm": ours["value"],
                "llm_ci_low": ours["ci_low"],
                "llm_ci_high": ours["ci_high"],
                "llm_n": int(ours["n"]),
                "human": h["value"] if h is not None else np.nan,
                "human_ci_low": h["ci_low"] if h is not None else np.nan,
                "human_ci_high": h["ci_high"] if h is not None else np.nan,
                "human_n": int(h["n"]) if h is not None else 0,
                "paper_llm": ref.get("LLM", np.nan),
                "paper_human": ref.get("Human", np.nan),
                "chance": ref.get("chance", np.nan),
            }
        )
    return pd.DataFrame(rows)


def agreement_frame(agreement: pd.DataFrame | None, paper: dict) -> pd.DataFrame:
    """Rows: the four dimensions; ours (alpha, kappa with CIs, items) and the paper's."""
    paper_rows = paper["agreement"]["rows"]
    ours = agreement.set_index("dimension") if agreement is not None else None
    rows = []
    for dim, name in AGREEMENT_ROWS.items():
        a = ours.loc[dim] if ours is not None and dim in ours.index else None

        def get(col, a=a):
            return float(a[col]) if a is not None and col in a else np.nan

        rows.append(
            {
                "dimension": name,
                "alpha": get("alpha"),
                "alpha_ci_low": get("alpha_ci_low"),
                "alpha_ci_high": get("alpha_ci_high"),
                "kappa": get("kappa"),
                "kappa_ci_low": get("kappa_ci_low"),
                "kappa_ci_high": get("kappa_ci_high"),
                "items": int(get("n_items")) if a is not None else 0,
                "percent_agreement": get("percent_agreement"),
                "paper_alpha": paper_rows.get(name, {}).get("alpha", np.nan),
                "paper_kappa": paper_rows.get(name, {}).get("kappa", np.nan),
            }
        )
    return pd.DataFrame(rows)


def _human_words(source: str) -> str:
    if source == "simulated":
        return (
            "simulated annotators (a seeded noise model around the judge's labels; no people "
            "took part, so the human column and the agreement describe the simulation)"
        )
    if source == "files":
        return "the imported annotation files"
    return "no human labels (human cells print --)"


def ratings_latex(
    frame: pd.DataFrame,
    *,
    judge: str,
    human_source: str,
    config_label: str,
    synthetic: bool,
    paper_judge: str,
) -> str:
    digits = {"mean": 2, "percent": 1}
    units = {name: unit for name, _, unit in MEASURES}
    table = pd.DataFrame(
        {
            "Measure": frame["measure"],
            "LLM": [
                _fmt_ci(r.llm, r.llm_ci_low, r.llm_ci_high, digits[units[r.measure]])
                for r in frame.itertuples()
            ],
            "Human": [
                _fmt_ci(r.human, r.human_ci_low, r.human_ci_high, digits[units[r.measure]])
                for r in frame.itertuples()
            ],
            "n (LLM/human)": [f"{r.llm_n}/{r.human_n}" for r in frame.itertuples()],
            "Paper LLM": frame["paper_llm"].astype(float),
            "Paper human": frame["paper_human"].astype(float),
        }
    )
    sample = (
        " The data are the synthetic embedded sample: these numbers exercise the stage and are "
        "no finding about real users."
        if synthetic
        else ""
    )
    caption = (
        f"Validation: LLM judge vs human ratings ({escape(config_label)}). LLM: "
        f"{escape(judge)}; human: {escape(_human_words(human_source))}. Attribution is the "
        "correct share among decisive answers (chance 50); percentages in points; 95\\% "
        "bootstrap intervals over items in brackets. Paper: "
        f"{escape(paper_judge)}.{sample}"
    )
    return dataframe_to_latex(
        table,
        caption=caption,
        label="tab:validation-ratings",
        floatfmt=".2f",
        header_groups=[("", 1), ("Ours", 3), ("Paper", 2)],
        fit_width=True,
    )


def agreement_latex(
    frame: pd.DataFrame,
    *,
    human_source: str,
    config_label: str,
    synthetic: bool,
    primaries: int,
    n_annotators: int,
) -> str:
    table = pd.DataFrame(
        {
            "Dimension": frame["dimension"],
            "alpha": [
                _fmt_ci(r.alpha, r.alpha_ci_low, r.alpha_ci_high, 2) for r in frame.itertuples()
            ],
            "kappa": [
                _fmt_ci(r.kappa, r.kappa_ci_low, r.kappa_ci_high, 2) for r in frame.itertuples()
            ],
            "Items": frame["items"].astype(int),
            "Paper alpha": frame["paper_alpha"].astype(float),
            "Paper kappa": frame["paper_kappa"].astype(float),
        }
    )
    sample = " On the synthetic embedded sample." if synthetic else ""
    caption = (
        f"Agreement between the {primaries} primary annotators of each item (of "
        f"{n_annotators}; {escape(config_label)}): Krippendorff's alpha (ordinal for the "
        "rating scales and error consistency, nominal for attribution) and Cohen's kappa "
        "(quadratic weights for ordinal scales), 95\\% bootstrap intervals over items. Labels "
        f"from {escape(_human_words(human_source))}.{sample}"
    )
    return dataframe_to_latex(
        table,
        caption=caption,
        label="tab:validation-agreement",
        floatfmt=".2f",
        header_groups=[("", 1), ("Ours", 3), ("Paper", 2)],
        column_labels=["Dimension", r"$\alpha$", r"$\kappa$", "Items", r"$\alpha$", r"$\kappa$"],
    )


def distribution_figure(
    llm: pd.DataFrame, human: pd.DataFrame | None, path, *, judge: str, human_source: str
) -> None:
    """Label shares per dimension, LLM vs human, one panel per dimension (vector PDF)."""
    import seaborn as sns

    plt = pyplot()
    dims = list(AGREEMENT_ROWS)
    fig, axes = plt.subplots(1, len(dims), figsize=(3.1 * len(dims), 2.8))
    human_name = "Human (simulated)" if human_source == "simulated" else "Human"
    for ax, name in zip(axes, dims, strict=True):
        dim = DIMENSIONS.get(name)
        parts = [("LLM", llm)] + ([(human_name, human)] if human is not None else [])
        rows = []
        for who, labels in parts:
            for label, share in label_shares(labels, name, dim.labels).items():
                rows.append({"label": label.replace("_", " "), "share": share, "rater": who})
        sns.barplot(data=pd.DataFrame(rows), x="label", y="share", hue="rater", ax=ax)
        ax.set_title(dim.title, fontsize=10)
        ax.set_xlabel("")
        ax.set_ylabel("share of labels" if ax is axes[0] else "")
        ax.set_ylim(0, 1)
        ax.tick_params(axis="x", labelsize=8)
        if ax is not axes[-1] and ax.get_legend() is not None:
            ax.get_legend().remove()
    axes[-1].legend(fontsize=8, title=None)
    fig.suptitle(f"Rating distributions: {judge} vs {human_name.lower()}", fontsize=10)
    fig.tight_layout()
    save(fig, path)


def make_tables(
    *,
    key_path,
    judgements_path,
    human_labels_path,
    agreement_path,
    judge_report_path,
    human_report_path,
    params: dict,
    seed: int,
    config_label: str,
    synthetic: bool,
    paper_results,
    ratings_csv,
    agreement_csv,
    ratings_tex,
    agreement_tex,
    figure,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rule `validation_tables`: both tables (CSV + LaTeX) and the figure."""

    key = pd.DataFrame(read_jsonl(key_path))
    judge_report = read_json(judge_report_path)
    human_report = read_json(human_report_path)
    judgements = pd.read_csv(judgements_path, dtype=str, keep_default_na=False)
    llm_labels = judgements[judgements["status"] == "ok"][["item_id", "dimension", "label"]]
    boot = params["agreement"]
    llm = measures(
        llm_labels,
        key,
        bootstrap=boot["bootstrap"],
        confidence=boot["ci"],
        seed=derive_seed(seed, "validation-llm"),
    )
    has_human = human_report["annotations"] > 0
    human = None
    human_labels = None
    if has_human:
        human_labels = pd.read_csv(human_labels_path, dtype=str, keep_default_na=False)
        human_labels = human_labels[human_labels["status"].isin(["agreed", "adjudicated"])]
        human = measures(
            human_labels,
            key,
            bootstrap=boot["bootstrap"],
            confidence=boot["ci"],
            seed=derive_seed(seed, "validation-human"),
        )
    paper = paper_validation(paper_results)
    ratings = ratings_frame(llm, human, paper)
    agreement = pd.read_csv(agreement_path) if has_human else None
    agree = agreement_frame(agreement, paper)
    source = human_report["source"] if has_human else "none"
    write_text(ratings_csv, csv_text(ratings))
    write_text(agreement_csv, csv_text(agree))
    write_text(
        ratings_tex,
        ratings_latex(
            ratings,
            judge=judge_report["judge"],
            human_source=source,
            config_label=config_label,
            synthetic=synthetic,
            paper_judge=paper["judge"],
        ),
    )
    write_text(
        agreement_tex,
        agreement_latex(
            agree,
            human_source=source,
            config_label=config_label,
            synthetic=synthetic,
            primaries=human_report["primaries"],
            n_annotators=len(human_report["annotators"]),
        ),
    )
    distribution_figure(
        llm_labels, human_labels, figure, judge=judge_report["judge"], human_source=source
    )
    return ratings, agree
