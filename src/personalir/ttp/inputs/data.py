"""Personalised retrieval examples and item corpora, from three sources behind one interface.

An :class:`Example` is (user, chronological history of items, query, target item) plus a test
set ``label`` and a ``split``. An :class:`ItemCorpus` holds the items that histories and
targets refer to. Sources are registered by name in :data:`EXAMPLE_SOURCES`; each returns
``(examples, corpus)``:

``sample_world``  the search log of the synthetic world
                  (:mod:`personalir.data.sample_world.search_log`)
                  with the data stage's product tables; users are split into train/valid/test by a
                  seeded hash (``test_share``, ``validation_share``).
``personalwab``   PersonalWAB's files: ``user_instructions.json`` (``{split: [task]}``, a task
                  has ``user_id, task, type, timestamp, target: {product_info, review}``),
                  ``user_history.json`` (``{user_id: [{product_info, review}]}``) and, when
                  present, ``all_products.json``. Only ``type == "search"`` tasks are examples;
                  the history is the user's items reviewed before the task's timestamp (as
                  PersonalWAB's own PUMA code selects it), in time order.
``pqb``           a PQB benchmark file: the query's user's reviews (all but the queried
                  product) form the history, the product is the target; every query is a
                  test example labelled by its kind (``syntactic`` / ``writing_error``).

Records are checked strictly when read: a history that is not a list of
``{item_id, timestamp}`` objects, or that names an item the corpus lacks, stops with the file
and line (the TTP reference code's PersonalWAB builder wrote histories in a shape its SFT
collator silently dropped; here that cannot pass unnoticed).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from personalir.common.details import details_pairs
from personalir.common.io import read_parquet_table, write_jsonl, write_parquet
from personalir.common.registry import Registry
from personalir.common.seeding import derive_seed
from personalir.queries.benchmark_format import read_benchmark

SEP = " [SEP] "
ITEM_FIELDS = ("title", "main_category", "features")
_FIELD_NAMES = {"title": "title", "main_category": "main category", "features": "features"}


class ExampleFormatError(ValueError):
    """An example or item record breaks the format; the message says where."""


@dataclass(frozen=True)
class Item:
    item_id: str
    title: str
    main_category: str = ""
    features: tuple[str, ...] = ()
    attributes: tuple[tuple[str, str], ...] = ()  # (key, value), the teacher reads them

    def text(self, fields: Sequence[str] = ITEM_FIELDS, max_features: int = 3) -> str:
        """``key: value`` fields joined by ``[SEP]`` (empty fields are left out)."""
        parts = []
        for name in fields:
            if name not in _FIELD_NAMES:
                raise ValueError(f"unknown item field {name!r}; known: {ITEM_FIELDS}")
            if name == "features":
                value = "; ".join(self.features[:max_features])
            else:
                value = getattr(self, name)
            if value:
                parts.append(f"{_FIELD_NAMES[name]}: {value}")
        return SEP.join(parts)

    def attribute(self, key: str) -> str | None:
        low = key.lower()
        for k, v in self.attributes:
            if k.lower() == low:
                return v
        return None


@dataclass
class ItemCorpus:
    items: dict[str, Item]

    def __post_init__(self):
        self.items = dict(sorted(self.items.items()))

    @property
    def ids(self) -> list[str]:
        return list(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, item_id: str) -> Item:
        return self.items[item_id]

    def __contains__(self, item_id: str) -> bool:
        return item_id in self.items

    def texts(self, fields: Sequence[str] = ITEM_FIELDS, max_features: int = 3) -> list[str]:
        return [it.text(fields, max_features) for it in self.items.values()]

    def write(self, path: str | Path) -> None:
        import pyarrow as pa

        rows = list(self.items.values())
        table = pa.table(
            {
                "item_id": [r.item_id for r in rows],
                "title": [r.title for r in rows],
                "main_category": [r.main_category for r in rows],
                "features": [list(r.features) for r in rows],
                "attribute_keys": [[k for k, _ in r.attributes] for r in rows],
                "attribute_values": [[v for _, v in r.attributes] for r in rows],
            }
        )
        write_parquet(path, table)

    @classmethod
    def read(cls, path: str | Path) -> ItemCorpus:
        items = {}
        for rec in read_parquet_table(path).to_pylist():
            items[rec["item_id"]] = Item(
                item_id=rec["item_id"],
                title=rec["title"] or "",
                main_category=rec["main_category"] or "",
                features=tuple(rec["features"] or ()),
                attributes=tuple(
                    zip(rec["attribute_keys"] or (), rec["attribute_values"] or (), strict=True)
                ),
            )
        return cls(items)


def merge_corpora(paths: Sequence[str | Path]) -> ItemCorpus:
    items = {}
    for p in paths:
        for item_id, item in ItemCorpus.read(p).items.items():
            if item_id in items and items[item_id] != item:
                raise ValueError(f"item {item_id!r} differs between corpora ({p})")
            items[item_id] = item
    return ItemCorpus(items)


def item_fields(ttp: Mapping) -> tuple[str, ...]:
    """The item fields every TTP step renders (``ttp.items.fields``)."""
    return tuple(ttp["items"]["fields"])


@dataclass(frozen=True)
class HistoryEntry:
    item_id: str
    timestamp: int


@dataclass
class Example:
    example_id: str
    source: str
    domain: str
    user_id: str
    query: str
    target: str
    label: str
    split: str
    history: list[HistoryEntry]
    misspelled: bool = False
    selected_history: list[str] | None = None  # item ids, chronological (history selection)
    extra: dict = field(default_factory=dict)

    def to_record(self) -> dict:
        rec = asdict(self)
        rec["history"] = [asdict(h) for h in self.history]
        return rec

    @classmethod
    def from_record(cls, rec: Mapping, where: str = "record") -> Example:
        if not isinstance(rec, Mapping):
            raise ExampleFormatError(f"{where}: expected a JSON object")
        for key in ("example_id", "source", "domain", "user_id", "query", "target", "label"):
            if not isinstance(rec.get(key), str) or not rec[key]:
                raise ExampleFormatError(f"{where}: field {key!r} must be a non-empty string")
        if rec.get("split") not in ("train", "test", "valid"):
            raise ExampleFormatError(f"{where}: split {rec.get('split')!r} not train/valid/test")
        history = rec.get("history")
        if not isinstance(history, list):
            raise ExampleFormatError(f"{where}: history must be a list, got {type(history)}")
        entries = []
        for i, h in enumerate(history):
            if (
                not isinstance(h, Mapping)
                or not isinstance(h.get("item_id"), str)
                or not isinstance(h.get("timestamp"), int)
            ):
                raise ExampleFormatError(
                    f"{where}: history[{i}] must be {{item_id: str, timestamp: int}}, got {h!r}"
                )
            entries.append(HistoryEntry(h["item_id"], h["timestamp"]))
        if any(a.timestamp > b.timestamp for a, b in zip(entries, entries[1:], strict=False)):
            raise ExampleFormatError(f"{where}: history is not in chronological order")
        selected = rec.get("selected_history")
        if selected is not None and not (
            isinstance(selected, list) and all(isinstance(s, str) for s in selected)
        ):
            raise ExampleFormatError(f"{where}: selected_history must be a list of item ids")
        return cls(
            example_id=rec["example_id"],
            source=rec["source"],
            domain=rec["domain"],
            user_id=rec["user_id"],
            query=rec["query"],
            target=rec["target"],
            label=rec["label"],
            split=rec["split"],
            history=entries,
            misspelled=bool(rec.get("misspelled", False)),
            selected_history=selected,
            extra=dict(rec.get("extra") or {}),
        )


def check_examples(examples: Iterable[Example], corpus: ItemCorpus, where: str) -> None:
    """Every target and history item exists in the corpus; example ids are unique."""
    seen = set()
    for ex in examples:
        if ex.example_id in seen:
            raise ExampleFormatError(f"{where}: duplicate example id {ex.example_id!r}")
        seen.add(ex.example_id)
        if ex.target not in corpus:
            raise ExampleFormatError(
                f"{where}: {ex.example_id}: target {ex.target!r} not in corpus"
            )
        for h in ex.history:
            if h.item_id not in corpus:
                raise ExampleFormatError(
                    f"{where}: {ex.example_id}: history item {h.item_id!r} not in corpus"
                )
        for s in ex.selected_history or ():
            if s not in {h.item_id for h in ex.history}:
                raise ExampleFormatError(
                    f"{where}: {ex.example_id}: selected item {s!r} is not in its history"
                )


def write_examples(path: str | Path, examples: Iterable[Example]) -> int:
    return write_jsonl(path, (ex.to_record() for ex in examples))


def read_examples(path: str | Path) -> list[Example]:
    path = Path(path)
    out = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ExampleFormatError(f"{path}:{lineno}: invalid JSON: {exc}") from None
            out.append(Example.from_record(rec, f"{path}:{lineno}"))
    return out


# --------------------------------------------------------------------------------- sources
Source = Callable[..., tuple[list[Example], ItemCorpus]]
EXAMPLE_SOURCES: Registry[Source] = Registry(
    "TTP example source", package="personalir.ttp.inputs", symbol="EXAMPLE_SOURCES"
)


def user_split(
    seed: int, domain: str, user_id: str, test_share: float, validation_share: float = 0.0
) -> str:
    """``test``, ``valid`` or ``train`` by a seeded hash of the user: the first
    ``test_share`` of the unit interval is test, the next ``validation_share`` validation, so
    a validation share moves training users only and leaves the test users as they were."""
    if test_share + validation_share >= 1:
        raise ValueError(
            f"test_share {test_share} + validation_share {validation_share} leave no training users"
        )
    u = (derive_seed(seed, "ttp_split", domain, user_id) % 1_000_000) / 1_000_000
    if u < test_share:
        return "test"
    return "valid" if u < test_share + validation_share else "train"


def _filled_details(details) -> list[tuple[str, str]]:
    """The details pairs whose value is not empty (a null value parses as "")."""
    return [(k, v) for k, v in details_pairs(details) if v != ""]


def corpus_from_tables(products_path: str | Path, meta_path: str | Path) -> ItemCorpus:
    """Items from the data stage: products.parquet (attributes) + meta.parquet (features)."""
    meta = {
        r["parent_asin"]: r
        for r in read_parquet_table(
            meta_path, columns=["parent_asin", "features", "details"]
        ).to_pylist()
    }
    items = {}
    for rec in read_parquet_table(
        products_path, columns=["parent_asin", "title", "main_category"]
    ).to_pylist():
        m = meta.get(rec["parent_asin"], {})
        items[rec["parent_asin"]] = Item(
            item_id=rec["parent_asin"],
            title=rec["title"] or "",
            main_category=rec["main_category"] or "",
            features=tuple(m.get("features") or ()),
            attributes=tuple(_filled_details(m.get("details"))),
        )
    return ItemCorpus(items)


@EXAMPLE_SOURCES.register("sample_world")
def sample_world_examples(
    *,
    search_log: str | Path,
    products: str | Path,
    meta: str | Path,
    domain: str,
    seed: int,
    test_share: float,
    validation_share: float = 0.0,
) -> tuple[list[Example], ItemCorpus]:
    corpus = corpus_from_tables(products, meta)
    examples = []
    with open(search_log, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            rec = json.loads(line)
            examples.append(
                Example.from_record(
                    {
                        "example_id": rec["search_id"],
                        "source": "sample_world",
                        "domain": domain,
                        "user_id": rec["user_id"],
                        "query": rec["query"],
                        "target": rec["target"],
                        "label": rec["label"],
                        "split": user_split(
                            seed, domain, rec["user_id"], test_share, validation_share
                        ),
                        "history": rec["history"],
                        "misspelled": rec["misspelled"],
                        "extra": {"clean_query": rec["clean_query"], **rec["provenance"]},
                    },
                    f"{search_log}:{lineno}",
                )
            )
    check_examples(examples, corpus, str(search_log))
    return examples, corpus


def _pwab_item(info: Mapping, where: str) -> Item:
    if not isinstance(info, Mapping) or not info.get("parent_asin"):
        raise ExampleFormatError(f"{where}: product_info without parent_asin")
    feats = info.get("features") or []
    if isinstance(feats, str):
        feats = [feats]
    return Item(
        item_id=str(info["parent_asin"]),
        title=str(info.get("title") or ""),
        main_category=str(info.get("main_category") or ""),
        features=tuple(str(f) for f in feats),
        attributes=tuple(
            ([("Brand", str(info["store"]))] if info.get("store") else [])
            + _filled_details(info.get("details"))
        ),
    )


@EXAMPLE_SOURCES.register("personalwab")
def personalwab_examples(
    *, data_dir: str | Path, domain: str = "PersonalWAB", **_: object
) -> tuple[list[Example], ItemCorpus]:
    data_dir = Path(data_dir)
    tasks_path = data_dir / "user_instructions.json"
    history_path = data_dir / "user_history.json"
    tasks = json.loads(tasks_path.read_text(encoding="utf-8"))
    histories = json.loads(history_path.read_text(encoding="utf-8"))
    if not isinstance(tasks, Mapping) or not isinstance(histories, Mapping):
        raise ExampleFormatError(
            f"{data_dir}: user_instructions.json must map split -> tasks and user_history.json "
            "user_id -> items"
        )
    items: dict[str, Item] = {}
    products_path = data_dir / "all_products.json"
    if products_path.exists():
        products = json.loads(products_path.read_text(encoding="utf-8"))
        infos = products.values() if isinstance(products, Mapping) else products
        for i, info in enumerate(infos):
            it = _pwab_item(info, f"{products_path}[{i}]")
            items[it.item_id] = it
    user_events: dict[str, list[tuple[int, str]]] = {}
    for uid, entries in histories.items():
        if not isinstance(entries, list):
            raise ExampleFormatError(f"{history_path}: history of {uid!r} is not a list")
        events = []
        for i, entry in enumerate(entries):
            where = f"{history_path}[{uid!r}][{i}]"
            if not isinstance(entry, Mapping) or "product_info" not in entry:
                raise ExampleFormatError(f"{where}: expected {{product_info, review}}")
            it = _pwab_item(entry["product_info"], where)
            items.setdefault(it.item_id, it)
            ts = (entry.get("review") or {}).get("timestamp")
            if not isinstance(ts, int):
                raise ExampleFormatError(f"{where}: review.timestamp must be an integer")
            events.append((ts, it.item_id))
        user_events[uid] = sorted(events)
    examples = []
    for split, split_tasks in tasks.items():
        name = {"train": "train", "test": "test", "valid": "valid", "dev": "valid"}.get(split)
        if name is None:
            raise ExampleFormatError(f"{tasks_path}: unknown split {split!r}")
        for i, task in enumerate(split_tasks):
            where = f"{tasks_path}[{split!r}][{i}]"
            if task.get("type") != "search":
                continue
            target = _pwab_item((task.get("target") or {}).get("product_info"), where)
            items.setdefault(target.item_id, target)
            uid, ts = task["user_id"], task["timestamp"]
            history = [
                {"item_id": iid, "timestamp": t} for t, iid in user_events.get(uid, []) if t < ts
            ]
            examples.append(
                Example.from_record(
                    {
                        "example_id": f"pwab-{split}-{i}",
                        "source": "personalwab",
                        "domain": domain,
                        "user_id": uid,
                        "query": task["task"],
                        "target": target.item_id,
                        "label": task.get("test_set") or task.get("label") or "General",
                        "split": name,
                        "history": history,
                    },
                    where,
                )
            )
    corpus = ItemCorpus(items)
    check_examples(examples, corpus, str(tasks_path))
    return examples, corpus


@EXAMPLE_SOURCES.register("pqb")
def pqb_examples(
    *,
    benchmark: str | Path,
    reviews: str | Path,
    products: str | Path,
    meta: str | Path,
    domain: str,
    **_: object,
) -> tuple[list[Example], ItemCorpus]:

    corpus = corpus_from_tables(products, meta)
    by_user: dict[str, list[tuple[int, str]]] = {}
    for rec in read_parquet_table(
        reviews, columns=["user_id", "parent_asin", "timestamp"]
    ).to_pylist():
        by_user.setdefault(rec["user_id"], []).append((rec["timestamp"], rec["parent_asin"]))
    examples = []
    for rec in read_benchmark(benchmark):
        events = sorted(by_user.get(rec["user_id"], []))
        history = [
            {"item_id": iid, "timestamp": ts}
            for ts, iid in events
            if iid != rec["product"] and iid in corpus
        ]
        examples.append(
            Example.from_record(
                {
                    "example_id": rec["query_id"],
                    "source": "pqb",
                    "domain": domain,
                    "user_id": rec["user_id"],
                    "query": rec["text"],
                    "target": rec["product"],
                    "label": rec["kind"],
                    "split": "test",
                    "history": history,
                    "misspelled": rec["kind"] == "writing_error" and rec["role"] == "error",
                    "extra": {"pair_id": rec["pair_id"], "role": rec["role"]},
                },
                str(benchmark),
            )
        )
    check_examples(examples, corpus, str(benchmark))
    return examples, corpus


def load_examples(source: str, **kwargs) -> tuple[list[Example], ItemCorpus]:
    return EXAMPLE_SOURCES.get(source)(**kwargs)
