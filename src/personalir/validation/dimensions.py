"""The four judged dimensions of PQB's validation (its section 6), one prompt file each.

Every dimension lives in ``prompts/<name>.yaml``: its version, scale (``ordinal`` labels are
ordered low to high; ``nominal`` ones are not), the labels, the definition and level texts that
both the LLM judge and the human annotators read, and the judge's system and user prompts
(Jinja2 templates over one item). The judge answers a strict JSON object with one key
(``answer_key``); :func:`parse_answer` turns the answer text into a label or raises
:class:`AnswerError` saying what is wrong with it.

Dimensions are a registry (:data:`DIMENSIONS`, keyed by name; the config's
``validation.judge.dimensions`` takes its names): a new dimension is a new prompt file, listed
in :data:`DIMENSION_FILES`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import yaml

from personalir.common.registry import Registry

PROMPT_DIR = Path(__file__).with_name("prompts")
DIMENSION_FILES = ("naturalness", "syntactic_quality", "attribution", "error_consistency")
QUERY_KINDS = ("syntactic", "writing_error")

# Words of a refusal: an answer that declines the task is reported as refused, not as malformed.
_REFUSAL_MARKERS = ("i cannot", "i can't", "i'm sorry", "i am sorry", "as an ai", "i won't")


class AnswerError(ValueError):
    """A judge answer that is not a valid label; ``reason`` is one of ``not_json``,
    ``not_object``, ``missing_key``, ``bad_label``, ``extra_keys``, ``refusal``, ``empty``."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Dimension:
    name: str
    version: int
    title: str
    scale: str  # "ordinal" | "nominal"
    applies_to: tuple[str, ...]
    labels: tuple[str, ...]
    answer_key: str
    definition: str
    levels: dict
    system: str
    user: str
    source: str  # the prompt file

    @property
    def prompt_version(self) -> str:
        """``<name>.v<version>+<sha256 of the file's text, 12 hex>``: a changed file is a new
        version even when its ``version`` field was not bumped."""
        digest = hashlib.sha256(Path(self.source).read_bytes()).hexdigest()[:12]
        return f"{self.name}.v{self.version}+{digest}"

    def label_value(self, label: str):
        """The JSON value of a label in the answer (ratings are integers, others strings)."""
        return int(label) if self._integer_labels else label

    @cached_property
    def _integer_labels(self) -> bool:
        return all(label.isdigit() for label in self.labels)

    def schema(self) -> dict:
        """JSON schema of a valid answer: exactly one key, one of the labels."""
        values = [self.label_value(label) for label in self.labels]
        prop = {"type": "integer" if self._integer_labels else "string", "enum": values}
        return {
            "type": "object",
            "properties": {self.answer_key: prop},
            "required": [self.answer_key],
            "additionalProperties": False,
        }

    def response_format(self) -> dict:
        """OpenAI's structured-output request for this dimension's answer."""
        return {
            "type": "json_schema",
            "json_schema": {"name": self.name, "schema": self.schema(), "strict": True},
        }

    def messages(self, item: dict) -> list[dict]:
        """Chat messages for one item (a dict with the fields the template reads)."""
        from jinja2 import Environment, StrictUndefined

        # Renders a plain-text chat prompt, not HTML: escaping would corrupt it.
        env = Environment(undefined=StrictUndefined, keep_trailing_newline=False)  # nosec B701
        user = env.from_string(self.user).render(
            item=item, definition=self.definition, levels=self.levels
        )
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]

    def ordinal_index(self, label: str) -> int:
        """Position of a label on the scale (0 = lowest); for nominal scales the label's index."""
        return self.labels.index(label)


def load_dimension(path: str | Path) -> Dimension:
    path = Path(path)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    required = (
        "name",
        "version",
        "title",
        "scale",
        "applies_to",
        "labels",
        "answer_key",
        "definition",
        "levels",
        "system",
        "user",
    )
    missing = [k for k in required if k not in data]
    if missing:
        raise ValueError(f"{path}: prompt file lacks {', '.join(missing)}")
    if data["scale"] not in ("ordinal", "nominal"):
        raise ValueError(f"{path}: scale must be ordinal or nominal, not {data['scale']!r}")
    labels = tuple(str(label) for label in data["labels"])
    if set(map(str, data["levels"])) != set(labels):
        raise ValueError(f"{path}: levels {sorted(map(str, data['levels']))} != labels")
    unknown = set(data["applies_to"]) - set(QUERY_KINDS)
    if unknown:
        raise ValueError(f"{path}: applies_to names unknown query kinds {sorted(unknown)}")
    return Dimension(
        name=data["name"],
        version=int(data["version"]),
        title=data["title"],
        scale=data["scale"],
        applies_to=tuple(data["applies_to"]),
        labels=labels,
        answer_key=data["answer_key"],
        definition=" ".join(str(data["definition"]).split()),
        levels={str(k): " ".join(str(v).split()) for k, v in data["levels"].items()},
        system=" ".join(str(data["system"]).split()),
        user=data["user"],
        source=str(path),
    )


DIMENSIONS: Registry[Dimension] = Registry("judged dimension")
for _name in DIMENSION_FILES:
    DIMENSIONS.register(_name)(load_dimension(PROMPT_DIR / f"{_name}.yaml"))


def dimensions_for(kind: str, names=None) -> list[Dimension]:
    """The dimensions judged for a query of ``kind`` (optionally restricted to ``names``)."""
    chosen = [DIMENSIONS.get(n) for n in (DIMENSION_FILES if names is None else names)]
    return [d for d in chosen if kind in d.applies_to]


def parse_answer(dim: Dimension, text: str | None) -> str:
    """The label in a judge's answer, or :class:`AnswerError` naming what is wrong.

    Accepts exactly one JSON object with the dimension's key; surrounding whitespace and a
    Markdown code fence are tolerated (chat models add them), nothing else is.
    """
    if text is None or not text.strip():
        raise AnswerError("empty", f"{dim.name}: empty answer")
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").strip()
        if body.lower().startswith("json"):
            body = body[4:].strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        if any(m in body.lower() for m in _REFUSAL_MARKERS):
            raise AnswerError("refusal", f"{dim.name}: the judge declined: {body[:80]!r}") from None
        raise AnswerError(
            "not_json", f"{dim.name}: not JSON ({exc.msg} at char {exc.pos}): {body[:80]!r}"
        ) from None
    if not isinstance(value, dict):
        raise AnswerError(
            "not_object", f"{dim.name}: expected a JSON object, got {type(value).__name__}"
        )
    if dim.answer_key not in value:
        raise AnswerError(
            "missing_key",
            f"{dim.name}: answer lacks key {dim.answer_key!r} (keys: {sorted(value)})",
        )
    extra = sorted(set(value) - {dim.answer_key})
    if extra:
        raise AnswerError("extra_keys", f"{dim.name}: unexpected keys {extra}")
    raw = value[dim.answer_key]
    label = str(raw) if not isinstance(raw, bool) else None
    if isinstance(raw, float) and raw.is_integer():
        label = str(int(raw))
    if label not in dim.labels or (dim._integer_labels and isinstance(raw, str)):
        allowed = ", ".join(dim.labels)
        raise AnswerError(
            "bad_label", f"{dim.name}: {dim.answer_key}={raw!r} is not one of {allowed}"
        )
    return label
