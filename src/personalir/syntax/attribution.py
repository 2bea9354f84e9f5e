"""Rule step syntax_attribution: how well each profile model attributes held-out sentences.

Each configured profile model is fitted on the ``train`` embeddings and scored on ``test``
sentences against competitors who reviewed the same products, by the three measures of
:mod:`personalir.syntax.protocols` (balanced attribution, user AUROC, full-profile
attribution) with bootstrap confidence intervals over users. All models share one evaluation
plan, so they face the same trials.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd

from personalir.common.artifacts import read_embeddings, read_reviewers
from personalir.common.io import atomic_path, drop_volatile_columns, write_json, write_parquet
from personalir.common.seeding import derive_seed
from personalir.syntax.models import PROFILE_MODELS, build_model
from personalir.syntax.protocols import (
    FPR_GRID,
    MEASURES,
    bootstrap_ci,
    competitor_sets,
    evaluate_model,
    make_plan,
    product_user_labels,
)

log = logging.getLogger("personalir.syntax")


def model_params(params: dict) -> dict:
    return {
        "var_floor": params["var_floor"],
        "k": params["knn_k"],
        "em_max_iter": params["em_max_iter"],
        "em_tol": params["em_tol"],
    }


def evaluate_attribution(
    meta: pd.DataFrame, z: np.ndarray, reviewers: pd.DataFrame, params: dict, seed: int
) -> dict:
    users = sorted(meta["user_id"].unique())
    code = {u: i for i, u in enumerate(users)}
    label = meta["user_id"].map(code).to_numpy(np.int64)
    split = meta["split"].to_numpy()
    train, test = split == "train", split == "test"
    comps = competitor_sets(product_user_labels(reviewers, users), len(users))
    test_ids = meta["sentence_id"].to_numpy()[test]
    eval_seed = derive_seed(seed, "syntax-attribution")
    plan = make_plan(
        label[test], test_ids, comps, eval_seed, max_competitors=params["max_competitors"]
    )
    rows, user_rows, roc_rows = [], [], []
    for name in params["models"]:
        t0 = time.perf_counter()
        model = build_model(name, model_params(params)).fit(z[train], label[train])
        res = evaluate_model(model, z[test], plan)
        row = {"model": name, "label": PROFILE_MODELS.get(name).label}
        for m in MEASURES:
            vals = np.array([res["per_user"][m][int(u)] for u in plan.evaluated])
            finite = vals[np.isfinite(vals)]
            row[m] = float(finite.mean()) if finite.size else float("nan")
            lo, hi = bootstrap_ci(
                finite, n_boot=params["bootstrap"], level=0.95, seed=derive_seed(eval_seed, name, m)
            )
            row[f"{m}_ci_low"], row[f"{m}_ci_high"] = lo, hi
        row["users"] = len(plan.evaluated)
        row["seconds"] = round(time.perf_counter() - t0, 3)
        rows.append(row)
        for u in plan.evaluated:
            user_rows.append(
                {
                    "model": name,
                    "user_id": users[int(u)],
                    **{m: res["per_user"][m][int(u)] for m in MEASURES},
                    "n_test": len(plan.test_rows_by_user[int(u)]),
                    "n_competitors": len(plan.competitors[int(u)]),
                }
            )
        for fpr, tpr in zip(FPR_GRID, res["roc"], strict=True):
            roc_rows.append({"model": name, "fpr": round(float(fpr), 4), "tpr": float(tpr)})
    report = {
        "users": len(users),
        "users_evaluated": len(plan.evaluated),
        "users_without_competitor": [users[int(u)] for u in plan.skipped_no_competitor],
        "users_without_test_sentences": [users[int(u)] for u in plan.skipped_no_test],
        "test_sentences": int(test.sum()),
        "max_competitors": params["max_competitors"],
        "users_with_competitors_subsampled": int(plan.n_subsampled),
        "mean_competitors": float(np.mean([len(plan.competitors[int(u)]) for u in plan.evaluated]))
        if len(plan.evaluated)
        else float("nan"),
    }
    return {
        "summary": pd.DataFrame(rows),
        "users": pd.DataFrame(user_rows),
        "roc": pd.DataFrame(roc_rows),
        "report": report,
    }


def run_attribution(
    embeddings_path, reviewers_path, out: dict, params: dict, seed: int, domain: str
) -> dict:
    meta, z = read_embeddings(embeddings_path)
    res = evaluate_attribution(meta, z, read_reviewers(reviewers_path), params, seed)
    summary = res["summary"]
    summary.insert(0, "domain", domain)
    # Each model's fit-and-score time goes to the log, not into the table.
    summary = drop_volatile_columns(out["summary"], summary)
    with atomic_path(out["summary"], suffix=".csv") as tmp:
        summary.to_csv(tmp, index=False, float_format="%.6f")
    write_parquet(out["users"], res["users"])
    with atomic_path(out["roc"], suffix=".csv") as tmp:
        res["roc"].to_csv(tmp, index=False, float_format="%.6f")
    write_json(out["report"], res["report"])
    log.info(
        "attribution %s:\n%s",
        domain,
        summary[["model", "balanced", "auroc", "full_profile"]].to_string(index=False),
    )
    return res["report"]
