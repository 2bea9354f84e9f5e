"""Read a product's ``details`` into (key, value) pairs, whatever shape it arrived in.

Amazon Reviews 2023 meta records hold ``details`` as a JSON object; after the ingest step's
Parquet ``map<string, string>`` column and the round trips of pyarrow, pandas and JSON files it
reaches later stages in one of these shapes:

- a mapping ``{"Brand": "Kestrel", ...}``;
- a sequence of ``(key, value)`` pairs (``to_pylist()`` of a Parquet map column);
- a sequence of ``{"key": ..., "value": ...}`` objects (a map column seen through JSON);
- a JSON string holding any of the above; a string that is not valid JSON, and ``None`` (or a
  JSON ``null``), hold no details.

:func:`details_pairs` returns the pairs in input order, keys and values as strings. A null
value becomes ``""`` (in every shape), so callers that want only filled-in values drop the
empty strings; a missing or null key becomes ``"None"`` (``str`` of it), as before.
"""

from __future__ import annotations

import json
from collections.abc import Mapping


def details_pairs(details) -> list[tuple[str, str]]:
    """``details`` as (key, value) string pairs in input order; a null value becomes ``""``."""
    if details is None:
        return []
    if isinstance(details, str):
        try:
            details = json.loads(details)
        except json.JSONDecodeError:
            return []
        if details is None:
            return []
    if isinstance(details, Mapping):
        return [(str(k), "" if v is None else str(v)) for k, v in details.items()]
    pairs = []
    for entry in details:
        if isinstance(entry, Mapping):
            k, v = entry.get("key"), entry.get("value")
        else:
            k, v = entry
        pairs.append((str(k), "" if v is None else str(v)))
    return pairs
