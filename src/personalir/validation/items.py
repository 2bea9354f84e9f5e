"""Validation items: PQB's query pairs as blinded questions for the judge and the annotators.

An item is one pair of the benchmark. A **syntactic** pair (two users' wordings of one intent)
becomes a question with both queries and a few history sentences of each user; which query is
"Query 1" and which user is "shopper A" are two seeded coin flips, recorded in the hidden key,
so the answer "A" is right as often as "B". Query 1 is also the query rated for naturalness and
syntactic quality. A **writing-error** pair becomes the clean and the error query with the
user's own historical errors (the errors stage's GEC + ERRANT edits); the error query is the
one rated for naturalness and syntactic quality.

Items carry nothing about how a query was made (no backend, no user id, no judge output): that
lives in the key (``key.jsonl``), which the annotation exports never read. Item ids are hashes
of the pair id, so they are stable across reruns and configurations.

:func:`stratified_sample` draws the human-evaluation sample: strata domain x query kind,
sizes proportional to the strata (largest remainder), pairs drawn with a seed per stratum.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict

import numpy as np

from personalir.validation.dimensions import QUERY_KINDS, dimensions_for


def item_id(pair_id: str) -> str:
    return "it-" + hashlib.sha256(pair_id.encode()).hexdigest()[:12]


def _seed(base: int, *names) -> int:
    digest = hashlib.sha256("|".join([str(base), *map(str, names)]).encode()).digest()
    return int.from_bytes(digest[:8], "little")


def pairs_of(rows) -> list[dict]:
    """Benchmark rows (``benchmark.jsonl`` dicts) grouped into pairs, in file order."""
    by_pair: dict[str, dict] = {}
    for row in rows:
        pair = by_pair.setdefault(
            row["pair_id"],
            {"pair_id": row["pair_id"], "domain": row["domain"], "kind": row["kind"], "rows": {}},
        )
        if row["role"] in pair["rows"]:
            raise ValueError(f"pair {row['pair_id']} has two rows of role {row['role']!r}")
        pair["rows"][row["role"]] = row
    expected = {"syntactic": {"a", "b"}, "writing_error": {"clean", "error"}}
    for pair in by_pair.values():
        if pair["kind"] not in expected:
            raise ValueError(f"pair {pair['pair_id']}: unknown kind {pair['kind']!r}")
        if set(pair["rows"]) != expected[pair["kind"]]:
            raise ValueError(
                f"pair {pair['pair_id']}: roles {sorted(pair['rows'])}, expected "
                f"{sorted(expected[pair['kind']])}"
            )
    return list(by_pair.values())


def allocate(sizes: dict, total: int) -> dict:
    """Proportional allocation of ``total`` over strata of ``sizes`` (largest remainder,
    ties by stratum order); never more than a stratum holds."""
    population = sum(sizes.values())
    if population == 0:
        return {k: 0 for k in sizes}
    total = min(total, population)
    quotas = {k: total * n / population for k, n in sizes.items()}
    alloc = {k: min(int(q), sizes[k]) for k, q in quotas.items()}
    order = sorted(sizes, key=lambda k: (-(quotas[k] - int(quotas[k])), list(sizes).index(k)))
    while sum(alloc.values()) < total:
        progressed = False
        for k in order:
            if sum(alloc.values()) >= total:
                break
            if alloc[k] < sizes[k]:
                alloc[k] += 1
                progressed = True
        if not progressed:
            break
    return alloc


def stratified_sample(pairs: list[dict], size: int, seed: int, domains) -> tuple[set, list]:
    """Pair ids of the human sample and a per-stratum table (available, allocated)."""
    strata: dict[tuple, list] = defaultdict(list)
    for pair in pairs:
        strata[(pair["domain"], pair["kind"])].append(pair["pair_id"])
    keys = [(d, k) for d in domains for k in QUERY_KINDS]
    sizes = {key: len(strata.get(key, [])) for key in keys}
    alloc = allocate(sizes, size)
    chosen: set = set()
    table = []
    for key in keys:
        ids = sorted(strata.get(key, []))
        rng = np.random.default_rng(_seed(seed, "human-sample", *key))
        picked = rng.choice(len(ids), size=alloc[key], replace=False) if alloc[key] else []
        chosen.update(ids[i] for i in picked)
        table.append({"domain": key[0], "kind": key[1], "pairs": sizes[key], "sampled": alloc[key]})
    return chosen, table


def user_errors(edits) -> dict[str, list[str]]:
    """Per user, their historical errors as ``written -> corrected (mechanism)`` strings, in
    sentence order (edits: the errors stage's ``edits.parquet`` rows)."""
    out: dict[str, list[str]] = defaultdict(list)
    frame = edits.sort_values(["user_id", "position", "edit_index"], kind="stable")
    for row in frame.itertuples(index=False):
        written = row.original if row.original else "(nothing)"
        corrected = row.corrected if row.corrected else "(nothing)"
        out[row.user_id].append(f"{written} -> {corrected} ({row.mechanism})")
    return out


def user_sentences(sentences) -> dict[str, list[str]]:
    """Per user, their review sentences in position order."""
    out: dict[str, list[str]] = defaultdict(list)
    frame = sentences.sort_values(["user_id", "position"], kind="stable")
    for row in frame.itertuples(index=False):
        out[row.user_id].append(row.text)
    return out


def build_items(
    pairs,
    sentences,
    errors,
    *,
    human_sample: set,
    include_all: bool,
    history_sentences: int,
    max_user_errors: int,
    seed: int,
    dimensions=None,
):
    """``(items, key)``: blinded items and their hidden key, in a seeded random order.

    ``sentences`` / ``errors``: domain -> user id -> list of strings (:func:`user_sentences`,
    :func:`user_errors` of each domain's files; a user id names one user within a domain).
    With ``include_all`` every pair becomes an item (the judge rates every query); otherwise
    only the human sample does.
    """
    items, key = [], []
    for pair in pairs:
        in_sample = pair["pair_id"] in human_sample
        if not (include_all or in_sample):
            continue
        iid = item_id(pair["pair_id"])
        rng = np.random.default_rng(_seed(seed, "item", pair["pair_id"]))
        dims = [d.name for d in dimensions_for(pair["kind"], dimensions)]
        item = {"item_id": iid, "domain": pair["domain"], "kind": pair["kind"], "dimensions": dims}
        truth = {
            "item_id": iid,
            "pair_id": pair["pair_id"],
            "domain": pair["domain"],
            "kind": pair["kind"],
            "human_sample": in_sample,
        }
        if pair["kind"] == "syntactic":
            rows = pair["rows"]
            first, second = ("a", "b") if rng.random() < 0.5 else ("b", "a")
            author_1, author_2 = rows[first]["user_id"], rows[second]["user_id"]
            a_is_author_1 = rng.random() < 0.5
            user_a, user_b = (author_1, author_2) if a_is_author_1 else (author_2, author_1)

            def shown(user, salt, pair_id=pair["pair_id"], domain=pair["domain"]):
                pool = sentences.get(domain, {}).get(user, [])
                if len(pool) <= history_sentences:
                    return list(pool)
                pick = np.random.default_rng(_seed(seed, "history", pair_id, salt))
                idx = sorted(pick.choice(len(pool), size=history_sentences, replace=False))
                return [pool[i] for i in idx]

            item.update(
                query=rows[first]["text"],
                query_1=rows[first]["text"],
                query_2=rows[second]["text"],
                user_a_sentences=shown(user_a, "A"),
                user_b_sentences=shown(user_b, "B"),
            )
            truth.update(
                query_ids=[rows[first]["query_id"], rows[second]["query_id"]],
                user_a=user_a,
                user_b=user_b,
                attribution_truth="A" if a_is_author_1 else "B",
                backend=(rows[first].get("provenance") or {}).get("backend"),
            )
        else:
            clean, error = pair["rows"]["clean"], pair["rows"]["error"]
            own = errors.get(pair["domain"], {}).get(error["user_id"], [])
            item.update(
                query=error["text"],
                clean_query=clean["text"],
                error_query=error["text"],
                user_errors=own[:max_user_errors],
            )
            truth.update(
                query_ids=[clean["query_id"], error["query_id"]],
                user=error["user_id"],
                history_errors=len(own),
                applied_edits=len((error.get("provenance") or {}).get("edits") or []),
            )
        items.append(item)
        key.append(truth)
    order = np.random.default_rng(_seed(seed, "order")).permutation(len(items))
    for position, index in enumerate(order):
        items[index]["order"] = int(position)
    ranked = sorted(range(len(items)), key=lambda i: items[i]["order"])
    return [items[i] for i in ranked], [key[i] for i in ranked]
