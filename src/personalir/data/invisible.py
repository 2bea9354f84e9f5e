"""Characters a text may hold that no reader sees: the zero-width ones and NUL.

Ingest refuses them in ids (two ids that look the same must be the same id) and counts, per
field, the records whose text holds one (the text is kept as the user wrote it)."""

from __future__ import annotations

import re
from collections import Counter

#: The zero-width characters (no width, no content).
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u180e"
#: NUL or a zero-width character, anywhere in a text.
INVISIBLE = re.compile(rf"[\x00{ZERO_WIDTH}]")


def invisible_counts(found: Counter[str], fields: tuple[str, ...]) -> dict[str, int]:
    """Records per field whose text holds an invisible character (0 for the others)."""
    return {f: found.get(f, 0) for f in fields}
