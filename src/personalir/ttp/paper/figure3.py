"""Figure 3 of the TTP paper: what the rewrites do, by an automatic rule-based classifier.

The paper's authors annotated 200 sampled Broad-query rewrites of TTP (SFT+RL) by hand. Here
every test query of the configured set (``ttp.figure3.set``, default Broad) is classified, from
the configured method's run (``runs/<method>.info.json``, its ``rewrites``), by deterministic
rules over words. A text is *normalised* by lower-casing it and turning every run of
punctuation or white space into one space; its *words* are the normalised text split on
spaces, its *content words* those not in :data:`STOPWORDS`. The user's *history words* are the
content words of the history items' text (the fields of ``ttp.items.fields``, features capped
at ``ttp.items.max_features``), of the top-N items the prompt holds (``history: selected``) or
of every history item (``full``).

Rules, first match wins:

1. ``other`` (malformed): the generation was not well formed, or the rewrite is empty.
2. ``keep``: the normalised rewrite equals the normalised query.
3. Corrections: each query word missing from the rewrite is paired with the closest unused
   added rewrite word (ties: the earlier one) within ``max_edit_distance`` edits and fewer
   edits than half the query word's length (RapidFuzz's optimal string alignment distance:
   insertions, deletions, substitutions and swaps of adjacent letters, the usual typos, count
   one each); paired words are corrections.
   *Dropped* words: content words of the query neither in the rewrite nor corrected. *Added*
   words: content words of the rewrite not in the query and not a correction, split into
   those among the history words and the others.
4. ``over_personalization``: a query content word is dropped and a history word is added (the
   user's past overrides what they asked for).
5. ``other`` (drops words): a query content word is dropped, nothing from the history added.
6. ``query_correction``: nothing added, at least one correction.
7. ``other`` (no content change): nothing added or corrected (reordering, function words).
8. ``preference_extraction``: at least ``min_history_share`` of the added words are history
   words (e.g. the brand the user keeps buying).
9. ``intent_disambiguation``: otherwise (the added words make the intent explicit without
   coming from this user's history, e.g. a product type or a generic attribute).

A correction alongside additions is classified by the additions (rule 8 or 9) and kept in the
case's evidence. Shares follow the paper's figure: ``keep`` as a share of all cases, every other
category (``other`` included, so they add up to 100) as a share of the rewritten cases.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from personalir.common.io import atomic_open, read_json
from personalir.common.plotting import palette, pyplot
from personalir.ttp.inputs.data import ItemCorpus, check_examples, read_examples
from personalir.ttp.paper.figures import save_figure

CATEGORIES = (
    "keep",
    "intent_disambiguation",
    "preference_extraction",
    "query_correction",
    "over_personalization",
    "other",
)
CATEGORY_LABELS = {
    "keep": "Keep original",
    "intent_disambiguation": "Intent\ndisambiguation",
    "preference_extraction": "Preference\nextraction",
    "query_correction": "Query\ncorrection",
    "over_personalization": "Over-\npersonalization",
    "other": "Other",
}
# Function words: adding or dropping one changes no content.
STOPWORDS = frozenset(
    {
        "a", "an", "and", "any", "as", "at", "by", "for", "from", "in", "into", "is", "it",
        "of", "on", "or", "over", "per", "some", "the", "to", "up", "with", "without",
    }
)  # fmt: skip
_SEPARATORS = re.compile(r"[\W_]+")


class Figure3InputError(ValueError):
    """A run's rewrites do not cover the cases to classify; the message names the file."""


def normalise(text: str) -> str:
    return _SEPARATORS.sub(" ", text.lower()).strip()


def words(text: str) -> list[str]:
    return normalise(text).split()


def content_words(text: str) -> list[str]:
    return [w for w in words(text) if w not in STOPWORDS]


@dataclass(frozen=True)
class Case:
    """One rewrite's category and the words that decided it."""

    category: str
    reason: str
    corrected: tuple[tuple[str, str], ...] = ()
    dropped: tuple[str, ...] = ()
    added_from_history: tuple[str, ...] = ()
    added_other: tuple[str, ...] = ()


def _unique(seq) -> list[str]:
    return list(dict.fromkeys(seq))


def corrections(
    missing: Sequence[str], added: Sequence[str], max_edit_distance: int
) -> dict[str, str]:
    """Query word -> the rewrite word that corrects it (see the module's rule 3)."""
    from rapidfuzz.distance import OSA

    out: dict[str, str] = {}
    for word in missing:
        limit = min(max_edit_distance, (len(word) - 1) // 2)
        best = None
        for cand in added:
            if cand in out.values():
                continue
            d = OSA.distance(word, cand, score_cutoff=limit)
            if d <= limit and (best is None or d < best[0]):
                best = (d, cand)
        if best is not None:
            out[word] = best[1]
    return out


def classify(
    query: str,
    rewrite: str | None,
    history_words: frozenset[str] | set[str],
    *,
    well_formed: bool = True,
    max_edit_distance: int = 2,
    min_history_share: float = 0.5,
) -> Case:
    """The category of one rewrite of ``query`` (the module's rules, in order)."""
    if not well_formed:
        return Case("other", "malformed generation")
    if not rewrite or not normalise(rewrite):
        return Case("other", "empty rewrite")
    q, r = words(query), words(rewrite)
    if q == r:
        return Case("keep", "same words")
    q_set, r_set = set(q), set(r)
    fixed = corrections(
        _unique(w for w in q if w not in r_set),
        _unique(w for w in r if w not in q_set),
        max_edit_distance,
    )
    dropped = tuple(
        _unique(w for w in q if w not in r_set and w not in fixed and w not in STOPWORDS)
    )
    added = _unique(
        w for w in r if w not in q_set and w not in fixed.values() and w not in STOPWORDS
    )
    from_history = tuple(w for w in added if w in history_words)
    other = tuple(w for w in added if w not in history_words)
    evidence = {
        "corrected": tuple(fixed.items()),
        "dropped": dropped,
        "added_from_history": from_history,
        "added_other": other,
    }
    if dropped and from_history:
        return Case("over_personalization", "drops query words, adds history words", **evidence)
    if dropped:
        return Case("other", "drops query words, adds none from the history", **evidence)
    if not added:
        if fixed:
            return Case("query_correction", "corrects query words only", **evidence)
        return Case("other", "no content change", **evidence)
    if len(from_history) / len(added) >= min_history_share:
        return Case("preference_extraction", "adds history words", **evidence)
    return Case("intent_disambiguation", "adds words not from the history", **evidence)


def item_words(item, fields: Sequence[str], max_features: int) -> set[str]:
    """Content words of an item's text fields (the values, not the field names)."""
    texts = []
    for name in fields:
        if name == "features":
            texts += list(item.features)[:max_features]
        else:
            texts.append(getattr(item, name))
    return {w for t in texts for w in content_words(t)}


def history_words(ex, corpus, *, history: str, fields: Sequence[str], max_features: int):
    """The history words of an example (``history``: ``selected`` or ``full``)."""
    if history == "selected":
        ids = ex.selected_history or []
    elif history == "full":
        ids = [h.item_id for h in ex.history]
    else:
        raise ValueError(f"ttp.figure3.history {history!r} is not selected or full")
    return frozenset().union(*(item_words(corpus[i], fields, max_features) for i in ids))


def _joined(tokens) -> str:
    return " ".join(tokens)


def classify_set(
    examples,
    corpus,
    rewrites: Mapping[str, Mapping],
    *,
    set_name: str,
    test_set: str,
    settings: Mapping,
    fields: Sequence[str],
    max_features: int,
    where: str,
) -> list[dict]:
    """One record per test example labelled ``test_set``: its rewrite, category, evidence."""
    rows = []
    for ex in sorted(examples, key=lambda e: e.example_id):
        if ex.split != "test" or ex.label != test_set:
            continue
        if ex.example_id not in rewrites:
            raise Figure3InputError(
                f"{where}: no rewrite of test example {ex.example_id!r}; the run must cover "
                "every test query of its set"
            )
        rec = rewrites[ex.example_id]
        rewrite = rec.get("rewrite") or ""
        well_formed = bool(rec.get("well_formed", True))
        hist = history_words(
            ex, corpus, history=settings["history"], fields=fields, max_features=max_features
        )
        case = classify(
            ex.query,
            rewrite,
            hist,
            well_formed=well_formed,
            max_edit_distance=int(settings["max_edit_distance"]),
            min_history_share=float(settings["min_history_share"]),
        )
        rows.append(
            {
                "example_id": ex.example_id,
                "set": set_name,
                "query": ex.query,
                "rewrite": rewrite,
                "well_formed": well_formed,
                "category": case.category,
                "reason": case.reason,
                "corrected": _joined(f"{a}>{b}" for a, b in case.corrected),
                "dropped": _joined(case.dropped),
                "added_from_history": _joined(case.added_from_history),
                "added_other": _joined(case.added_other),
            }
        )
    return rows


def share_rows(categories: Sequence[str], paper: Mapping | None) -> list[dict]:
    """Per category: count, denominator, our share and the paper's (percent): ``keep`` of
    all cases, the others of the rewritten ones (NaN without cases or paper values)."""
    total = len(categories)
    kept = sum(c == "keep" for c in categories)
    of_rewritten = (paper or {}).get("of_rewritten") or {}
    rows = []
    for cat in CATEGORIES:
        count = sum(c == cat for c in categories)
        base, denom = ("all", total) if cat == "keep" else ("rewritten", total - kept)
        ref = (paper or {}).get("keep_original_share_of_all") if cat == "keep" else None
        if cat != "keep":
            ref = of_rewritten.get(cat)
        rows.append(
            {
                "category": cat,
                "basis": base,
                "count": count,
                "denominator": denom,
                "share_pct": 100.0 * count / denom if denom else math.nan,
                "paper_share_pct": float(ref) if ref is not None else math.nan,
            }
        )
    return rows


def plot(shares, *, out: str | Path, title: str) -> None:
    """Bars of ours beside the paper's: keep (of all) on the left, the rewritten cases'
    categories (of rewritten) on the right."""
    import pandas as pd
    import seaborn as sns

    plt = pyplot()
    long = []
    for row in shares.itertuples(index=False):
        for source, value in (("ours", row.share_pct), ("paper", row.paper_share_pct)):
            if not math.isnan(value):
                long.append(
                    {"category": CATEGORY_LABELS[row.category], "source": source, "value": value}
                )
    long = pd.DataFrame(long, columns=["category", "source", "value"])
    hue_order = [s for s in ("ours", "paper") if s in set(long["source"])]
    colours = dict(zip(("ours", "paper"), palette(2), strict=True))
    fig, axes = plt.subplots(
        1, 2, figsize=(6.6, 2.9), gridspec_kw={"width_ratios": [1.2, 5]}, sharey=True
    )
    counts = dict(zip(shares["basis"], shares["denominator"], strict=False))
    panels = (
        (f"of all cases (ours: {counts.get('all', 0)})", [CATEGORY_LABELS["keep"]]),
        (
            f"of the rewritten cases (ours: {counts.get('rewritten', 0)})",
            [CATEGORY_LABELS[c] for c in CATEGORIES[1:]],
        ),
    )
    for ax, (panel_title, order) in zip(axes, panels, strict=True):
        sub = long[long["category"].isin(order)]
        if sub.empty:
            ax.text(0.5, 0.5, "no cases", ha="center", va="center", transform=ax.transAxes)
        else:
            sns.barplot(
                data=sub,
                x="category",
                y="value",
                hue="source",
                order=order,
                hue_order=hue_order,
                palette=colours,
                errorbar=None,
                ax=ax,
            )
            for container in ax.containers:
                ax.bar_label(container, fmt="%.1f", fontsize=6, padding=1)
        ax.set_title(panel_title, fontsize=8)
        ax.set_xlabel("")
        ax.set_ylabel("")
        legend = ax.get_legend()
        if legend is not None:
            legend.remove()
    axes[0].set_ylabel("share (%)")
    axes[0].set_ylim(0, 105)
    handles, labels = axes[-1].get_legend_handles_labels()
    if handles:
        axes[-1].legend(handles, labels, frameon=False, loc="upper right")
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    save_figure(fig, out)


def make_figure3(
    *,
    sets: Sequence[tuple[str, str | Path, str | Path, str | Path]],
    method_label: str,
    settings: Mapping,
    items_settings: Mapping,
    paper_path: str | Path | None,
    config_label: str,
    cases_out: str | Path,
    csv_out: str | Path,
    pdf_out: str | Path,
):
    """Classify every case of ``sets`` (``(name, examples, items, run info)``), write the
    cases, the shares and the figure; return the shares."""
    import pandas as pd
    import yaml

    paper = None
    if paper_path:
        doc = yaml.safe_load(Path(paper_path).read_text(encoding="utf-8")) or {}
        paper = doc.get("figure3")
        if paper is None:
            raise ValueError(f"{paper_path}: no `figure3` section (the paper's Figure 3)")
    cases = []
    for name, examples_path, items_path, info_path in sets:
        info = read_json(info_path)
        if not isinstance(info.get("rewrites"), Mapping):
            raise Figure3InputError(f"{info_path}: no `rewrites` (a run that writes rewrites)")
        examples, corpus = read_examples(examples_path), ItemCorpus.read(items_path)
        check_examples(examples, corpus, f"{examples_path} with {items_path}")
        cases += classify_set(
            examples,
            corpus,
            info["rewrites"],
            set_name=name,
            test_set=settings["set"],
            settings=settings,
            fields=tuple(items_settings["fields"]),
            max_features=int(items_settings["max_features"]),
            where=str(info_path),
        )
    columns = [
        "example_id", "set", "query", "rewrite", "well_formed", "category", "reason",
        "corrected", "dropped", "added_from_history", "added_other",
    ]  # fmt: skip
    cases = pd.DataFrame(cases, columns=columns)
    with atomic_open(cases_out) as fh:
        cases.to_csv(fh, index=False)
    shares = pd.DataFrame(share_rows(list(cases["category"]), paper))
    shares.insert(0, "test_set", settings["set"])
    shares.insert(0, "method", settings["method"])
    with atomic_open(csv_out) as fh:
        shares.to_csv(fh, index=False, float_format="%.2f")
    title = (
        f"{config_label}: {method_label} rewrites of {len(cases)} {settings['set']} test "
        "queries, rule-based categories" + ("; paper: a human-annotated sample" if paper else "")
    )
    plot(shares, out=pdf_out, title=title)
    return shares
