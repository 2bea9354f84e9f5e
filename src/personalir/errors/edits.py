"""Edits between each sentence and its correction: ERRANT types, mechanisms, syntactic context.

For every corrected sentence, ERRANT (3.0.2, with the project's spaCy pipeline passed in)
aligns (original, corrected) and types each edit (``R:SPELL``, ``M:DET``, ...). An edit whose
two sides are single words that differ beyond case is a *word edit*; it is
*character-level* when the written word is not in the detection lexicon (a misspelling) or is
a homophone of the correction, and then gets a mechanism from
:func:`personalir.errors.mechanisms.classify`. ERRANT sometimes merges neighbouring word
changes into one edit ("teh guitsr" -> "the guitar"); such an edit with as many words on both
sides is split into word pairs, each keeping the ERRANT type.

Context. Each edit records the POS and dependency label of its word and of that word's head,
read from the parse of the *corrected* sentence: a misspelt word gets unreliable tags, and the
injector later reads the same fields from a clean query, so both see the same kind of text.
(For an ERRANT ``U:`` edit, which has no corrected side, the original sentence's parse is used.)
A word is the regular-expression word of :data:`personalir.errors.lexicon.WORD` (``it's`` is
one word); its context comes from the spaCy token at its first character.

Besides the edits, every word of every corrected sentence that injection could touch (three
or more letters, or a homophone) is listed with its context (``words`` table): the profiles'
per-context error rates divide edit counts by these word counts.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import cache

import pyarrow as pa

from personalir.data.text import count_words
from personalir.errors.lexicon import HOMOPHONES, WORD, Lexicon, normalise_apostrophes
from personalir.errors.mechanisms import MECHANISM_NAMES, classify

log = logging.getLogger(__name__)

EDIT_SCHEMA = pa.schema(
    [
        ("sentence_id", pa.string()),
        ("user_id", pa.string()),
        ("position", pa.int32()),
        ("edit_index", pa.int32()),
        ("errant_type", pa.string()),
        ("operation", pa.string()),
        ("original", pa.string()),
        ("corrected", pa.string()),
        ("char_level", pa.bool_()),
        ("mechanism", pa.string()),
        ("written_word", pa.string()),
        ("correct_word", pa.string()),
        ("pos", pa.string()),
        ("dep", pa.string()),
        ("head_pos", pa.string()),
        ("head_dep", pa.string()),
    ]
)

WORD_SCHEMA = pa.schema(
    [
        ("user_id", pa.string()),
        ("position", pa.int32()),
        ("word", pa.string()),
        ("pos", pa.string()),
        ("dep", pa.string()),
        ("head_pos", pa.string()),
        ("head_dep", pa.string()),
    ]
)

CONTEXT_FIELDS = ("pos", "dep", "head_pos", "head_dep")


@cache
def load_pipeline(model: str):
    """The spaCy pipeline (NER excluded; the lemmatizer stays: ERRANT reads lemmas)."""
    import spacy

    return spacy.load(model, exclude=["ner"])


@cache
def load_annotator(model: str):
    import errant

    return errant.load("en", nlp=load_pipeline(model))


def injectable(word: str) -> bool:
    """Words injection may edit, and so the denominators of error rates."""
    return len(word) >= 3 or normalise_apostrophes(word.lower()) in HOMOPHONES


def word_contexts(doc, text: str) -> list[tuple[int, int, str, dict]]:
    """(start, end, word, context) of each word of ``text`` (parsed as ``doc``)."""
    starts = {}
    for tok in doc:
        for i in range(tok.idx, tok.idx + len(tok.text)):
            starts.setdefault(i, tok)
    out = []
    for m in WORD.finditer(text):
        tok = starts.get(m.start())
        if tok is None:
            continue
        out.append((m.start(), m.end(), m.group(0), token_context(tok)))
    return out


def token_context(tok) -> dict[str, str]:
    return {"pos": tok.pos_, "dep": tok.dep_, "head_pos": tok.head.pos_, "head_dep": tok.head.dep_}


@dataclass(frozen=True)
class WordEdit:
    written: str
    correct: str
    char_level: bool
    mechanism: str | None


def judge_word_edit(written: str, correct: str, lexicon: Lexicon) -> WordEdit | None:
    """A single-word change: is it character-level, and by which mechanism?"""
    if written.lower() == correct.lower():
        return None  # case only
    w, c = normalise_apostrophes(written.lower()), normalise_apostrophes(correct.lower())
    homophone = w in HOMOPHONES.get(c, ())
    char_level = homophone or w not in lexicon
    return WordEdit(w, c, char_level, classify(w, c) if char_level else None)


def extract_edits(
    rows: list[dict],
    corrected: list[str],
    *,
    model: str,
    lexicon: Lexicon | None = None,
    batch_size: int = 256,
) -> tuple[pa.Table, pa.Table, dict]:
    """ERRANT edits of (row["text"], corrected) pairs and the context of every word.

    ``rows`` carry sentence_id, user_id, position, text. Returns (edits, words, report).
    """
    lexicon = lexicon or Lexicon.detection()
    nlp = load_pipeline(model)
    annotator = load_annotator(model)
    originals = [r["text"] for r in rows]
    changed = [i for i, (o, c) in enumerate(zip(originals, corrected, strict=True)) if o != c]
    cor_docs = list(nlp.pipe(corrected, batch_size=batch_size))
    orig_docs = dict(
        zip(changed, nlp.pipe([originals[i] for i in changed], batch_size=batch_size), strict=True)
    )

    words = {name: [] for name in WORD_SCHEMA.names}
    for row, doc, text in zip(rows, cor_docs, corrected, strict=True):
        for _, _, word, ctx in word_contexts(doc, text):
            if not injectable(word):
                continue
            words["user_id"].append(row["user_id"])
            words["position"].append(row["position"])
            words["word"].append(normalise_apostrophes(word.lower()))
            for f in CONTEXT_FIELDS:
                words[f].append(ctx[f])

    edits = {name: [] for name in EDIT_SCHEMA.names}
    counts: Counter = Counter()

    def add(row, idx, etype, orig_s, cor_s, judged: WordEdit | None, ctx):
        edits["sentence_id"].append(row["sentence_id"])
        edits["user_id"].append(row["user_id"])
        edits["position"].append(row["position"])
        edits["edit_index"].append(idx)
        edits["errant_type"].append(etype)
        edits["operation"].append(etype.split(":", 1)[0])
        edits["original"].append(orig_s)
        edits["corrected"].append(cor_s)
        edits["char_level"].append(bool(judged and judged.char_level))
        edits["mechanism"].append(judged.mechanism if judged else None)
        edits["written_word"].append(judged.written if judged else None)
        edits["correct_word"].append(judged.correct if judged else None)
        for f in CONTEXT_FIELDS:
            edits[f].append(ctx.get(f, "") if ctx else "")

    for i in changed:
        row, o_doc, c_doc = rows[i], orig_docs[i], cor_docs[i]
        o_text, c_text = originals[i], corrected[i]
        o_words = word_contexts(o_doc, o_text)
        c_words = word_contexts(c_doc, c_text)
        errant_edits = []
        for e in annotator.annotate(o_doc, c_doc):
            counts["edits_errant"] += 1
            errant_edits.append((e, _span(e.o_toks), _span(e.c_toks)))
        absorbed: set[int] = set()
        n = 0
        for (os_, oe, ow, _), (cs, ce, cw, cctx) in word_pairs(o_words, c_words):
            types = set()
            for k, (e, ospan, cspan) in enumerate(errant_edits):
                if _overlaps(cspan, (cs, ce)) or (cspan is None and _overlaps(ospan, (os_, oe))):
                    types.add(e.type)
                    absorbed.add(k)
            types = sorted(types)
            if not types:
                counts["word_changes_without_errant_edit"] += 1
            judged = judge_word_edit(ow, cw, lexicon)
            add(row, n, "+".join(types) or "NA", ow, cw, judged, cctx)
            n += 1
        for k, (e, ospan, cspan) in enumerate(errant_edits):
            if k in absorbed:
                continue
            o_s = o_text[ospan[0] : ospan[1]] if ospan else ""
            c_s = c_text[cspan[0] : cspan[1]] if cspan else ""
            if e.c_toks:
                ctx = _context_at(c_words, cspan[0]) or token_context(e.c_toks[0])
            elif e.o_toks:
                ctx = _context_at(o_words, ospan[0]) or token_context(e.o_toks[0])
            else:
                ctx = None
            add(row, n, e.type, o_s, c_s, None, ctx)
            n += 1
        if n == 0:
            counts["changed_sentences_without_edits"] += 1

    edit_table = pa.table(edits, schema=EDIT_SCHEMA)
    word_table = pa.table(words, schema=WORD_SCHEMA)
    report = edit_report(rows, corrected, edit_table, word_table, counts)
    return edit_table, word_table, report


def _span(toks) -> tuple[int, int] | None:
    if len(toks) == 0:
        return None
    return toks[0].idx, toks[-1].idx + len(toks[-1].text)


def _overlaps(a: tuple[int, int] | None, b: tuple[int, int]) -> bool:
    return a is not None and a[0] < b[1] and b[0] < a[1]


def _context_at(words: list[tuple], char: int) -> dict | None:
    for s, e, _, ctx in words:
        if s <= char < e:
            return ctx
    return None


def word_pairs(o_words: list[tuple], c_words: list[tuple]) -> list[tuple[tuple, tuple]]:
    """(original word, corrected word) pairs where one word replaced one word.

    Words are aligned case-insensitively (difflib); inside a replaced block of as many words on
    both sides, differing words pair up in order. Blocks of unequal length ("alot" -> "a lot")
    are not single-word changes.
    """
    a = [normalise_apostrophes(w[2].lower()) for w in o_words]
    b = [normalise_apostrophes(w[2].lower()) for w in c_words]
    out = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:
            out.extend(
                (o_words[i], c_words[j])
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
                if a[i] != b[j]
            )
    return out


def edit_report(rows, corrected, edits: pa.Table, words: pa.Table, counts: Counter) -> dict:

    words_by_user: Counter = Counter()
    for r in rows:
        words_by_user[r["user_id"]] += count_words(r["text"])
    n_words = sum(words_by_user.values())
    char = [
        m
        for m, c in zip(
            edits.column("mechanism").to_pylist(),
            edits.column("char_level").to_pylist(),
            strict=True,
        )
        if c
    ]
    mech = Counter(char)
    types = Counter(edits.column("errant_type").to_pylist())
    n_edits = edits.num_rows
    edit_users = edits.column("user_id").to_pylist()
    char_flags = edits.column("char_level").to_pylist()
    char_by_user = {u for u, c in zip(edit_users, char_flags, strict=True) if c}
    return {
        "sentences": len(rows),
        "sentences_corrected": sum(
            1 for r, c in zip(rows, corrected, strict=True) if r["text"] != c
        ),
        "words": n_words,
        "injectable_words": words.num_rows,
        "edits": n_edits,
        "edits_per_1000_words": round(1000 * n_edits / n_words, 3) if n_words else None,
        "char_level_edits": len(char),
        "char_level_edits_per_1000_words": round(1000 * len(char) / n_words, 3)
        if n_words
        else None,
        "mechanisms": {m: mech.get(m, 0) for m in MECHANISM_NAMES},
        "mechanism_shares": {
            m: round(mech.get(m, 0) / len(char), 4) if char else None for m in MECHANISM_NAMES
        },
        "errant_types": dict(sorted(types.items(), key=lambda kv: (-kv[1], kv[0]))),
        "users": len(words_by_user),
        "users_with_char_level_edits": len(char_by_user),
        # Their profiles fall back to the domain's (errors/profiles.py).
        "users_without_char_level_edits": len(words_by_user) - len(char_by_user),
        **{k: counts[k] for k in sorted(counts)},
    }
