"""The PQB paper's qualitative claims, each checked once on a results tree; the TTP claims beside.

Ids, tables, texts: the ``claims`` of ``config/paper_results/pqb.yaml``, read at run time. Each
id is one function in :data:`CLAIMS` over a results tree's tables (never the paper's numbers),
giving a dict like the TTP claims (``id, table, text, status, measured, margin, ci_low, ci_high,
detail``); status "not applicable" when a table or named system is missing (``measured`` says).

Margin: positive = held by that much (zero holds for the one ">=" claim). Retrieval, attribution
and sampling margins are in points (fractions, AUROC and MRR x 100, so measures share a minimum);
validation margins in the table's unit. Values: the equal-weight average over domains (the
paper's): the table's ``Average`` rows, else its only domain, else the domains' mean (no CI).
CIs: the tables give 95% bootstrap bounds per system, not per difference; a margin ``a - b``
gets the conservative ``[a_low - b_high, a_high - b_low]``, a value minus a threshold keeps the
value's bounds, a minimum the deciding cell's; NaN where the table has none. Approximations only.

Systems: the paper's retrieval systems (:data:`PAPER_SYSTEMS`) map to this configuration's
retrievers by family (the tables' ``family``, else the registry's family of the ``type``) and,
for the rerankers, ``type`` (llm_yesno: Qwen3-Reranker-8B, llm_prompt: Llama-3.1-8B); of several,
the one whose label starts with the paper's name, else the configuration's first
(:func:`stand_ins`). Comparisons run over the stand-ins only. Attribution models and samplers
map by registry id (:data:`PAPER_MODELS`, :data:`PAPER_SAMPLERS`). Claims [margin]:

* every_system_moves: Flip@1 > 0 for every system [smallest Flip@1].
* splade_most_stable_rank / colbert_most_flips_at_depth / bm25_loses_most_at_depth /
  qwen_reranker_loses_most_rr: SPLADE lowest Mean RRstd / ColBERTv2 highest Flip@20 / BM25
  highest Deg@20 / Qwen3-Reranker highest MRRdeg [lead over the closest other stand-in].
* hybrid_least_affected: BGE-M3 Hybrid lowest on Deg@20 and MRRdeg [the smaller lead].
* reranker_not_a_cure: Qwen3-Reranker's Mean RRstd > Llama's [Qwen's - Llama's].
* every_system_degrades: every Deg@K and MRRdeg > 0 [the smallest].
* depth_does_not_recover: Deg@20 > Deg@1 for every system [smallest Deg@20 - Deg@1].
* robustness_not_effectiveness: the most effective (highest RR@depth, all queries) is not the
  most robust (lowest Mean RRstd) [its RRstd - the others' lowest: > 0 if another is steadier].
* queries_language_like: human naturalness and syntactic quality >= 4 [smaller mean - 4].
* personal_signal_identifiable: human decisive syntactic attribution > 50% [value - 50].
* error_profiles_faithful: human strict pass > 80%, acceptable > 90% [smaller excess].
* agreement_substantial: every alpha and kappa > 0.6, the "substantial" criterion (the text's
  ranges are the paper's values) [smallest coefficient - 0.6].
* rank_one_diag_leads / knn_trails: rank-one + diagonal Gaussian first / k-NN last on balanced
  attribution, AUROC and full-profile attribution [smallest lead or gap].
* personalised_sampling_wins: personalised beats the baselines on Top-1 and MRR [smaller lead].
* margin_largest_single_query: against wrong-user sampling, as the YAML says: personalised's
  lead on single-query Top-1 exceeds its Top-1 lead [the difference; global's in detail].
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import yaml

from personalir.common.claims import NAN, record
from personalir.common.config import PAPER_RESULTS
from personalir.common.io import read_json
from personalir.common.registry import Registry
from personalir.retrieval.base import PAPER_SYSTEMS, RETRIEVERS

PQB_YAML = PAPER_RESULTS / "pqb.yaml"
#: The domain of a table's equal-weight average rows (as retrieval.summary.AVERAGE).
AVERAGE = "Average"
RESULT_KEYS = ("id", "table", "status", "measured", "margin", "ci_low", "ci_high", "text", "detail")
CSV_COLUMNS = ("paper", *RESULT_KEYS)
#: Claims files of the TTP stage (rule ttp_claims: Tables 4-8, Figures 5 and 6).
TTP_CLAIM_FILES = ("ttp/claims/claims.json",)
TABLE_FILES = {t: f"retrieval/table_{t}.csv" for t in ("flip_rrstd", "degradation")}
TABLE_FILES |= {"effectiveness": "retrieval/table_effectiveness.csv"}
TABLE_FILES |= {"ratings": "validation/ratings.csv", "agreement": "validation/agreement.csv"}
TABLE_FILES |= {"attribution": "syntax/attribution.csv"}
TABLE_FILES |= {"error_sampling": "errors/sampling_eval.csv"}
#: Our ids of the paper's attribution models (not the eigenpair fit, which the paper lacks).
PAPER_MODELS = ("single_embedding_cosine", "shared_isotropic_gaussian", "user_diagonal_gaussian")
PAPER_MODELS += ("von_mises_fisher", "rank_two_diagonal_gaussian", "knn")
PAPER_MODELS += ("rank_one_diagonal_gaussian",)
#: Our ids of the paper's error samplers.
PAPER_SAMPLERS = ("global", "uniform", "character_random", "wrong_user", "personalised")

#: Claim id -> function(context, claim) -> result dict.
CLAIMS: Registry[Callable] = Registry("PQB claim")


class Cell(NamedTuple):  # a value and its CI bounds (NaN where unknown)
    v: float
    lo: float = NAN
    hi: float = NAN


def _minus(a: Cell, b: Cell) -> Cell:
    """``a - b`` with the conservative interval ``[a_lo - b_hi, a_hi - b_lo]``."""
    return Cell(a.v - b.v, a.lo - b.hi, a.hi - b.lo)


def cell_of(row: pd.Series, col: str, scale: float = 1.0) -> Cell:
    def get(name: str) -> float:
        x = row.get(name)
        return float(x) * scale if x is not None and pd.notna(x) else NAN

    lo = next((get(c) for c in (f"{col} ci_low", f"{col}_ci_low") if c in row.index), NAN)
    hi = next((get(c) for c in (f"{col} ci_high", f"{col}_ci_high") if c in row.index), NAN)
    return Cell(get(col), lo, hi)


@dataclass
class Context:  # a results tree and the configuration that produced it; tables read once
    results_dir: Path
    config: Mapping
    _tables: dict = field(default_factory=dict)

    def table(self, name: str) -> pd.DataFrame:
        if name not in self._tables:
            path = Path(self.results_dir) / TABLE_FILES[name]
            self._tables[name] = pd.read_csv(path) if path.is_file() else None
        if self._tables[name] is None:
            raise NotApplicable(f"no {TABLE_FILES[name]} under {self.results_dir}")
        return self._tables[name]


class NotApplicable(Exception):
    """What the configuration lacks for a claim: ``args = (reason[, detail])``."""


def _out(claim: Mapping, status: str, measured: str, m: Cell, detail: str) -> dict:
    return record(claim, status, measured, m.v, m.lo, m.hi, detail)


def _na(claim: Mapping, reason: str, detail: str = "") -> dict:
    return _out(claim, "not applicable", reason, Cell(NAN), f"{reason}; {detail}".rstrip("; "))


def _result(claim, m: Cell, measured: str, detail: str = "", *, at_least: bool = False) -> dict:
    """Held when the margin is positive (or zero, for an ``at_least`` claim)."""
    if math.isnan(m.v):
        return _na(claim, f"a deciding value is missing (NaN): {measured}", detail)
    held = m.v >= 0 if at_least else m.v > 0
    return _out(claim, "held" if held else "not held", measured, m, detail)


def average_rows(frame: pd.DataFrame, key: str) -> tuple[pd.DataFrame, str]:
    """Rows by ``key``: the Average rows, the only domain, or the domains' mean (no CI)."""
    domains = list(dict.fromkeys(frame["domain"]))
    if AVERAGE in domains:
        n = len(domains) - 1
        return frame[frame["domain"] == AVERAGE].set_index(key), f"the Average rows ({n} domains)"
    if len(domains) == 1:
        return frame.set_index(key), f"the only domain, {domains[0]}"
    num = list(frame.select_dtypes("number").columns)
    mean = frame.groupby(key, sort=False)[num].mean()
    mean[[c for c in num if c.endswith(("ci_low", "ci_high"))]] = NAN
    return mean, f"the mean of {len(domains)} domains (no CI: the table has no Average row)"


def _lead(cells: Mapping[str, Cell], who: str, *, highest: bool) -> tuple[Cell, str]:
    """(``who``'s lead over the closest other, that other): who - max(others) or min - who."""
    others = {k: c for k, c in cells.items() if k != who}
    rival = max(others, key=lambda k: others[k].v if highest else -others[k].v)
    pair = (cells[who], others[rival]) if highest else (others[rival], cells[who])
    return _minus(*pair), rival


def _leads(claim, per: Mapping[str, Mapping[str, Cell]], who, name, detail, *, highest) -> dict:
    """``who`` is the highest (lowest) on every measure of ``per``; margin: its smallest lead."""
    if not per or any(who not in c or len(c) < 2 for c in per.values()):
        raise NotApplicable(f"no values of {name(who)} and another on {', '.join(per)}", detail)
    leads = {col: _lead(cells, who, highest=highest) for col, cells in per.items()}
    col = min(leads, key=lambda c: leads[c][0].v)
    word = "lead over" if highest else "gap below"
    measured = f"{name(who)}: " + ", ".join(
        f"{c} {word} {name(r)} {m.v:+.2f} pts" for c, (m, r) in leads.items()
    )
    return _result(claim, leads[col][0], measured, detail)


def _smallest(claim, cells: Mapping[str, Cell], what: str, detail: str) -> dict:
    """Margin: the smallest of ``cells``, with its interval."""
    if not cells:
        raise NotApplicable(f"no {what} values", detail)
    where = min(cells, key=lambda k: cells[k].v)
    measured = f"smallest {what}: {where} = {cells[where].v:.2f} pts (of {len(cells)})"
    return _result(claim, cells[where], measured, detail)


@dataclass(frozen=True)
class StandIn:
    paper: str
    retriever: str
    label: str
    candidates: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.label} for {self.paper}"


def stand_ins(config: Mapping, table: pd.DataFrame | None = None) -> dict[str, StandIn]:
    """The paper's systems -> the retrievers standing in: of the system's family (rerankers:
    and ``type``; family from ``table``, else the registry's for the ``type``), in ``use`` order,
    those ``table`` has; of several, the label starting with the paper's name, else the first."""
    retrieval = config.get("retrieval") or {}
    entries = {n: e or {} for n, e in (retrieval.get("retrievers") or {}).items()}
    names = list(retrieval.get("use") or entries)
    rows = {}
    if table is not None:
        rows = table.drop_duplicates("retriever").set_index("retriever").to_dict("index")
        names = [n for n in names if n in rows] + [n for n in rows if n not in names]
    info = {n: {"label": n, "type": "", **rows.get(n, {}), **entries.get(n, {})} for n in names}
    for i in info.values():
        i["family"] = i.get("family") or RETRIEVERS.attribute(i["type"], "family")
    out = {}
    for paper, (fam, typ) in PAPER_SYSTEMS.items():
        cands = [n for n, i in info.items() if i["family"] == fam and typ in (None, i["type"])]
        named = [n for n in cands if str(info[n]["label"]).casefold().startswith(paper.casefold())]
        if cands:
            pick = (named or cands)[0]
            out[paper] = StandIn(paper, pick, str(info[pick]["label"]), tuple(cands))
    return out


def _mapping_words(stand: Mapping[str, StandIn], present: Sequence[str], how: str) -> str:
    parts = [", ".join(map(str, stand.values())) or "none"]
    rule = "(the label matching the paper's name, else the configuration's first)"
    several = [s for s in stand.values() if len(s.candidates) > 1]
    parts += [f"{s.paper}: {s.retriever} of {', '.join(s.candidates)} {rule}" for s in several]
    if missing := [p for p in PAPER_SYSTEMS if p not in stand]:
        parts.append(f"no stand-in for {', '.join(missing)}")
    chosen = {s.retriever for s in stand.values()}
    if extra := [r for r in present if r not in chosen]:
        parts.append(f"not compared: {', '.join(extra)}")
    return f"stand-ins: {'; '.join(parts)}; values: {how}"


def _retrieval(ctx: Context, tables: Sequence[str], need: Sequence[str] = ()):
    """(averaged frames, the stand-ins present in all, detail)."""
    frames = []
    for t in tables:
        frame = ctx.table(t)
        if t == "effectiveness":
            frame = frame[frame["subset"] == ("all" if "all" in set(frame["subset"]) else "clean")]
        frames.append(average_rows(frame, "retriever"))
    first = ctx.table(tables[0])
    present = [r for r in dict.fromkeys(first["retriever"]) if all(r in f.index for f, _ in frames)]
    stand = {p: s for p, s in stand_ins(ctx.config, first).items() if s.retriever in present}
    detail = _mapping_words(stand, present, frames[0][1])
    if missing := [p for p in need if p not in stand]:
        raise NotApplicable(f"no retriever stands in for {', '.join(missing)}", detail)
    return [f for f, _ in frames], stand, detail


def measure_column(frame: pd.DataFrame, prefix: str, k: int | None = None) -> str:
    """``prefix@k`` if the table has it, else the deepest (k > 1 or None) or shallowest K."""
    found = {int(m[1]): c for c in frame.columns if (m := re.fullmatch(rf"{prefix}@(\d+)", c))}
    if not found:
        raise NotApplicable(f"the table has no {prefix}@K column")
    return found[k] if k in found else found[max(found) if k is None or k > 1 else min(found)]


def _cells(frame, stand, col, scale=100.0) -> dict[str, Cell]:
    cells = {p: cell_of(frame.loc[s.retriever], col, scale) for p, s in stand.items()}
    return {p: c for p, c in cells.items() if not math.isnan(c.v)}


#: Claim id -> (table, paper system, [(measure, K)], highest): the system is the highest
#: (lowest) of the stand-ins on every measure.
_F, _D = "flip_rrstd", "degradation"
RETRIEVAL_LEADS = {
    "splade_most_stable_rank": (_F, "SPLADE", [("RRstd", None)], False),
    "colbert_most_flips_at_depth": (_F, "ColBERTv2", [("Flip", 20)], True),
    "hybrid_least_affected": (_D, "BGE-M3 Hybrid", [("Deg", 20), ("MRRdeg", None)], False),
    "bm25_loses_most_at_depth": (_D, "BM25", [("Deg", 20)], True),
    "qwen_reranker_loses_most_rr": (_D, "Qwen3-Reranker-8B", [("MRRdeg", None)], True),
}


def _retrieval_lead(ctx, claim):
    table, who, measures, highest = RETRIEVAL_LEADS[claim["id"]]
    (frame,), stand, detail = _retrieval(ctx, [table], need=[who])
    per = {c: _cells(frame, stand, c) for c in (measure_column(frame, m, k) for m, k in measures)}
    return _leads(claim, per, who, lambda p: str(stand[p]), detail, highest=highest)


for _id in RETRIEVAL_LEADS:
    CLAIMS.register(_id)(_retrieval_lead)


@CLAIMS.register("reranker_not_a_cure")
def _reranker_not_a_cure(ctx, claim):
    qwen, llama = "Qwen3-Reranker-8B", "Llama-3.1-8B"
    (frame,), stand, detail = _retrieval(ctx, ["flip_rrstd"], need=[qwen, llama])
    col = measure_column(frame, "RRstd")
    cells = {p: c for p, c in _cells(frame, stand, col).items() if p in (qwen, llama)}
    return _leads(claim, {col: cells}, qwen, lambda p: str(stand[p]), detail, highest=True)


@CLAIMS.register("every_system_moves")
def _every_system_moves(ctx, claim):
    (frame,), stand, detail = _retrieval(ctx, ["flip_rrstd"])
    col = measure_column(frame, "Flip", 1)
    cells = {str(stand[p]): c for p, c in _cells(frame, stand, col).items()}
    return _smallest(claim, cells, col, detail)


@CLAIMS.register("every_system_degrades")
def _every_system_degrades(ctx, claim):
    (frame,), stand, detail = _retrieval(ctx, ["degradation"])
    cols = [c for c in frame.columns if re.fullmatch(r"(Deg|MRRdeg)@\d+", c)]
    cells = {f"{stand[p]} {col}": c for col in cols for p, c in _cells(frame, stand, col).items()}
    return _smallest(claim, cells, "Deg@K / MRRdeg", detail)


@CLAIMS.register("depth_does_not_recover")
def _depth_does_not_recover(ctx, claim):
    (frame,), stand, detail = _retrieval(ctx, ["degradation"])
    deep, shallow = measure_column(frame, "Deg", 20), measure_column(frame, "Deg", 1)
    if deep == shallow:
        raise NotApplicable("the table has one Deg@K column only", detail)
    a, b = _cells(frame, stand, deep), _cells(frame, stand, shallow)
    cells = {str(stand[p]): _minus(a[p], b[p]) for p in a if p in b}
    return _smallest(claim, cells, f"{deep} - {shallow}", detail)


@CLAIMS.register("robustness_not_effectiveness")
def _robustness_not_effectiveness(ctx, claim):
    (robust, effective), stand, detail = _retrieval(ctx, ["flip_rrstd", "effectiveness"])
    rr, std = measure_column(effective, "RR"), measure_column(robust, "RRstd")
    eff, stab = _cells(effective, stand, rr), _cells(robust, stand, std)
    both = [p for p in eff if p in stab]
    if len(both) < 2:
        raise NotApplicable("fewer than two systems with RR and RRstd values", detail)
    best = max(both, key=lambda p: eff[p].v)
    rival = min((p for p in both if p != best), key=lambda p: stab[p].v)
    m = _minus(stab[best], stab[rival])  # > 0: another system is more robust
    measured = (
        f"most effective: {stand[best]} ({rr} {eff[best].v:.2f}, {std} {stab[best].v:.2f}); "
        f"most robust of the others: {stand[rival]} ({std} {stab[rival].v:.2f}) pts"
    )
    return _result(claim, m, measured, f"effectiveness: 'all' queries (else 'clean'); {detail}")


#: Claim id -> ({ratings row: threshold on the human value}, unit, ">=" rather than ">").
HUMAN_THRESHOLDS = {
    # queries_language_like: ">= 4 of 5" on both scales.
    "queries_language_like": ({"Naturalness (1-5)": 4.0, "Syntactic quality (1-5)": 4.0}, "", 1),
    # personal_signal_identifiable: "> 50% (chance)".
    "personal_signal_identifiable": ({"Syntactic attribution": 50.0}, "%", 0),
    # error_profiles_faithful: "strict pass > 80%, acceptable > 90%".
    "error_profiles_faithful": ({"Error strict pass": 80.0, "Error acceptable": 90.0}, "%", 0),
}


def _human_threshold(ctx, claim):
    limits, unit, at_least = HUMAN_THRESHOLDS[claim["id"]]
    frame = ctx.table("ratings").set_index("measure")
    if missing := [r for r in limits if r not in frame.index]:
        raise NotApplicable(f"the ratings table has no row {', '.join(missing)}")
    cells = {r: cell_of(frame.loc[r], "human") for r in limits}
    if any(math.isnan(c.v) for c in cells.values()):
        raise NotApplicable("no human labels in this configuration (human column empty)")
    excess = {r: _minus(cells[r], Cell(t, t, t)) for r, t in limits.items()}
    row = min(excess, key=lambda r: excess[r].v)
    measured = "human " + ", ".join(f"{r} {cells[r].v:.2f}{unit}" for r in limits)
    detail = "margin: the smaller of " + ", ".join(f"{r} - {t:g}" for r, t in limits.items())
    return _result(claim, excess[row], measured, detail, at_least=bool(at_least))


for _id in HUMAN_THRESHOLDS:
    CLAIMS.register(_id)(_human_threshold)


@CLAIMS.register("agreement_substantial")
def _agreement_substantial(ctx, claim):
    substantial = 0.6  # agreement_substantial: "substantial: > 0.6"
    rows = ctx.table("agreement").set_index("dimension")
    cells = {f"{d} {k}": cell_of(r, k) for d, r in rows.iterrows() for k in ("alpha", "kappa")}
    empty = [k for k, c in cells.items() if math.isnan(c.v)]
    if not cells or empty:
        raise NotApplicable(f"no agreement value for {', '.join(empty) or 'any dimension'}")
    where = min(cells, key=lambda k: cells[k].v)
    measured = f"lowest coefficient: {where} = {cells[where].v:.3f} (of {len(cells)})"
    detail = "every alpha and kappa > 0.6; the paper's ranges are its values, not a criterion"
    return _result(claim, _minus(cells[where], Cell(*[substantial] * 3)), measured, detail)


def _rows(ctx: Context, table: str, key: str, ours: Sequence[str], cols: Sequence[str]):
    """({id: {col: Cell x100}} of the paper's rows the table has, detail)."""
    avg, how = average_rows(ctx.table(table), key)
    cells = {i: {c: cell_of(avg.loc[i], c, 100.0) for c in cols} for i in ours if i in avg.index}
    detail = f"values: {how}, x100 (points)"
    if extra := [i for i in avg.index if i not in ours]:
        detail += f"; not in the paper, not compared: {', '.join(extra)}"
    if absent := [i for i in ours if i not in avg.index]:
        detail += f"; absent: {', '.join(absent)}"
    return cells, detail


ATTRIBUTION = ("attribution", "model", PAPER_MODELS, ("balanced", "auroc", "full_profile"))
SAMPLING = ("error_sampling", "sampler", PAPER_SAMPLERS, ("top1", "mrr"))
#: Claim id -> ((table, key column, the paper's rows, measures), who, highest): ``who`` is the
#: highest (lowest) of the paper's rows on every measure.
TABLE_LEADS = {
    "rank_one_diag_leads": (ATTRIBUTION, "rank_one_diagonal_gaussian", True),
    "knn_trails": (ATTRIBUTION, "knn", False),
    "personalised_sampling_wins": (SAMPLING, "personalised", True),
}


def _table_lead(ctx, claim):
    (table, key, ours, cols), who, highest = TABLE_LEADS[claim["id"]]
    cells, detail = _rows(ctx, table, key, ours, cols)
    per = {c: {i: v[c] for i, v in cells.items() if not math.isnan(v[c].v)} for c in cols}
    return _leads(claim, per, who, str, detail, highest=highest)


for _id in TABLE_LEADS:
    CLAIMS.register(_id)(_table_lead)


@CLAIMS.register("margin_largest_single_query")
def _margin_largest_single_query(ctx, claim):
    cols = ("top1", "single_query_top1")
    cells, detail = _rows(ctx, "error_sampling", "sampler", PAPER_SAMPLERS, cols)
    if missing := [s for s in ("personalised", "wrong_user") if s not in cells]:
        raise NotApplicable(f"the sampling table lacks {', '.join(missing)}", detail)
    lead = {b: [_minus(cells["personalised"][c], cells[b][c]) for c in cols] for b in cells}
    top1, single = lead["wrong_user"]
    measured = f"personalised's lead over wrong_user: single-query Top-1 {single.v:+.2f}, "
    measured += f"Top-1 {top1.v:+.2f} pts"
    detail = f"encoded against wrong-user sampling, as the claim's text says; {detail}"
    if g := lead.get("global"):
        detail += f"; over global: single-query Top-1 {g[1].v:+.2f}, Top-1 {g[0].v:+.2f} pts"
    return _result(claim, _minus(single, top1), measured, detail)


def pqb_claims(path: str | Path = PQB_YAML) -> list[dict]:
    return list(yaml.safe_load(Path(path).read_text(encoding="utf-8"))["claims"])


def evaluate_claim(ctx: Context, claim: Mapping) -> dict:
    if claim["id"] not in CLAIMS:
        return _na(claim, "not encoded", "no function is registered for this claim id")
    try:
        return CLAIMS.get(claim["id"])(ctx, claim)
    except NotApplicable as exc:
        return _na(claim, *exc.args)
    except (KeyError, ValueError, IndexError) as exc:  # a table lacks a column the claim needs
        return _na(claim, f"could not evaluate: {type(exc).__name__}: {exc}")


def ttp_claims(results_dir: str | Path) -> list[dict]:
    """The TTP stage's claims, as it wrote them, tagged ``paper: TTP``."""
    out = []
    for name in TTP_CLAIM_FILES:
        if (path := Path(results_dir) / name).is_file():
            out += [{"paper": "TTP", **c} for c in read_json(path)]
    return out


def evaluate_all(results_dir: str | Path, config: Mapping, paper: str | Path = PQB_YAML) -> list:
    """Every PQB claim of the YAML, in its order, then the TTP stage's claims."""
    ctx = Context(Path(results_dir), config or {})
    pqb = [{"paper": "PQB", **evaluate_claim(ctx, c)} for c in pqb_claims(paper)]
    return pqb + ttp_claims(results_dir)
