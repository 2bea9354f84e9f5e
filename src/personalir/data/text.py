"""Text cleaning and sentence splitting shared by the data stage and later stages."""

from __future__ import annotations

import html
import re

SENTENCE_BOUNDARY = re.compile(r"(?<=[.!?])\s+")
_TAG = re.compile(r"<\s*br\s*/?\s*>|<\s*/?\s*(p|div|li|ul|ol|span|b|i|strong|em)\b[^>]*>", re.I)
_ANY_TAG = re.compile(r"<[^>]{1,200}>")
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+", re.UNICODE)


def clean_text(text: str) -> str:
    """Unescape HTML entities, turn markup into spaces and collapse whitespace."""
    text = html.unescape(text)
    text = _TAG.sub(" ", text)
    text = _ANY_TAG.sub(" ", text)
    return _SPACE.sub(" ", text).strip()


def split_sentences(text: str) -> list[str]:
    """Split on whitespace after `.`, `!` or `?` (the PQB reference rule); drop empty pieces."""
    cleaned = clean_text(text)
    if not cleaned:
        return []
    return [s.strip() for s in SENTENCE_BOUNDARY.split(cleaned) if s.strip()]


def count_words(text: str) -> int:
    return len(_WORD.findall(text))
