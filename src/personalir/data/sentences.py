"""User sentences: split reviews, order each user's history, select users.

Each user's reviews are ordered by (timestamp, source line); their text is split with the
PQB reference rule; sentences shorter than ``min_words`` are counted and set aside; users
with fewer than ``min_per_user`` usable sentences are excluded (and listed in the users
table with the reason); the first ``max_per_user`` usable sentences of each selected user
are kept, as in the paper.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from personalir.data.text import count_words, split_sentences


@dataclass(frozen=True)
class SentenceRules:
    min_per_user: int = 30
    max_per_user: int = 50
    min_words: int = 3

    @classmethod
    def from_config(cls, section: dict) -> SentenceRules:
        return cls(section["min_per_user"], section["max_per_user"], section["min_words"])


SENTENCE_SCHEMA = pa.schema(
    [
        ("sentence_id", pa.string()),
        ("user_id", pa.string()),
        ("position", pa.int32()),
        ("review_id", pa.string()),
        ("parent_asin", pa.string()),
        ("asin", pa.string()),
        ("timestamp", pa.int64()),
        ("rating", pa.float64()),
        ("text", pa.string()),
    ]
)

USER_SCHEMA = pa.schema(
    [
        ("user_id", pa.string()),
        ("n_reviews", pa.int32()),
        ("n_sentences", pa.int32()),
        ("n_usable_sentences", pa.int32()),
        ("n_kept_sentences", pa.int32()),
        ("selected", pa.bool_()),
        ("reason", pa.string()),
    ]
)

REVIEWER_SCHEMA = pa.schema(
    [
        ("parent_asin", pa.string()),
        ("user_id", pa.string()),
        ("timestamp", pa.int64()),
        ("rating", pa.float64()),
        ("selected_user", pa.bool_()),
    ]
)


SENTENCE_COUNTS = (
    "sentences_total",
    "sentences_usable",
    "sentences_too_short",
    "sentences_beyond_max_per_user",
    "sentences_of_excluded_users",
)


def build_user_sentences(reviews: pa.Table, rules: SentenceRules) -> dict:
    """Return tables ``sentences``, ``users``, ``reviewers`` and a count ``report``."""
    cols = [
        "review_id",
        "user_id",
        "parent_asin",
        "asin",
        "timestamp",
        "rating",
        "text",
        "source_line",
    ]
    order = pc.sort_indices(
        reviews,
        sort_keys=[
            ("user_id", "ascending"),
            ("timestamp", "ascending"),
            ("source_line", "ascending"),
        ],
    )
    ordered = reviews.select(cols).take(order).to_pylist()

    sent_rows = {name: [] for name in SENTENCE_SCHEMA.names}
    user_rows = {name: [] for name in USER_SCHEMA.names}
    counts: Counter = Counter()

    def flush(user_id: str, user_reviews: list[dict]) -> None:
        usable: list[tuple[dict, str]] = []
        n_total = 0
        for rev in user_reviews:
            for sentence in split_sentences(rev["text"]):
                n_total += 1
                if count_words(sentence) < rules.min_words:
                    counts["sentences_too_short"] += 1
                    continue
                usable.append((rev, sentence))
        counts["sentences_total"] += n_total
        counts["sentences_usable"] += len(usable)
        selected = len(usable) >= rules.min_per_user
        kept = usable[: rules.max_per_user] if selected else []
        if selected:
            counts["sentences_beyond_max_per_user"] += len(usable) - len(kept)
        else:
            counts["sentences_of_excluded_users"] += len(usable)
        for pos, (rev, sentence) in enumerate(kept):
            sent_rows["sentence_id"].append(f"{user_id}:{pos}")
            sent_rows["user_id"].append(user_id)
            sent_rows["position"].append(pos)
            sent_rows["review_id"].append(rev["review_id"])
            sent_rows["parent_asin"].append(rev["parent_asin"])
            sent_rows["asin"].append(rev["asin"])
            sent_rows["timestamp"].append(rev["timestamp"])
            sent_rows["rating"].append(rev["rating"])
            sent_rows["text"].append(sentence)
        user_rows["user_id"].append(user_id)
        user_rows["n_reviews"].append(len(user_reviews))
        user_rows["n_sentences"].append(n_total)
        user_rows["n_usable_sentences"].append(len(usable))
        user_rows["n_kept_sentences"].append(len(kept))
        user_rows["selected"].append(selected)
        user_rows["reason"].append(
            "" if selected else f"fewer than {rules.min_per_user} usable sentences"
        )

    current, bucket = None, []
    for rev in ordered:
        if rev["user_id"] != current:
            if current is not None:
                flush(current, bucket)
            current, bucket = rev["user_id"], []
        bucket.append(rev)
    if current is not None:
        flush(current, bucket)

    users = pa.table(user_rows, schema=USER_SCHEMA)
    selected_ids = {
        u for u, s in zip(user_rows["user_id"], user_rows["selected"], strict=True) if s
    }
    reviewers = _reviewers(ordered, selected_ids)
    n_users = users.num_rows
    report = {
        "reviews": len(ordered),
        "users": n_users,
        "users_selected": len(selected_ids),
        "users_excluded_too_few_sentences": n_users - len(selected_ids),
        "rules": {
            "min_per_user": rules.min_per_user,
            "max_per_user": rules.max_per_user,
            "min_words": rules.min_words,
        },
        # Every count, zero ones included, so reports of different data have the same keys.
        **{k: counts[k] for k in sorted(SENTENCE_COUNTS)},
        "sentences_kept": len(sent_rows["text"]),
    }
    # Every split sentence is accounted for exactly once.
    assert report["sentences_total"] == (
        counts["sentences_too_short"]
        + counts["sentences_of_excluded_users"]
        + counts["sentences_beyond_max_per_user"]
        + report["sentences_kept"]
    ), report
    return {
        "sentences": pa.table(sent_rows, schema=SENTENCE_SCHEMA),
        "users": users,
        "reviewers": reviewers,
        "report": report,
    }


def _reviewers(ordered: list[dict], selected: set[str]) -> pa.Table:
    rows = sorted(
        ((r["parent_asin"], r["user_id"], r["timestamp"], r["rating"]) for r in ordered),
        key=lambda t: (t[0], t[2], t[1]),
    )
    return pa.table(
        {
            "parent_asin": [r[0] for r in rows],
            "user_id": [r[1] for r in rows],
            "timestamp": [r[2] for r in rows],
            "rating": [r[3] for r in rows],
            "selected_user": [r[1] in selected for r in rows],
        },
        schema=REVIEWER_SCHEMA,
    )
