"""Fixture-scale public benchmarks: one sample-world domain written in a public benchmark's
published format, so Table 5's path (loader, history selection, runs, measures) runs end to
end on the embedded default.

The sample world is synthetic; these files are neither PersonalWAB nor KuaiSearch, only
their shapes. The domain written is one the TTP models never trained on (the configuration
names it), so the table measures transfer to unseen users, items and queries.

``personalwab``  ``user_instructions.json`` (split -> search tasks ``{user_id, task, type,
                 timestamp, target: {product_info, review}}``), ``user_history.json``
                 (user -> ``[{product_info, review: {timestamp, rating, text}}]``, the
                 user's reviews) and ``all_products.json`` (parent_asin -> product), the
                 Amazon Reviews 2023 fields PersonalWAB's files carry
                 (:func:`personalir.ttp.inputs.data.personalwab_examples` reads them).
``kuaisearch``   ``items_lite/train.jsonl`` (item_id, item_title, brand/seller/category
                 ids and names) and ``recall_lite/{train,test}.jsonl`` sessions
                 (:mod:`personalir.ttp.inputs.kuaisearch` reads them). Each review is a past
                 purchase session whose query is the product's leaf category (KuaiSearch's
                 history comes from earlier sessions' clicks and purchases); each search of
                 the search log is a session that purchases its target; ``time_index`` is the
                 rank of the session's time among the user's sessions.

Searches are split by user (:func:`personalir.ttp.inputs.data.user_split`, seeded) into ``train``
and ``test``; only test searches are evaluated. Every record is written in input order, so
the files are byte-identical for the same inputs and seed.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path

from personalir.common.io import atomic_open
from personalir.ttp.inputs.data import user_split

PRODUCT_FIELDS = ("parent_asin", "title", "main_category", "features", "details", "store")
UNKNOWN = "UNKNOWN"


def _jsonl(path: str | Path) -> list[dict]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{lineno}: not JSON ({err.msg})") from None
            if not isinstance(rec, dict):
                raise ValueError(f"{path}:{lineno}: not a JSON object")
            out.append(rec)
    return out


def _write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path) as fh:
        json.dump(obj, fh, ensure_ascii=False, indent=1, sort_keys=True)
        fh.write("\n")


def _write_jsonl(path: Path, records) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path) as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")


def _inputs(reviews, meta, search_log):
    products = {}
    for rec in _jsonl(meta):
        products[str(rec["parent_asin"])] = {k: rec.get(k) for k in PRODUCT_FIELDS} | {
            "categories": list(rec.get("categories") or [])
        }
    searches = _jsonl(search_log)
    users = {s["user_id"] for s in searches}
    by_user: dict[str, list[dict]] = defaultdict(list)
    for r in _jsonl(reviews):
        if r["user_id"] in users and str(r["parent_asin"]) in products:
            by_user[r["user_id"]].append(r)
    missing = sorted({s["target"] for s in searches} - set(products))
    if missing:
        raise ValueError(f"{search_log}: targets without a product in {meta}: {missing[:3]}")
    return products, searches, by_user


def _split(seed: int, domain: str, user: str, test_share: float) -> str:
    return user_split(seed, domain, user, test_share)


def write_personalwab(
    *,
    reviews: str | Path,
    meta: str | Path,
    search_log: str | Path,
    out_dir: str | Path,
    domain: str,
    seed: int,
    test_share: float,
) -> dict:
    """PersonalWAB's three files from one sample-world domain (see the module doc)."""
    products, searches, by_user = _inputs(reviews, meta, search_log)
    product = {k: {f: v[f] for f in PRODUCT_FIELDS} for k, v in products.items()}
    history = {
        user: [
            {
                "product_info": product[str(r["parent_asin"])],
                "review": {
                    "timestamp": int(r["timestamp"]),
                    "rating": r.get("rating"),
                    "text": r.get("text") or "",
                },
            }
            for r in sorted(rs, key=lambda r: (int(r["timestamp"]), str(r["parent_asin"])))
        ]
        for user, rs in sorted(by_user.items())
    }
    tasks: dict[str, list[dict]] = {"train": [], "test": []}
    for s in searches:
        tasks[_split(seed, domain, s["user_id"], test_share)].append(
            {
                "user_id": s["user_id"],
                "task": s["query"],
                "type": "search",
                "timestamp": int(s["timestamp"]),
                "target": {"product_info": product[s["target"]], "review": {}},
            }
        )
    out = Path(out_dir)
    _write_json(out / "all_products.json", product)
    _write_json(out / "user_history.json", history)
    _write_json(out / "user_instructions.json", tasks)
    return {
        "format": "personalwab",
        "products": len(product),
        "users": len(history),
        "history_entries": sum(len(v) for v in history.values()),
        "tasks": {k: len(v) for k, v in tasks.items()},
    }


def _ids(names) -> dict[str, int]:
    """Name -> integer id (1, 2, ... in sorted order; ``UNKNOWN`` is 0, as KuaiSearch's)."""
    known = sorted({n for n in names if n and n != UNKNOWN})
    return {UNKNOWN: 0, **{n: i for i, n in enumerate(known, 1)}}


def _levels(p: Mapping) -> list[str]:
    """Three category levels: the product's category path after its main category, padded
    with ``UNKNOWN``."""
    path = [c for c in p["categories"] if c and c != p.get("main_category")]
    return [p.get("main_category") or UNKNOWN, *(path + [UNKNOWN, UNKNOWN])[:2]]


def write_kuaisearch(
    *,
    reviews: str | Path,
    meta: str | Path,
    search_log: str | Path,
    out_dir: str | Path,
    domain: str,
    seed: int,
    test_share: float,
) -> dict:
    """KuaiSearch's lite items and recall files from one sample-world domain (module doc)."""
    products, searches, by_user = _inputs(reviews, meta, search_log)
    brands = _ids(p.get("store") or UNKNOWN for p in products.values())
    levels = {k: _levels(p) for k, p in products.items()}
    cats = [_ids(lv[i] for lv in levels.values()) for i in range(3)]
    items = []
    for k, p in products.items():
        rec = {
            "item_id": k,
            "item_title": p.get("title") or "",
            "brand_id": brands[p.get("store") or UNKNOWN],
            "brand_name": p.get("store") or UNKNOWN,
            "seller_id": 0,
            "seller_name": UNKNOWN,
        }
        for i, name in enumerate(levels[k], 1):
            rec[f"category_level{i}_id"] = cats[i - 1][name]
            rec[f"category_level{i}_name"] = name
        items.append(rec)
    sessions: list[tuple[str, int, dict]] = []  # (user, time, session without its index)
    for user, rs in sorted(by_user.items()):
        for r in rs:
            item = str(r["parent_asin"])
            leaf = next((c for c in reversed(levels[item]) if c != UNKNOWN), UNKNOWN)
            sessions.append(
                (
                    user,
                    int(r["timestamp"]),
                    {
                        "impressed_item_ids": [item],
                        "clicked_item_ids": [],
                        "purchased_item_ids": [item],
                        "query": leaf,
                        "split": "train",
                    },
                )
            )
    for s in searches:
        sessions.append(
            (
                s["user_id"],
                int(s["timestamp"]),
                {
                    "impressed_item_ids": [s["target"]],
                    "clicked_item_ids": [s["target"]],
                    "purchased_item_ids": [s["target"]],
                    "query": s["query"],
                    "split": _split(seed, domain, s["user_id"], test_share),
                },
            )
        )
    order: dict[str, list[int]] = defaultdict(list)
    for user, t, _ in sessions:
        order[user].append(t)
    rank = {u: {t: i for i, t in enumerate(sorted(set(ts)), 1)} for u, ts in order.items()}
    files: dict[str, list[dict]] = {"train": [], "test": []}
    for n, (user, t, body) in enumerate(sessions, 1):
        files[body["split"]].append(
            {"user_id": user, "session_id": n, "time_index": rank[user][t], **body}
        )
    out = Path(out_dir)
    _write_jsonl(out / "items_lite" / "train.jsonl", items)
    for split, recs in files.items():
        _write_jsonl(out / "recall_lite" / f"{split}.jsonl", recs)
    return {
        "format": "kuaisearch",
        "items": len(items),
        "sessions": {k: len(v) for k, v in files.items()},
        "history_sessions": sum(len(rs) for rs in by_user.values()),
    }


FORMATS: dict[str, Callable[..., dict]] = {
    "personalwab": write_personalwab,
    "kuaisearch": write_kuaisearch,
}


def write_fixture(fmt: str, **kwargs) -> dict:
    """Write one public benchmark's files in format ``fmt`` (``personalwab``/``kuaisearch``)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown public format {fmt!r}; expected one of {sorted(FORMATS)}")
    return FORMATS[fmt](**kwargs)
