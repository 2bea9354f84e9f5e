"""KuaiSearch's recall release as TTP examples (the TTP paper's Table 5 public benchmark).

KuaiSearch (Li, Chen et al., arXiv 2602.11518; github.com/benchen4395/KuaiSearch, MIT;
Hugging Face dataset ``benchen4395/KuaiSearch``) logs real Kuaishou product searches. Two of
its JSON Lines tables make a personalised recall benchmark:

items   one item a line: ``item_id, item_title, brand_id, brand_name, seller_id, seller_name,
        category_level{1,2,3}_id, category_level{1,2,3}_name``; ids are integers, names are
        Chinese text, an absent brand or category is ``"UNKNOWN"`` (with id 0).
recall  one search session a line: ``user_id, session_id, impressed_item_ids,
        clicked_item_ids, purchased_item_ids`` (lists of item ids), ``time_index`` (an integer
        order of the user's sessions), ``query`` (as typed) and ``split`` (``train``/``test``).

What was verified, and where (the repository at the commits named):

* Field names, JSON types and the ``UNKNOWN``/0 convention: the official repository's demo
  files ``demo/items.jsonl`` and ``demo/recall.jsonl`` (commit 070f96e, 200 lines each, all
  ``split: train``). The demo's recall sessions mostly name items its items sample lacks, so
  the demo cannot be loaded as a whole; it shows the schema, not a consistent sample.
* Relevance = clicked ∪ purchased, sessions without either skipped, split taken from the
  row's own ``split`` field (``train``/``test``), session id as the query id, Recall@k =
  |top-k ∩ relevant| / |relevant| and HR@k = any relevant item in the top k: the official
  recall scripts ``recall/data/process.py`` and ``recall/dpr/test.py`` (commit 9515032).
  The demo has a purchase that is not among the session's clicks, so the union matters.
* Not verified against the Hugging Face files themselves: the lite layout
  ``items_lite/train.jsonl`` and ``recall_lite/train.jsonl`` (revision 09807c77) is known
  only from third-party code that downloads them (and groups a user's sessions sharing a
  ``time_index``, so ties may occur). Hence the defaults below read every ``*.jsonl`` in
  ``items_lite/`` and ``recall_lite/`` (a file path works too), ties are handled, and ids
  may be integers (as in the demo) or non-empty strings (both become strings).

How examples are built (one :class:`~personalir.ttp.inputs.data.Example` per kept session):

* ``relevant``: the session's purchased items, then its other clicked items, each once, in
  the file's order. The ``target`` is ``relevant[0]`` (the first purchase, else the first
  click): ``Example`` holds one target and the evaluation's qrels are ``{target: 1}``. The
  whole set is kept in ``extra["relevant"]``; KuaiSearch's Recall@20 needs it (with one
  relevant item Recall@20 equals HR@20), so the evaluation must read it to report that.
* history: the items the same user clicked or purchased in sessions with a strictly smaller
  ``time_index`` (any split; sessions sharing a time index do not see each other), oldest
  first; within a session clicks in list order, then purchases not clicked; an item seen in
  two sessions appears twice (one entry per session), ``timestamp`` = ``time_index``.
* sessions with no click and no purchase are dropped, counted in :class:`KuaiSearchStats`
  and logged with the other counts (examples per split, examples without history).
* items: ``title`` = ``item_title``; ``main_category`` = the category path
  ``L1 > L2 > L3``; attributes ``Brand``, ``Seller``, ``Category L1/L2/L3``; an ``UNKNOWN``
  or empty value is left out; Chinese text is kept as is; the release has no features.

Strictness: bad JSON, a non-object line, a missing field, a wrong type, an unknown split, an
empty query, a duplicate ``session_id`` or ``item_id``, or a clicked/purchased item missing
from the items file stops with ``path:line: reason``. Impressed items are only type-checked
(they are not examples' targets or history); those missing from the items file are counted.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from personalir.ttp.inputs.data import (
    EXAMPLE_SOURCES,
    Example,
    ExampleFormatError,
    Item,
    ItemCorpus,
    check_examples,
)

LOG = logging.getLogger(__name__)

SOURCE = "kuaisearch"
UNKNOWN = "UNKNOWN"
DEFAULT_SPLITS = {
    "train": "train",
    "test": "test",
    "valid": "valid",
    "validation": "valid",
    "val": "valid",
    "dev": "valid",
}

# field -> expected kind: "id" (integer or non-empty string), "int", "str", "ids" (list of ids)
ITEM_SCHEMA = {
    "item_id": "id",
    "item_title": "str",
    "brand_id": "int",
    "brand_name": "str",
    "seller_id": "int",
    "seller_name": "str",
    "category_level1_id": "int",
    "category_level1_name": "str",
    "category_level2_id": "int",
    "category_level2_name": "str",
    "category_level3_id": "int",
    "category_level3_name": "str",
}
RECALL_SCHEMA = {
    "user_id": "id",
    "session_id": "id",
    "impressed_item_ids": "ids",
    "clicked_item_ids": "ids",
    "purchased_item_ids": "ids",
    "time_index": "int",
    "query": "str",
    "split": "str",
}
_KIND_NAMES = {
    "id": "an id (integer or non-empty string)",
    "int": "an integer",
    "str": "a string",
    "ids": "a list of item ids",
}


@dataclass
class KuaiSearchStats:
    """What the loader read, dropped and kept (logged by :func:`kuaisearch_examples`)."""

    files: list[str] = field(default_factory=list)
    items_read: int = 0
    corpus_items: int = 0
    sessions_read: int = 0
    dropped_no_interaction: int = 0
    examples: int = 0
    by_split: dict[str, int] = field(default_factory=dict)
    without_history: int = 0
    multi_relevant: int = 0  # examples with more than one relevant item
    impressed_not_in_items: int = 0  # distinct impressed item ids the items file lacks
    cut_by_max_sessions: int = 0

    def summary(self) -> str:
        splits = ", ".join(f"{k} {v}" for k, v in sorted(self.by_split.items()))
        return (
            f"KuaiSearch: {self.sessions_read} sessions read; "
            f"{self.dropped_no_interaction} dropped (no click and no purchase); "
            f"{self.examples} examples ({splits}); {self.without_history} without any history; "
            f"{self.multi_relevant} with more than one relevant item; "
            f"{self.cut_by_max_sessions} left out by max_sessions; "
            f"corpus {self.corpus_items} of {self.items_read} items; "
            f"{self.impressed_not_in_items} impressed item ids not in the items file"
        )


@dataclass
class KuaiSearchLoad:
    examples: list[Example]
    corpus: ItemCorpus
    stats: KuaiSearchStats


@dataclass
class _Session:
    where: str
    order: int
    user_id: str
    session_id: str
    time_index: int
    query: str
    split: str
    clicked: list[str]
    purchased: list[str]
    n_impressed: int

    def relevant(self) -> list[str]:
        """Purchases first (the target is the first), then the other clicks; each once."""
        return list(dict.fromkeys(self.purchased + self.clicked))

    def interacted(self) -> list[str]:
        """Clicks in list order, then purchases not clicked (a purchase follows its click)."""
        return list(dict.fromkeys(self.clicked + self.purchased))


def _jsonl_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(path.glob("*.jsonl"))
        if not files:
            raise FileNotFoundError(f"{path}: no *.jsonl file in this folder")
        return files
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file or folder")
    return [path]


def _records(path: Path) -> Iterator[tuple[str, dict]]:
    """``(path:line, record)`` of each non-blank line; bad JSON or a non-object stops."""
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ExampleFormatError(f"{where}: invalid JSON: {exc}") from None
            if not isinstance(rec, dict):
                raise ExampleFormatError(
                    f"{where}: expected a JSON object, got {type(rec).__name__}"
                )
            yield where, rec


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_id(v) -> bool:
    return _is_int(v) or (isinstance(v, str) and v != "")


def _check(rec: Mapping, schema: Mapping[str, str], where: str) -> None:
    for key, kind in schema.items():
        if key not in rec:
            raise ExampleFormatError(f"{where}: missing field {key!r}")
        v = rec[key]
        if kind == "ids":
            if not isinstance(v, list):
                raise ExampleFormatError(
                    f"{where}: field {key!r} must be {_KIND_NAMES[kind]}, got {v!r}"
                )
            for i, x in enumerate(v):
                if not _is_id(x):
                    raise ExampleFormatError(
                        f"{where}: {key}[{i}] must be {_KIND_NAMES['id']}, got {x!r}"
                    )
            continue
        ok = {"id": _is_id, "int": _is_int, "str": lambda x: isinstance(x, str)}[kind](v)
        if not ok:
            raise ExampleFormatError(
                f"{where}: field {key!r} must be {_KIND_NAMES[kind]}, got {v!r}"
            )


def _known(value: str) -> str:
    return "" if value == UNKNOWN else value


def _item(rec: Mapping) -> Item:
    cats = [_known(rec[f"category_level{i}_name"]) for i in (1, 2, 3)]
    pairs = [("Brand", rec["brand_name"]), ("Seller", rec["seller_name"])] + [
        (f"Category L{i}", c) for i, c in enumerate(cats, 1)
    ]
    return Item(
        item_id=str(rec["item_id"]),
        title=rec["item_title"],
        main_category=" > ".join(c for c in cats if c),
        attributes=tuple((k, v) for k, v in pairs if _known(v)),
    )


def _read_sessions(
    files: list[Path], split_map: Mapping[str, str]
) -> tuple[list[_Session], set[str]]:
    """Every session (checked), and every item id any session names."""
    sessions: list[_Session] = []
    first_at: dict[str, str] = {}
    referenced: set[str] = set()
    for path in files:
        for where, rec in _records(path):
            _check(rec, RECALL_SCHEMA, where)
            sid = str(rec["session_id"])
            if sid in first_at:
                first = first_at[sid]
                raise ExampleFormatError(
                    f"{where}: duplicate session_id {rec['session_id']!r} (first at {first})"
                )
            first_at[sid] = where
            split = split_map.get(rec["split"].lower())
            if split not in ("train", "valid", "test"):
                raise ExampleFormatError(
                    f"{where}: unknown split {rec['split']!r} (known: {sorted(split_map)})"
                )
            if not rec["query"].strip():
                raise ExampleFormatError(f"{where}: field 'query' is empty")
            clicked = [str(i) for i in rec["clicked_item_ids"]]
            purchased = [str(i) for i in rec["purchased_item_ids"]]
            impressed = [str(i) for i in rec["impressed_item_ids"]]
            referenced.update(clicked, purchased, impressed)
            sessions.append(
                _Session(
                    where=where,
                    order=len(sessions),
                    user_id=str(rec["user_id"]),
                    session_id=sid,
                    time_index=rec["time_index"],
                    query=rec["query"],
                    split=split,
                    clicked=clicked,
                    purchased=purchased,
                    n_impressed=len(impressed),
                )
            )
    return sessions, referenced


def _read_items(files: list[Path], keep: set[str] | None) -> tuple[dict[str, Item], int]:
    """Items (all, or those in ``keep``) and the count of lines read."""
    items: dict[str, Item] = {}
    first_at: dict[str, str] = {}
    n = 0
    for path in files:
        for where, rec in _records(path):
            _check(rec, ITEM_SCHEMA, where)
            n += 1
            iid = str(rec["item_id"])
            if keep is None or iid in keep:
                if iid in first_at:
                    raise ExampleFormatError(
                        f"{where}: duplicate item_id {rec['item_id']!r} (first at {first_at[iid]})"
                    )
                first_at[iid] = where
                items[iid] = _item(rec)
    return items, n


def _histories(sessions: list[_Session]) -> dict[str, list[dict]]:
    """Session id -> the user's earlier interactions (strictly smaller time index), oldest
    first; sessions sharing a time index are one step and do not see each other."""
    by_user: dict[str, list[_Session]] = defaultdict(list)
    for s in sessions:
        by_user[s.user_id].append(s)
    out: dict[str, list[dict]] = {}
    for user_sessions in by_user.values():
        user_sessions.sort(key=lambda s: (s.time_index, s.order))
        past: list[dict] = []
        i = 0
        while i < len(user_sessions):
            j = i
            while (
                j < len(user_sessions)
                and user_sessions[j].time_index == user_sessions[i].time_index
            ):
                j += 1
            step = user_sessions[i:j]
            for s in step:
                out[s.session_id] = list(past)
            for s in step:
                past.extend({"item_id": iid, "timestamp": s.time_index} for iid in s.interacted())
            i = j
    return out


def load_kuaisearch(
    *,
    data_dir: str | Path,
    domain: str = "KuaiSearch",
    items: str | Path = "items_lite",
    recall: str | Path = "recall_lite",
    split_map: Mapping[str, str] | None = None,
    max_sessions: int | None = None,
    max_history: int | None = None,
    items_scope: str = "all",
    label: str = "KuaiSearch",
) -> KuaiSearchLoad:
    """Examples, corpus and counts from KuaiSearch's items and recall files.

    ``items``/``recall``: a ``.jsonl`` file or a folder of them, relative to ``data_dir``
    (or absolute). ``split_map``: the row's ``split`` (lower-cased) -> ``train``/``valid``/
    ``test`` (default :data:`DEFAULT_SPLITS`). ``max_sessions``: keep the first N examples
    in file order (histories still use every session). ``max_history``: keep the N most recent
    history entries. ``items_scope``: ``all`` items of the items file, or ``sessions``: only
    items some session impresses, clicks or purchases (the lite items file is 2.8 GB; this
    keeps the corpus to the recall pool; duplicate ids are then checked among those only).
    """
    if items_scope not in ("all", "sessions"):
        raise ValueError(f"items_scope {items_scope!r} is neither 'all' nor 'sessions'")
    split_map = {k.lower(): v for k, v in (split_map or DEFAULT_SPLITS).items()}
    data_dir = Path(data_dir)
    recall_files = _jsonl_files(data_dir / recall)
    item_files = _jsonl_files(data_dir / items)
    stats = KuaiSearchStats(files=[str(p) for p in item_files + recall_files])

    sessions, referenced = _read_sessions(recall_files, split_map)
    item_map, stats.items_read = _read_items(
        item_files, None if items_scope == "all" else referenced
    )
    stats.sessions_read = len(sessions)

    kept: list[_Session] = []
    for s in sessions:
        for kind, ids in (("clicked", s.clicked), ("purchased", s.purchased)):
            for iid in ids:
                if iid not in item_map:
                    raise ExampleFormatError(
                        f"{s.where}: {kind} item {iid} is not in the items file(s)"
                    )
        if s.clicked or s.purchased:
            kept.append(s)
        else:
            stats.dropped_no_interaction += 1
    # impressed items the items file lacks: not an error, they are never targets or history
    stats.impressed_not_in_items = sum(1 for iid in referenced if iid not in item_map)

    histories = _histories(sessions)
    if max_sessions is not None:
        stats.cut_by_max_sessions = max(0, len(kept) - max_sessions)
        kept = kept[:max_sessions]
    examples = []
    for s in kept:
        history = histories[s.session_id]
        if max_history is not None:
            history = history[-max_history:] if max_history > 0 else []
        relevant = s.relevant()
        examples.append(
            Example.from_record(
                {
                    "example_id": f"{SOURCE}-{s.session_id}",
                    "source": SOURCE,
                    "domain": domain,
                    "user_id": s.user_id,
                    "query": s.query,
                    "target": relevant[0],
                    "label": label,
                    "split": s.split,
                    "history": history,
                    "extra": {
                        "session_id": s.session_id,
                        "time_index": s.time_index,
                        "relevant": relevant,
                        "clicked": s.clicked,
                        "purchased": s.purchased,
                        "n_impressed": s.n_impressed,
                    },
                },
                s.where,
            )
        )
    corpus = ItemCorpus(item_map)
    check_examples(examples, corpus, str(data_dir / recall))
    stats.corpus_items = len(corpus)
    stats.examples = len(examples)
    stats.by_split = dict(Counter(ex.split for ex in examples))
    stats.without_history = sum(1 for ex in examples if not ex.history)
    stats.multi_relevant = sum(1 for ex in examples if len(ex.extra["relevant"]) > 1)
    return KuaiSearchLoad(examples, corpus, stats)


def kuaisearch_examples(
    *, log: Callable[[str], None] | None = None, **options: object
) -> tuple[list[Example], ItemCorpus]:
    """The ``kuaisearch`` example source: :func:`load_kuaisearch` with its options (others,
    meant for other sources, are ignored, as every source does), its counts logged."""
    known = inspect.signature(load_kuaisearch).parameters
    loaded = load_kuaisearch(**{k: v for k, v in options.items() if k in known})
    (log or LOG.info)(loaded.stats.summary())
    return loaded.examples, loaded.corpus


@EXAMPLE_SOURCES.register("kuaisearch")
def kuaisearch_source(**kwargs) -> tuple[list[Example], ItemCorpus]:
    """KuaiSearch's lite recall release (:mod:`personalir.ttp.inputs.kuaisearch`)."""
    return kuaisearch_examples(**kwargs)
