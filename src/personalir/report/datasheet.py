"""Dataset statistics per domain (the paper's Table 1 columns as stages provide them)."""

from __future__ import annotations

import pandas as pd

from personalir.common.domains import display_label
from personalir.common.latex import HEADER_WIDTH, dataframe_to_latex

# Column name -> (stage report, key). Later stages append their own entries.
DATA_COLUMNS = {
    "Products": ("products", "products"),
    "Products with core terms": ("products", "eligible"),
    "Reviews": ("sentences", "reviews"),
    "Users": ("sentences", "users"),
    "User profiles": ("sentences", "users_selected"),
    "Sentences": ("sentences", "sentences_kept"),
}


def statistics_frame(per_domain: dict[str, dict[str, dict]]) -> pd.DataFrame:
    """``per_domain[domain][report_name]`` -> one row per domain plus an all-domains total."""
    rows = []
    for domain, reports in per_domain.items():
        row = {"Domain": display_label(domain)}
        for column, (report, key) in DATA_COLUMNS.items():
            row[column] = int(reports[report][key])
        quarantined = sum(
            sum(reports[q].get("quarantined_by_reason", {}).values())
            for q in ("quality_reviews", "quality_meta")
            if q in reports
        )
        row["Quarantined records"] = int(quarantined)
        rows.append(row)
    df = pd.DataFrame(rows)
    total = {"Domain": "Total"}
    for col in df.columns[1:]:
        total[col] = int(df[col].sum())
    return pd.concat([df, pd.DataFrame([total])], ignore_index=True)


def statistics_latex(df: pd.DataFrame, label: str) -> str:
    return dataframe_to_latex(
        df,
        caption=(
            "Dataset statistics per domain (configuration: "
            f"\\texttt{{{label}}}). User profiles are users with enough review sentences."
        ),
        label="tab:dataset-statistics",
        midrule_before=[len(df) - 1],
        header_width=HEADER_WIDTH,
    )
