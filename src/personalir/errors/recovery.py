"""Does the stage recover the error habits planted in the sample world? (sample only)

The sample world draws each user's errors from a planted mechanism distribution
(``planted_truth.json``: ``users[u].error.mechanism_probs``). For every user with planted
errors we compare the profile's mechanism distribution ``P_u(m)`` (its ``other`` share removed
and the rest renormalised: the world never plants ``other``, so that share is detector noise,
reported separately) with the planted one, by the Jensen-Shannon divergence in bits.

Threshold, and why. Even a perfect detector sees only the ``n_u`` errors a user happened to
make in their first 50 sentences, and the profile smooths and shrinks them. So the yardstick
is a parametric bootstrap: draw ``n_u`` mechanisms from the planted distribution
``n_bootstrap`` times, pass each draw through the same estimator (same ``alpha``, ``kappa``
and domain distribution) and take the ``quantile`` of the resulting divergences. A user is
*recovered* when the observed divergence is within that sampling bound. With a perfect
detector about ``quantile`` of users would be; the check asks for ``min_share_recovered`` of
them, leaving room for the detector's misses (e.g. the packaged tagger's gated to/too pair),
and additionally that personal profiles beat the domain's distribution (median divergence to
the planted one lower than the domain distribution's) and identify their user among all
planted distributions far above chance.
"""

from __future__ import annotations

import numpy as np

from personalir.data.text import split_sentences
from personalir.errors.lexicon import WORD
from personalir.errors.mechanisms import MECHANISM_NAMES
from personalir.errors.profiles import ProfileSet, jensen_shannon, laplace_smoothed

PLANTED = tuple(m for m in MECHANISM_NAMES if m != "other")


def _drop_other(p: dict[str, float]) -> dict[str, float]:
    z = sum(p[m] for m in PLANTED)
    return {m: p[m] / z for m in PLANTED}


def _estimate(counts: dict[str, int], profiles: ProfileSet) -> dict[str, float]:
    """P_u(m) from mechanism counts alone (as ErrorProfile.p_mechanisms computes it)."""
    n = sum(counts.values())
    lam = n / (n + profiles.params.kappa) if n else 0.0
    lap = laplace_smoothed(counts, profiles.params.alpha)
    g = profiles.global_profile.p_mechanisms()
    return {m: lam * lap[m] + (1 - lam) * g[m] for m in MECHANISM_NAMES}


def _bootstrap_jsd(draws: np.ndarray, planted: np.ndarray, profiles: ProfileSet) -> np.ndarray:
    """JSD (bits) to ``planted`` of the estimate from each row of mechanism counts (vectorised
    :func:`_estimate` + :func:`_drop_other` + :func:`jensen_shannon`)."""
    p = profiles.params
    n_mech = len(MECHANISM_NAMES)
    g = profiles.global_profile.p_mechanisms()
    g_planted = np.array([g[m] for m in PLANTED])
    n = draws.sum(axis=1, keepdims=True).astype(float)
    lam = np.where(n > 0, n / (n + p.kappa), 0.0)
    lap = (draws + p.alpha) / (n + p.alpha * n_mech)
    est = lam * lap + (1 - lam) * g_planted
    est = est / est.sum(axis=1, keepdims=True)
    q = np.broadcast_to(planted, est.shape)
    mid = (est + q) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(est > 0, est * np.log2(est / mid), 0.0)
        b = np.where(q > 0, q * np.log2(q / mid), 0.0)
    return np.clip(0.5 * (a + b).sum(axis=1), 0.0, None)


def habit_recovery(
    profiles: ProfileSet,
    truth: dict,
    *,
    n_bootstrap: int = 200,
    quantile: float = 0.95,
    seed: int = 0,
) -> dict:
    rng = np.random.default_rng(seed)
    planted_users = truth["users"]
    rows = []
    global_est = _drop_other(profiles.global_profile.p_mechanisms())
    candidates = {
        u: {m: float(t["error"]["mechanism_probs"].get(m, 0.0)) for m in PLANTED}
        for u, t in planted_users.items()
        if u in profiles.users and not t["error"]["error_free"]
    }
    ids = sorted(candidates)
    error_free = [
        u for u, t in planted_users.items() if u in profiles.users and t["error"]["error_free"]
    ]
    for u in ids:
        prof = profiles[u]
        planted = candidates[u]
        est = _drop_other(prof.p_mechanisms())
        jsd = jensen_shannon(est, planted)
        n = prof.n_char_edits
        probs = np.array([planted[m] for m in PLANTED])
        probs = probs / probs.sum()
        draws = rng.multinomial(n, probs, size=n_bootstrap)
        boot = _bootstrap_jsd(draws, probs, profiles)
        bound = float(np.quantile(boot, quantile))
        ranked = sorted(ids, key=lambda v: (jensen_shannon(est, candidates[v]), v))
        rows.append(
            {
                "user_id": u,
                "n_char_edits": n,
                "status": prof.status,
                "other_share": round(prof.p_mechanisms()["other"], 4),
                "jsd": round(jsd, 5),
                "jsd_global": round(jensen_shannon(global_est, planted), 5),
                "bootstrap_bound": round(bound, 5),
                "recovered": jsd <= bound,
                "identification_rank": ranked.index(u) + 1,
            }
        )
    n = len(rows)
    jsds = [r["jsd"] for r in rows]
    glob = [r["jsd_global"] for r in rows]
    return {
        "measure": "Jensen-Shannon divergence (bits) between P_u(m) without 'other' and the "
        "planted mechanism distribution",
        "bootstrap": {"n": n_bootstrap, "quantile": quantile},
        "users_with_planted_errors": n,
        "share_recovered": round(sum(r["recovered"] for r in rows) / n, 4) if n else None,
        "median_jsd": round(float(np.median(jsds)), 5) if n else None,
        "median_jsd_global": round(float(np.median(glob)), 5) if n else None,
        "share_closer_than_global": round(sum(r["jsd"] < r["jsd_global"] for r in rows) / n, 4)
        if n
        else None,
        "identification_top1": round(sum(r["identification_rank"] == 1 for r in rows) / n, 4)
        if n
        else None,
        "identification_mrr": round(sum(1 / r["identification_rank"] for r in rows) / n, 4)
        if n
        else None,
        "identification_chance": round(1 / n, 4) if n else None,
        "error_free_users": len(error_free),
        "error_free_users_with_fallback": sum(
            profiles[u].status == "fallback_global" for u in error_free
        ),
        "error_free_users_char_edits": {u: profiles[u].n_char_edits for u in sorted(error_free)},
        "users": rows,
    }


def check_recovery(result: dict, *, min_share_recovered: float) -> list[str]:
    """Failed acceptance conditions (empty when the planted habits are recovered)."""
    failures = []
    if not result["users_with_planted_errors"]:
        return ["no user with planted errors"]
    if result["share_recovered"] < min_share_recovered:
        failures.append(
            f"only {result['share_recovered']:.2%} of users within the bootstrap "
            f"bound (need {min_share_recovered:.0%})"
        )
    if result["median_jsd"] >= result["median_jsd_global"]:
        failures.append(
            f"median JSD {result['median_jsd']} not below the domain "
            f"distribution's {result['median_jsd_global']}"
        )
    if result["identification_top1"] < 5 * result["identification_chance"]:
        failures.append(f"identification Top-1 {result['identification_top1']} is not 5x chance")
    return failures


def planted_errors_in_scope(truth: dict, reviews, sentences) -> tuple[list[dict], dict]:
    """The sample world's planted errors that fall in the kept user sentences.

    ``reviews`` and ``sentences`` are the data stage's tables (pandas). A planted error names
    its review (``review_index``: the 0-based line of the raw JSONL, i.e. ``source_line - 1``),
    the sentence inside it and the erroneous token; it is in scope when that sentence is one of
    the user's kept sentences. Returns the errors (each with its ``sentence_id``) and counts.
    """

    by_line = {
        int(line) - 1: (rid, text, uid)
        for line, rid, text, uid in zip(
            reviews["source_line"],
            reviews["review_id"],
            reviews["text"],
            reviews["user_id"],
            strict=True,
        )
    }
    kept = {
        (rid, text): sid
        for rid, text, sid in zip(
            sentences["review_id"], sentences["text"], sentences["sentence_id"], strict=True
        )
    }
    out, counts = [], {"planted": 0, "in_scope": 0, "misaligned": 0}
    for uid, user in truth["users"].items():
        for e in user["errors"]:
            counts["planted"] += 1
            rid, text, r_uid = by_line[e["review_index"]]
            if (
                r_uid != uid
                or text[e["char_start"] : e["char_start"] + len(e["erroneous"])] != e["erroneous"]
            ):
                counts["misaligned"] += 1
                continue
            sid = kept.get((rid, split_sentences(text)[e["sentence_index"]]))
            if sid is not None:
                out.append({**e, "user_id": uid, "sentence_id": sid})
    counts["in_scope"] = len(out)
    return out, counts


def detection_recall(planted: list[dict], corrections) -> dict:
    """Per planted mechanism: share of errors the correction changed (``detected``) and
    changed back to the planted original (``fixed``). A planted error counts as detected when
    its erroneous word occurs fewer times in the corrected sentence than in the original."""

    corrected = dict(
        zip(
            corrections["sentence_id"],
            zip(corrections["text"], corrections["corrected"], strict=True),
            strict=True,
        )
    )
    stats: dict[str, dict[str, int]] = {}
    for e in planted:
        text, cor = corrected[e["sentence_id"]]
        before = [m.group(0) for m in WORD.finditer(text)]
        after = [m.group(0) for m in WORD.finditer(cor)]
        detected = after.count(e["erroneous"]) < before.count(e["erroneous"])
        fixed = detected and after.count(e["original"]) > before.count(e["original"])
        s = stats.setdefault(e["mechanism"], {"planted": 0, "detected": 0, "fixed": 0})
        s["planted"] += 1
        s["detected"] += detected
        s["fixed"] += fixed
    total = {k: sum(s[k] for s in stats.values()) for k in ("planted", "detected", "fixed")}
    out = {
        m: {
            **s,
            "detected_share": round(s["detected"] / s["planted"], 4),
            "fixed_share": round(s["fixed"] / s["planted"], 4),
        }
        for m, s in sorted(stats.items())
    }
    out["all"] = {
        **total,
        "detected_share": round(total["detected"] / total["planted"], 4)
        if total["planted"]
        else None,
        "fixed_share": round(total["fixed"] / total["planted"], 4) if total["planted"] else None,
    }
    return out
