"""Rule queries_tables: the stage's tables across domains, CSV + LaTeX, and the
identifiability check.

The datasheet (the paper's Table 1 columns), the filter report (every candidate accounted for,
per backend) and the identifiability of the syntactic pairs, each from the files the selection
step wrote. The check fails the rule when too few pairs are attributed to their own users, so a
benchmark without personal signal never reaches the paper. The only queries module that renders
LaTeX: the compute steps never import it.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from personalir.common.domains import display_label
from personalir.common.io import atomic_path, read_json, write_text
from personalir.common.latex import HEADER_WIDTH, dataframe_to_latex
from personalir.queries.benchmark_format import read_benchmark

log = logging.getLogger("personalir.queries")


def datasheet_frame(domains, benchmarks, syntax_profiles, syntax_embeddings) -> pd.DataFrame:
    """The paper's Table 1 columns per domain and in total.

    Syntactic queries: distinct (product, user, text) syntactic queries; writing-error queries:
    error variants; total: their sum; user profiles: users with a syntactic profile; sentences:
    the review sentences those profiles were built from (the syntax stage's usable sentences).
    """
    rows, by_backend = [], []
    for d, bpath, ppath, epath in zip(
        domains, benchmarks, syntax_profiles, syntax_embeddings, strict=True
    ):
        recs = read_benchmark(bpath)
        syn = {
            (r["product"], r["user_id"], r["text"]): r["provenance"].get("backend", "unknown")
            for r in recs
            if r["kind"] == "syntactic"
        }
        err = [r for r in recs if r["kind"] == "writing_error" and r["role"] == "error"]
        by_backend.append(pd.Series(list(syn.values()), dtype=object).value_counts())
        rows.append(
            {
                "Domain": display_label(d),
                "Products": len({r["product"] for r in recs}),
                "Syntactic": len(syn),
                "Writing-error": len(err),
                "Total queries": len(syn) + len(err),
                "User profiles": pq.read_metadata(ppath).num_rows,
                "Sentences": pq.read_metadata(epath).num_rows,
            }
        )
    df = pd.DataFrame(rows)
    total = {"Domain": "Total", **{c: int(df[c].sum()) for c in df.columns[1:]}}
    df = pd.concat([df, pd.DataFrame([total])], ignore_index=True)
    # Which backend wrote the syntactic queries: its share of them, per domain and in total.
    counts = pd.DataFrame(by_backend).fillna(0).astype(int)
    counts = pd.concat([counts, counts.sum().to_frame().T], ignore_index=True)
    for backend in sorted(counts.columns):
        share = counts[backend] / df["Syntactic"].where(df["Syntactic"] > 0)
        df[f"Syntactic from {backend} (%)"] = (100 * share).round(1)
    return df


def filter_frame(domains, filter_reports) -> pd.DataFrame:
    """One row per domain and backend; columns in pipeline order."""
    rows = []
    for d, path in zip(domains, filter_reports, strict=True):
        rep = read_json(path)
        for backend, c in sorted(rep["by_backend"].items()):
            row = {"Domain": display_label(d), "Backend": backend, "Generated": c["generated"]}
            for name in rep["filters"]:
                key = "removed_" + name.split(" ")[0]
                if name.endswith("(at selection)"):
                    row["Fluency scored at selection"] = c["fluency_at_selection"]
                    key = "removed_fluency_at_selection"
                row["-" + name.capitalize()] = c[key]
            row["Valid"] = c["valid"]
            row["In pairs"] = c["used_in_pairs"]
            rows.append(row)
    return pd.DataFrame(rows)


def identifiability_frame(domains, select_reports) -> pd.DataFrame:
    """Attribution shares per domain, and their average weighted by syntactic pairs."""
    rows = []
    for d, path in zip(domains, select_reports, strict=True):
        rep = read_json(path)
        ident = rep["identifiability"]
        rows.append(
            {
                "Domain": display_label(d),
                "Syntactic pairs": rep["syntactic_pairs"],
                "Both own (profile)": ident.get("loglik_both", float("nan")),
                "Assignment (profile)": ident.get("loglik_assignment", float("nan")),
                "Both own (held-out kNN)": ident.get("knn_both", float("nan")),
                "Median distance": rep["gaussian_distance"].get("median", float("nan")),
            }
        )
    df = pd.DataFrame(rows)
    pairs = df["Syntactic pairs"].to_numpy()
    avg = {"Domain": "All (pair-weighted)", "Syntactic pairs": int(pairs.sum())}
    for c in df.columns[2:]:
        vals = df[c].to_numpy(dtype=float)
        ok = np.isfinite(vals)
        avg[c] = (
            float((vals[ok] * pairs[ok]).sum() / pairs[ok].sum())
            if pairs[ok].sum()
            else float("nan")
        )
    return pd.concat([df, pd.DataFrame([avg])], ignore_index=True)


def filters_latex(filters: pd.DataFrame, *, caption: str) -> str:
    """The filter report turned on its side: one row per count in pipeline order, one column
    per domain and backend (each domain over its backends), so the table widens with the
    domains and backends, not with the filters' long names."""
    counts = [c for c in filters.columns if c not in ("Domain", "Backend")]
    turned = pd.DataFrame({"Candidates": counts})
    groups: list[tuple[str, int]] = [("", 1)]
    labels = ["Candidates"]
    for i, row in filters.reset_index(drop=True).iterrows():
        turned[f"column {i}"] = [row[c] for c in counts]
        labels.append(str(row["Backend"]))
        if groups[-1][0] == row["Domain"]:
            groups[-1] = (row["Domain"], groups[-1][1] + 1)
        else:
            groups.append((row["Domain"], 1))
    return dataframe_to_latex(
        turned,
        caption=caption,
        label="tab:pqb-filters",
        floatfmt=".0f",
        header_groups=groups,
        column_labels=labels,
    )


class IdentifiabilityCheckError(RuntimeError):
    """The share of pairs attributed to their own users is below ``min_share``."""


def run_tables(domains, inputs: dict, out: dict, params: dict, config_label: str) -> dict:
    """Write the three tables (CSV + LaTeX); raise when the identifiability check fails."""
    distance = params["pairs"]["distance"]
    sheet = datasheet_frame(
        domains, inputs["benchmarks"], inputs["syntax_profiles"], inputs["syntax_embeddings"]
    )
    filters = filter_frame(domains, inputs["filter_reports"])
    ident = identifiability_frame(domains, inputs["select_reports"])
    for key, df in (
        ("datasheet_csv", sheet),
        ("filters_csv", filters),
        ("identifiability_csv", ident),
    ):
        with atomic_path(out[key], suffix=".csv") as tmp:
            df.to_csv(tmp, index=False, float_format="%.4f")
    write_text(
        out["datasheet_tex"],
        dataframe_to_latex(
            sheet,
            caption=(
                "PQB benchmark statistics per domain: syntactic and writing-error "
                "queries, user profiles and the review sentences they were built from. "
                f"Configuration: \\texttt{{{config_label}}}."
            ),
            label="tab:pqb-datasheet",
            midrule_before=[len(sheet) - 1],
            header_width=HEADER_WIDTH,
            column_sep="4pt",
            fit_width=True,
        ),
    )
    write_text(
        out["filters_tex"],
        filters_latex(
            filters,
            caption=(
                "Candidate queries per domain and generation backend, how many each validity "
                "filter removed (in order, a candidate counted at the first it fails) and how "
                "many entered a pair. Configuration: "
                f"\\texttt{{{config_label}}}."
            ),
        ),
    )
    ident_tex = ident.copy()
    for c in ("Both own (profile)", "Assignment (profile)", "Both own (held-out kNN)"):
        ident_tex[c] = 100 * ident_tex[c]
    write_text(
        out["identifiability_tex"],
        dataframe_to_latex(
            ident_tex,
            caption=(
                "Personal signal is identifiable: share (\\%) of syntactic pairs "
                "whose two queries are attributed to their own users by the "
                "rank-one + diagonal profiles' log-density (both queries; the better "
                "assignment of the two) and by the held-out sentences' k-NN; median "
                f"{distance} distance of the paired users' Gaussians. "
                f"Configuration: \\texttt{{{config_label}}}."
            ),
            label="tab:pqb-identifiability",
            floatfmt=".1f",
            midrule_before=[len(ident_tex) - 1],
            header_width=HEADER_WIDTH,
        ),
    )
    check = params["identifiability"]
    share = float(ident.iloc[-1]["Both own (profile)"])
    if check["check"] and not share > check["min_share"]:
        raise IdentifiabilityCheckError(
            f"identifiability check FAILED: {share:.3f} of syntactic pairs have both queries "
            f"attributed to their own users (needs > {check['min_share']})"
        )
    log.info("identifiability check OK: %.3f > %s", share, check["min_share"])
    return {"datasheet": sheet.to_dict("records"), "identifiability": ident.to_dict("records")}
