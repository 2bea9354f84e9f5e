"""The human-evaluation protocol: assignment, exports for annotators, import, adjudication.

1. :func:`assign_annotators`: every item gets ``primaries`` primary annotators and one
   adjudicator (distinct), in a balanced rotation over a seeded shuffle of the annotators (each
   annotator's load is within one item of every other's).
2. Exports of the blinded items: Label Studio tasks (:func:`export_label_studio`, the import
   format ``[{"data": {...}}]``) with a labeling config (:func:`label_studio_config`: one
   ``Choices`` control per dimension, the level texts as hints), a spreadsheet CSV
   (:func:`export_csv`) and the annotator guide (:func:`annotator_guide`), written from the same
   prompt files the judge reads.
3. :func:`import_annotations` reads a Label Studio JSON export or a filled CSV and validates
   every row; all problems are reported at once as ``file:line: reason``.
4. :func:`adjudicate`: two equal primary labels are final; differing ones take the
   adjudicator's label, or stay unresolved until the adjudicator has labelled the item
   (:func:`adjudication_rows` lists what the adjudicator still has to do).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd

from personalir.common.io import atomic_open, write_text
from personalir.common.seeding import derive_seed

#: Display fields of an item, in the order the exports show them.
DISPLAY_FIELDS = (
    "query",
    "query_1",
    "query_2",
    "user_a_sentences",
    "user_b_sentences",
    "clean_query",
    "error_query",
    "user_errors",
)
CSV_COLUMNS = (
    "item_id",
    "order",
    "kind",
    "annotator",
    "role",
    "dimension",
    *DISPLAY_FIELDS,
    "label",
)
ANNOTATION_COLUMNS = ["item_id", "dimension", "annotator", "label", "source"]


class AnnotationImportError(ValueError):
    """An annotation file has bad rows; ``problems`` lists each as ``file:line: reason``."""

    def __init__(self, path, problems: list[str]):
        self.problems = problems
        shown = "\n  ".join(problems[:50])
        more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
        super().__init__(f"{path}: {len(problems)} bad annotation row(s):\n  {shown}{more}")


def assign_annotators(items, annotators, *, primaries: int = 2, seed: int) -> pd.DataFrame:
    """``item_id, annotator, role`` (``primary_1`` .. ``primary_<p>``, ``adjudicator``)."""
    annotators = list(annotators)
    if len(annotators) < primaries + 1:
        raise ValueError(
            f"{primaries} primaries and an adjudicator need {primaries + 1} annotators, "
            f"got {len(annotators)}"
        )
    order = np.random.default_rng(derive_seed(seed, "assignment")).permutation(len(annotators))
    ring = [annotators[i] for i in order]
    n = len(ring)
    rows = []
    ranked = sorted(items, key=lambda it: (it.get("order", 0), it["item_id"]))
    for k, item in enumerate(ranked):
        start = k * primaries
        for j in range(primaries):
            rows.append((item["item_id"], ring[(start + j) % n], f"primary_{j + 1}"))
        rows.append((item["item_id"], ring[(start + primaries) % n], "adjudicator"))
    return pd.DataFrame(rows, columns=["item_id", "annotator", "role"])


def _display(item: dict, field: str) -> str:
    value = item.get(field, "")
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return "" if value is None else str(value)


def label_studio_config(dimensions) -> str:
    """A Label Studio labeling config: the item's fields and one choice control per dimension.
    Controls of a dimension that does not apply to an item's kind are left empty."""
    from xml.sax.saxutils import quoteattr  # nosec B406  # escapes XML we write; parses none

    lines = ["<View>", '  <Header value="PQB validation item"/>']
    for field in DISPLAY_FIELDS:
        title = field.replace("_", " ").capitalize()
        lines.append(f'  <Header value={quoteattr(title)} size="6"/>')
        lines.append(f'  <Text name="{field}" value="${field}"/>')
    for dim in dimensions:
        kinds = " and ".join(k.replace("_", "-") for k in dim.applies_to)
        lines.append(f"  <Header value={quoteattr(f'{dim.title} (only for {kinds} items)')}/>")
        lines.append(
            f'  <Choices name="{dim.name}" toName="query" choice="single" showInline="true">'
        )
        for label in dim.labels:
            hint = quoteattr(dim.levels[label])
            lines.append(f"    <Choice value={quoteattr(label)} hint={hint}/>")
        lines.append("  </Choices>")
    lines.append("</View>")
    return "\n".join(lines) + "\n"


def export_label_studio(items, dimensions, tasks_path, config_path) -> None:
    """Label Studio tasks (its JSON import format) and the labeling config."""
    tasks = []
    for item in sorted(items, key=lambda it: it["order"]):
        data = {"item_id": item["item_id"], "kind": item["kind"], "order": item["order"]}
        data.update({field: _display(item, field) for field in DISPLAY_FIELDS})
        tasks.append({"data": data})
    with atomic_open(tasks_path) as fh:
        json.dump(tasks, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    write_text(config_path, label_studio_config(dimensions))


def _csv_rows(items, assignment, roles) -> list[dict]:
    by_item = {it["item_id"]: it for it in items}
    rows = []
    chosen = assignment[assignment["role"].isin(roles)]
    for rec in chosen.itertuples(index=False):
        item = by_item[rec.item_id]
        for dim in item["dimensions"]:
            row = {
                "item_id": item["item_id"],
                "order": item["order"],
                "kind": item["kind"],
                "annotator": rec.annotator,
                "role": rec.role,
                "dimension": dim,
                "label": "",
            }
            row.update({field: _display(item, field) for field in DISPLAY_FIELDS})
            rows.append(row)
    rows.sort(key=lambda r: (r["annotator"], r["order"], r["dimension"]))
    return rows


def _write_csv(rows, path) -> None:
    with atomic_open(path, newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def export_csv(items, assignment, path) -> None:
    """One row per (item, primary annotator, dimension): ``item_id, order, kind, annotator,
    role, dimension``, the item's display fields (lists newline-joined), and an empty ``label``
    for the annotator to fill with one of the dimension's labels. Sorted by annotator, so each
    annotator's rows are one block."""
    _write_csv(
        _csv_rows(items, assignment, {r for r in assignment["role"] if r.startswith("primary_")}),
        path,
    )


def adjudication_rows(items, assignment, labels: pd.DataFrame, path) -> int:
    """The adjudicator's CSV (export layout) for the unresolved (item, dimension) pairs."""
    todo = labels[labels["status"] == "unresolved"]
    pairs = set(zip(todo["item_id"], todo["dimension"], strict=True))
    rows = [
        r
        for r in _csv_rows(items, assignment, {"adjudicator"})
        if (r["item_id"], r["dimension"]) in pairs
    ]
    _write_csv(rows, path)
    return len(rows)


def annotator_guide(dimensions, *, primaries: int, n_annotators: int) -> str:
    """The annotators' guide (Markdown), with each dimension's definition and levels taken
    from the prompt files the judge reads."""
    out = [
        "# PQB validation: annotator guide",
        "",
        "You label search queries that ask for a product, one item at a time. Items come in a",
        "random order and say nothing about how a query was made; label each on its own.",
        "",
        "## Protocol",
        "",
        f"- Each item is labelled independently by {primaries} of the {n_annotators} annotators "
        "(the primaries).",
        "- Where the primaries disagree, another annotator adjudicates: they see the item again",
        "  and give the final label.",
        "- Answer every dimension listed for the item, with exactly one of its labels.",
        "- Do not look up the products, the users, or other annotators' labels.",
        "",
        "## Dimensions",
    ]
    for dim in dimensions:
        kinds = ", ".join(k.replace("_", "-") for k in dim.applies_to)
        out += ["", f"### {dim.title}", "", f"For {kinds} items. {dim.definition}", ""]
        out += [f"- `{label}`: {dim.levels[label]}" for label in dim.labels]
        out += ["", f"(Prompt file version {dim.prompt_version}.)"]
    return "\n".join(out) + "\n"


# --- import --------------------------------------------------------------------------------
def _label_studio_rows(path: Path, annotator_ids: dict) -> list[tuple[str, dict]]:
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise AnnotationImportError(path, [f"{path}:{exc.lineno}: not JSON ({exc.msg})"]) from None
    if not isinstance(tasks, list):
        raise AnnotationImportError(path, [f"{path}: a Label Studio export is a list of tasks"])
    rows = []
    for t, task in enumerate(tasks, 1):
        where = f"{path}:task {t}"
        data = task.get("data", {}) if isinstance(task, dict) else {}
        for annotation in (task.get("annotations") or []) if isinstance(task, dict) else []:
            if annotation.get("was_cancelled"):
                continue
            who = annotation.get("completed_by")
            key = (who.get("email") or who.get("id")) if isinstance(who, dict) else who
            key = "" if key is None else str(key)
            annotator = annotator_ids.get(key, key)
            for result in annotation.get("result") or []:
                choices = (result.get("value") or {}).get("choices") or []
                rows.append(
                    (
                        where,
                        {
                            "item_id": str(data.get("item_id", "")),
                            "dimension": str(result.get("from_name", "")),
                            "annotator": annotator,
                            "label": choices[0] if len(choices) == 1 else json.dumps(choices),
                        },
                    )
                )
    return rows


def _csv_file_rows(path: Path) -> tuple[list[tuple[str, dict]], int]:
    rows, skipped = [], 0
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = {"item_id", "dimension", "annotator", "label"} - set(reader.fieldnames or [])
        if missing:
            raise AnnotationImportError(path, [f"{path}:1: missing columns {sorted(missing)}"])
        for row in reader:
            line = reader.line_num
            if not (row.get("label") or "").strip():
                skipped += 1
                continue
            rows.append(
                (
                    f"{path}:{line}",
                    {
                        k: (row.get(k) or "").strip()
                        for k in ("item_id", "dimension", "annotator", "label")
                    },
                )
            )
    return rows, skipped


def import_annotations(path, items, dimensions, assignment, *, annotator_ids=None) -> pd.DataFrame:
    """Validated annotations (``item_id, dimension, annotator, label, source``) from a Label
    Studio JSON export (``.json``) or a filled CSV; ``attrs["skipped_empty"]`` counts CSV rows
    left unlabelled. Any bad row raises :class:`AnnotationImportError` listing all of them."""
    path = Path(path)
    annotator_ids = {str(k): str(v) for k, v in (annotator_ids or {}).items()}
    skipped = 0
    if path.suffix.lower() == ".json":
        raw = _label_studio_rows(path, annotator_ids)
    else:
        raw, skipped = _csv_file_rows(path)
    by_item = {it["item_id"]: it for it in items}
    dims = {d.name: d for d in dimensions}
    assigned = set(zip(assignment["item_id"], assignment["annotator"], strict=True))
    seen: dict[tuple, str] = {}
    problems, good = [], []
    for where, row in raw:
        item, dim_name, who, label = (
            row["item_id"],
            row["dimension"],
            row["annotator"],
            row["label"],
        )
        if item not in by_item:
            problems.append(f"{where}: unknown item {item!r}")
            continue
        if dim_name not in dims:
            problems.append(f"{where}: unknown dimension {dim_name!r} (known: {sorted(dims)})")
            continue
        dim = dims[dim_name]
        if dim_name not in by_item[item]["dimensions"]:
            problems.append(f"{where}: {dim_name} is not judged for {by_item[item]['kind']} items")
            continue
        if label not in dim.labels:
            problems.append(
                f"{where}: label {label!r} out of range for {dim_name} "
                f"(one of {', '.join(dim.labels)})"
            )
            continue
        if not who:
            problems.append(f"{where}: missing annotator")
            continue
        if (item, who) not in assigned:
            problems.append(f"{where}: annotator {who!r} is not assigned to item {item}")
            continue
        key = (item, dim_name, who)
        if key in seen:
            problems.append(f"{where}: duplicate annotation (first at {seen[key]})")
            continue
        seen[key] = where
        good.append(
            {
                "item_id": item,
                "dimension": dim_name,
                "annotator": who,
                "label": label,
                "source": where,
            }
        )
    if problems:
        raise AnnotationImportError(path, problems)
    frame = pd.DataFrame(good, columns=ANNOTATION_COLUMNS)
    frame.attrs["skipped_empty"] = skipped
    return frame


def adjudicate(
    annotations: pd.DataFrame, assignment: pd.DataFrame, dimensions, items=None
) -> pd.DataFrame:
    """Final label per (item, dimension): ``item_id, dimension, label, status`` with status
    ``agreed``, ``adjudicated``, ``unresolved`` (primaries differ, no adjudicator label yet) or
    ``incomplete`` (fewer primary labels than assigned)."""
    roles = {(r.item_id, r.annotator): r.role for r in assignment.itertuples(index=False)}
    labels: dict[tuple, dict] = {}
    for rec in annotations.itertuples(index=False):
        role = roles.get((rec.item_id, rec.annotator))
        labels.setdefault((rec.item_id, rec.dimension), {})[role] = rec.label
    primaries = sorted({r for r in assignment["role"] if r.startswith("primary_")})
    wanted = sorted(labels)
    if items is not None:
        names = {d.name for d in dimensions}
        wanted = sorted(
            {(it["item_id"], d) for it in items for d in it["dimensions"] if d in names}
            | set(labels)
        )
    rows = []
    for item_id, dim in wanted:
        got = labels.get((item_id, dim), {})
        first = [got.get(p) for p in primaries]
        if any(v is None for v in first):
            rows.append((item_id, dim, None, "incomplete"))
        elif len(set(first)) == 1:
            rows.append((item_id, dim, first[0], "agreed"))
        elif got.get("adjudicator") is not None:
            rows.append((item_id, dim, got["adjudicator"], "adjudicated"))
        else:
            rows.append((item_id, dim, None, "unresolved"))
    return pd.DataFrame(rows, columns=["item_id", "dimension", "label", "status"])
