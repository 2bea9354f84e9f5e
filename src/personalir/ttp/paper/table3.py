"""Table 3 of the TTP paper: the test sets' statistics, ours beside the paper's (rule
``ttp_table3``; counts what the workflow's example files hold, trains nothing).

One row per test set, in the paper's order:

==============================  ==========================================================
row                             read from
==============================  ==========================================================
General, Broad, LongTail        the test-split examples of the TTP example sets
(any other label of those)      (``ttp/<set>/examples.jsonl``), grouped by ``label``;
                                items: the distinct items of those sets' ``items.parquet``
each public set (Table 5)       its ``examples.jsonl`` (test split) and ``items.parquet``
Relevance                       the sets' ``relevance/pairs.jsonl``: distinct query ids and
                                item ids; no history
a set only the paper reports    the paper's values, ours ``--``
==============================  ==========================================================

Columns: ``queries`` (test searches), ``items``, ``avg_hist`` (mean length of the user's
history before the top-N selection; ``avg_selected_hist``, CSV only: what the model reads),
``avg_q_len`` (mean whitespace-separated words of the query) and ``training_samples``: the
train-split examples of the row's source. General, Broad and LongTail share one source (the
TTP example sets, on which one model is trained: the paper's ``proprietary`` million); a
public set's examples are all test searches, since our models are applied to it untrained
(the paper trains on each).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from personalir.common.io import atomic_open, write_text
from personalir.common.latex import dataframe_to_latex, escape
from personalir.ttp.inputs.data import Example, ExampleFormatError, ItemCorpus, read_examples

TEST_SETS = ("General", "Broad", "LongTail")
RELEVANCE = "Relevance"
STATS = ("queries", "items", "avg_hist", "avg_q_len", "training_samples")
# Our row -> the paper's ``training_samples`` key (a row not listed uses its own name).
PAPER_TRAINING_SOURCE = {t: "proprietary" for t in TEST_SETS}
FORMAT_NAMES = {"personalwab": "PersonalWAB", "kuaisearch": "KuaiSearch"}


@dataclass(frozen=True)
class ExampleSet:
    """One example file with its items: a TTP training set or a public test set."""

    name: str
    examples: list[Example]
    item_ids: frozenset[str]


def read_example_set(name: str, examples_path: str | Path, items_path: str | Path) -> ExampleSet:
    """The set's examples (format-checked, errors name the file and line) and item ids."""
    examples = read_examples(examples_path)
    corpus = ItemCorpus.read(items_path)
    if not len(corpus):
        raise ExampleFormatError(f"{items_path}: no items")
    return ExampleSet(name, examples, frozenset(corpus.ids))


def read_relevance_pairs(path: str | Path) -> list[dict]:
    """``query_id, query, item_id, label`` records of a Relevance set, checked."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ExampleFormatError(f"{path}:{lineno}: invalid JSON: {exc}") from None
            for key in ("query_id", "query", "item_id"):
                if not isinstance(rec.get(key), str) or not rec[key]:
                    raise ExampleFormatError(
                        f"{path}:{lineno}: field {key!r} must be a non-empty string"
                    )
            out.append(rec)
    return out


def query_words(query: str) -> int:
    return len(query.split())


def _mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else math.nan


def _example_stats(tests: Sequence[Example]) -> dict:
    return {
        "queries": len(tests),
        "avg_hist": _mean([len(ex.history) for ex in tests]),
        "avg_selected_hist": _mean([len(ex.selected_history or ()) for ex in tests]),
        "avg_q_len": _mean([query_words(ex.query) for ex in tests]),
    }


def _train_count(sets: Sequence[ExampleSet]) -> int:
    return sum(ex.split == "train" for s in sets for ex in s.examples)


def ttp_rows(sets: Sequence[ExampleSet]) -> list[dict]:
    """One row per test label of the TTP example sets: General, Broad, LongTail first."""
    labels = {ex.label for s in sets for ex in s.examples if ex.split == "test"}
    order = [t for t in TEST_SETS if t in labels] + sorted(labels - set(TEST_SETS))
    training = _train_count(sets)
    rows = []
    for label in order:
        holding = [s for s in sets if any(ex.label == label for ex in s.examples)]
        tests = [ex for s in sets for ex in s.examples if ex.split == "test" and ex.label == label]
        rows.append(
            {
                "dataset": label,
                "kind": "ttp",
                "sources": "+".join(s.name for s in holding),
                **_example_stats(tests),
                "items": len(frozenset().union(*(s.item_ids for s in holding))),
                "training_samples": training,
                "training_source": "+".join(s.name for s in sets),
            }
        )
    return rows


def public_rows(sets: Sequence[ExampleSet]) -> list[dict]:
    """One row per public set: its test searches and its items."""
    rows = []
    for s in sets:
        tests = [ex for ex in s.examples if ex.split == "test"]
        rows.append(
            {
                "dataset": s.name,
                "kind": "public",
                "sources": s.name,
                **_example_stats(tests),
                "items": len(s.item_ids),
                "training_samples": _train_count([s]),
                "training_source": s.name,
            }
        )
    return rows


def relevance_row(pairs: Sequence[Mapping]) -> dict:
    """The Relevance set: distinct queries and items of its graded pairs, no history."""
    queries: dict[str, str] = {}
    for rec in pairs:
        queries.setdefault(rec["query_id"], rec["query"])
    return {
        "dataset": RELEVANCE,
        "kind": "relevance",
        "sources": "",
        "queries": len(queries),
        "items": len({rec["item_id"] for rec in pairs}),
        "avg_hist": math.nan,
        "avg_selected_hist": math.nan,
        "avg_q_len": _mean([query_words(q) for q in queries.values()]),
        "training_samples": math.nan,
        "training_source": "",
    }


def table3(
    ttp_sets: Sequence[ExampleSet],
    public_sets: Sequence[ExampleSet],
    relevance_pairs: Sequence[Mapping] | None,
    paper: Mapping | None,
) -> pd.DataFrame:
    """Ours beside the paper's: one row per test set in three sections (``kind``: the TTP
    sets' labels, the public sets, Relevance), ``paper_<stat>`` columns (NaN where the paper
    gives no value or none is configured). A set only the paper reports joins its section
    with ours NaN."""
    datasets = {k: v for k, v in (paper or {}).items() if k != "training_samples"}
    training = (paper or {}).get("training_samples") or {}
    ours = {r["dataset"]: r for r in ttp_rows(ttp_sets) + public_rows(public_sets)}
    if relevance_pairs:
        ours[RELEVANCE] = relevance_row(relevance_pairs)
    # an unlisted label of our TTP sets, e.g. PersonalWAB's, counts as a TTP test set
    ttp_names = [d for d, r in ours.items() if r["kind"] == "ttp"]
    first = [t for t in TEST_SETS if t in ttp_names or t in datasets]
    sections = {
        "ttp": first + [d for d in ttp_names if d not in first],
        "public": [d for d, r in ours.items() if r["kind"] == "public"],
        "relevance": [RELEVANCE] if RELEVANCE in ours or RELEVANCE in datasets else [],
    }
    placed = {d for names in sections.values() for d in names}
    sections["public"] += [d for d in datasets if d not in placed]
    out = []
    for kind, names in sections.items():
        for name in names:
            row = ours.get(name) or {}
            ref = datasets.get(name) or {}
            full = {"dataset": name, "kind": kind, "sources": row.get("sources", "")}
            for stat in (*STATS[:3], "avg_selected_hist", *STATS[3:]):
                full[stat] = row.get(stat, math.nan)
            full["training_source"] = row.get("training_source", "")
            for stat in STATS[:4]:
                full[f"paper_{stat}"] = float(ref.get(stat, math.nan))
            source = PAPER_TRAINING_SOURCE.get(name, name)
            full["paper_training_samples"] = float(training.get(source, math.nan))
            out.append(full)
    table = pd.DataFrame(out)
    # counts stay integers in the CSV (a missing one is empty)
    for col in ("queries", "items", "training_samples"):
        for name in (col, f"paper_{col}"):
            table[name] = pd.array(
                [None if pd.isna(v) else int(v) for v in table[name]], dtype="Int64"
            )
    return table


def _cell(value, *, integer: bool):
    """A LaTeX cell value: ints print with thousands separators, a missing value as --."""
    if pd.isna(value):
        return None
    return int(value) if integer else float(value)


COLUMN_TITLES = {
    "queries": "Queries",
    "items": "Items",
    "avg_hist": "Avg. hist.",
    "avg_q_len": "Avg. q. len",
    "training_samples": "Train",
}


def table3_latex(table: pd.DataFrame, *, caption: str, with_paper: bool) -> str:
    cols, labels, groups = ["Dataset"], ["Dataset"], [("", 1)]
    frame: dict[str, list] = {"Dataset": list(table["dataset"])}
    for stat in STATS:
        integer = stat in ("queries", "items", "training_samples")
        frame[stat] = [_cell(v, integer=integer) for v in table[stat]]
        cols.append(stat)
        if with_paper:
            frame[f"paper_{stat}"] = [_cell(v, integer=integer) for v in table[f"paper_{stat}"]]
            cols.append(f"paper_{stat}")
            labels += ["ours", "paper"]
            groups.append((COLUMN_TITLES[stat], 2))
        else:
            labels.append(COLUMN_TITLES[stat])
    kinds = list(table["kind"])
    rules = [i for i in range(1, len(kinds)) if kinds[i] != kinds[i - 1]]
    return dataframe_to_latex(
        pd.DataFrame(frame, columns=cols, dtype=object),
        caption=caption,
        label="tab:ttp-table3",
        floatfmt=".1f",
        midrule_before=rules,
        header_groups=groups if with_paper else None,
        column_labels=labels,
        fit_width=True,
    )


def caption_text(
    *,
    config_label: str,
    source: str,
    ttp_set_names: Sequence[str],
    public: Mapping[str, Mapping],
    with_paper: bool,
) -> str:
    """The caption: what each column counts, which sets are synthetic, where the paper's
    values come from (the rule's configuration decides; nothing is inferred from the data)."""
    notes = []
    if source == "sample_world":
        notes.append(
            "General, Broad and LongTail are the test searches of the synthetic sample world's "
            f"search log ({escape(', '.join(ttp_set_names))}), not the paper's proprietary "
            "logs; the Relevance set is built from its planted product types."
        )
    fixtures = [s for s, spec in public.items() if spec.get("fixture_domain")]
    if fixtures:
        notes.append(
            "Fixture-scale public sets: "
            + "; ".join(
                f"{escape(s)} is the synthetic {escape(str(public[s]['fixture_domain']))} domain "
                f"written in {FORMAT_NAMES.get(public[s].get('format'), 'its')}'s published format"
                for s in fixtures
            )
            + "."
        )
    if public:
        notes.append(
            "Our models train on the General/Broad/LongTail sets' source only and are applied "
            "to the public sets untrained (Train 0); the paper trains on each dataset."
        )
    if fixtures or source == "sample_world":
        notes.append("Sizes are the sample's, not comparable to the paper's.")
    notes.append(
        "Paper values beside ours (Train: the paper's training samples of the row's source)."
        if with_paper
        else r"The paper's values are not bundled (set \texttt{ttp.paper\_reference} to show"
        " them)."
    )
    return (
        f"Test sets of the {escape(config_label)} configuration (Table 3 layout): test "
        "searches (queries), items, mean history length before the top-N selection, mean "
        "query length in words, and the training searches of the row's source. " + " ".join(notes)
    )


def make_table3(
    *,
    ttp_sets: Sequence[tuple[str, str | Path, str | Path]],
    public_sets: Sequence[tuple[str, str | Path, str | Path]],
    relevance_paths: Sequence[str | Path],
    paper_path: str | Path | None,
    source: str,
    public: Mapping[str, Mapping],
    config_label: str,
    csv_out: str | Path,
    tex_out: str | Path,
) -> pd.DataFrame:
    """Read the sets (``(name, examples, items)``), write the CSV and the LaTeX table."""
    import yaml

    paper = None
    if paper_path:
        doc = yaml.safe_load(Path(paper_path).read_text(encoding="utf-8")) or {}
        paper = doc.get("datasets")
        if paper is None:
            raise ValueError(f"{paper_path}: no `datasets` section (the paper's Table 3)")
    pairs = [rec for p in relevance_paths for rec in read_relevance_pairs(p)]
    table = table3(
        [read_example_set(*s) for s in ttp_sets],
        [read_example_set(*s) for s in public_sets],
        pairs if relevance_paths else None,
        paper,
    )
    with atomic_open(csv_out) as fh:
        table.to_csv(fh, index=False, float_format="%.4f")
    caption = caption_text(
        config_label=config_label,
        source=source,
        ttp_set_names=[s[0] for s in ttp_sets],
        public=public,
        with_paper=paper is not None,
    )
    write_text(tex_out, table3_latex(table, caption=caption, with_paper=paper is not None))
    return table
