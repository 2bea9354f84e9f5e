"""Constrained decoding of LM candidates: every core value exactly once, no contradicting value.

Unconstrained, the small instruction model almost never names all five core values exactly
once, so the lexical filter removes nearly all of its candidates (docs/queries.md). This module
makes the constraint hold by construction, through transformers' generation hook
(:class:`CoreValueProcessor` is a ``LogitsProcessor``: it sets the score of every token that
would break the constraint to ``-inf`` before temperature and top-p, so sampling draws from the
model's distribution restricted to the allowed tokens).

The automaton works where the filters work, on normalised words (:mod:`.terms`: lower case,
separators as spaces, ``[a-z0-9]+`` runs). Per sequence it tracks the words written so far,
the open (partial) word, and which words belong to a *forced span*: an occurrence of a core
value emitted as one of its token sequences (the value tokenised as given, with and without a
leading space), entered only at a word boundary and then completed token by token. The rules:

- **exactly once, any order**: a pending value may start wherever a word may start; once
  started it must be completed; a completed value is no longer pending;
- **nothing else names a watched value**: no word run outside a single forced span may spell
  a core value or a *forbidden* value (a catalogue value of one of the product's attribute
  keys that the contradiction filter would reject, :meth:`.terms.AttributeVocabulary.forbidden`).
  Words complete when a boundary follows, so an open word that would complete a watched run may
  only be continued (``red`` -> ``reds``), and a value is entered only if its words, with the
  words before it, complete no watched run;
- **EOS** only once every value has been written;
- **budget**: when the tokens left are no more than the longest tokenisations of the pending
  values plus one end token, only value tokens (and then EOS) are allowed.

Each row of a batch has its own state (rows of one product share a :class:`ValueConstraint`);
the processor reads the tokens appended since its last call from ``input_ids``, so it serves
both ``model.generate(logits_processor=[...])`` and :func:`.lm.sample_shared_prompt`.
Steps where no constrained option existed (a budget too small for the values, a dead end) fall
back to the unconstrained free-text rules and are counted in :meth:`CoreValueProcessor.report`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from transformers import LogitsProcessor

from personalir.queries.lm import end_token_ids
from personalir.queries.terms import normalised, term_key

WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_RUN = re.compile(r"[a-z0-9]+")
FREE = None  # span label of words the model wrote freely
MIXED = -1  # span label of a word glued across spans (always a violation)


@dataclass
class TokenTable:
    """What the automaton needs of a tokenizer.

    ``texts[t]`` is the normalised text token ``t`` appends to a sequence; ``never`` are
    tokens never generated (special and control tokens); ``ends`` are the end tokens;
    ``encode`` tokenises a string without special tokens. The indexes map a word to the tokens
    in which it ends inside the token (``close_first``: the token's first run, glued to the open
    word before it; ``inner``: a run that starts inside the token) or stays open at the token's
    end (``open_whole``: the whole token is one run; ``open_tail``: the last run, started inside).
    """

    texts: list[str]
    never: frozenset[int]
    ends: tuple[int, ...]
    encode: Callable[[str], list[int]]
    starts_word: torch.Tensor = field(init=False, repr=False)
    close_first: dict[str, list[int]] = field(init=False, repr=False)
    inner: dict[str, list[int]] = field(init=False, repr=False)
    open_whole: dict[str, list[int]] = field(init=False, repr=False)
    open_tail: dict[str, list[int]] = field(init=False, repr=False)

    def __post_init__(self):
        self.starts_word = torch.tensor([t[:1] in WORD_CHARS for t in self.texts], dtype=torch.bool)
        self.close_first, self.inner, self.open_whole, self.open_tail = {}, {}, {}, {}
        for tid, text in enumerate(self.texts):
            for m in _RUN.finditer(text):
                attached, closed = m.start() == 0, m.end() < len(text)
                index = (
                    (self.close_first if attached else self.inner)
                    if closed
                    else (self.open_whole if attached else self.open_tail)
                )
                index.setdefault(m.group(), []).append(tid)

    def __len__(self) -> int:
        return len(self.texts)

    @classmethod
    def from_tokenizer(cls, tokenizer) -> TokenTable:
        """Token texts decoded after an anchor token (so tokenizers that drop a leading space
        when decoding one token alone, such as SentencePiece ones, keep it)."""

        size = len(tokenizer)
        anchor = tokenizer("a", add_special_tokens=False)["input_ids"][0]
        kw = {"skip_special_tokens": False, "clean_up_tokenization_spaces": False}
        head = tokenizer.decode([anchor], **kw)
        pairs = tokenizer.batch_decode([[anchor, t] for t in range(size)], **kw)
        texts = [normalised(p[len(head) :] if p.startswith(head) else p) for p in pairs]
        ends = tuple(sorted(end_token_ids(tokenizer)))
        special = set(tokenizer.all_special_ids)
        special |= {i for i, tok in tokenizer.added_tokens_decoder.items() if tok.special}
        never = frozenset(i for i in special | {i for i, t in enumerate(texts) if not t})
        return cls(
            texts,
            never - set(ends),
            ends,
            lambda s: list(tokenizer(s, add_special_tokens=False)["input_ids"]),
        )


@dataclass(frozen=True)
class ValueConstraint:
    """One product's constraint: its core values (case as given), the token sequences that
    write each, and the watched word runs (core and forbidden values) by their last word."""

    values: tuple[str, ...]
    variants: tuple[tuple[tuple[tuple[int, ...], str], ...], ...]  # per value: (ids, text)
    forbidden: tuple[str, ...]
    watched: dict[str, tuple[tuple[str, ...], ...]]
    keep: int  # words of context the check needs (the longest watched run)
    longest: tuple[int, ...]  # per value: its longest token sequence (budget)
    inner_candidates: tuple[int, ...]  # tokens that can complete a watched word inside them


def build_constraint(
    table: TokenTable, values: Sequence[str], forbidden: Sequence[str] = ()
) -> ValueConstraint:
    """The constraint for ``values`` (each exactly once) and ``forbidden`` (never), with each
    value written as tokenised with and without a leading space.

    A tokenisation whose decoded words are not the value's words is not used; a value left
    with none raises ``ValueError`` naming it."""
    variants = []
    for value in values:
        key = term_key(value)
        if not key:
            raise ValueError(f"core value {value!r} has no words to write")
        seen: dict[tuple[int, ...], str] = {}
        for form in (value, " " + value):
            ids = tuple(table.encode(form))
            text = "".join(table.texts[t] for t in ids)
            if ids and tuple(_RUN.findall(text)) == key and not set(ids) & table.never:
                seen.setdefault(ids, text)
        if not seen:
            raise ValueError(f"core value {value!r}: no tokenisation decodes to its words {key}")
        variants.append(tuple(sorted(seen.items())))
    watched: dict[str, set[tuple[str, ...]]] = {}
    for run in [term_key(v) for v in values] + [term_key(v) for v in forbidden]:
        if run:
            watched.setdefault(run[-1], set()).add(run)
    inner = sorted({t for w in watched for t in table.inner.get(w, ())})
    return ValueConstraint(
        values=tuple(values),
        variants=tuple(variants),
        forbidden=tuple(forbidden),
        watched={w: tuple(sorted(r)) for w, r in sorted(watched.items())},
        keep=max(len(r) for rs in watched.values() for r in rs),
        longest=tuple(max(len(ids) for ids, _ in v) for v in variants),
        inner_candidates=tuple(inner),
    )


# A word state: (completed words as (word, span label) pairs, the last ``keep`` of them; the
# open word; its span label).
WordState = tuple[tuple[tuple[str, int | None], ...], str, int | None]
EMPTY: WordState = ((), "", FREE)


def _bad_ending(words, watched) -> bool:
    """Does a watched run end at the last completed word, outside a single forced span?"""
    for run in watched.get(words[-1][0], ()):
        m = len(run)
        if m > len(words) or any(w != r for (w, _), r in zip(words[-m:], run, strict=True)):
            continue
        labels = {lab for _, lab in words[-m:]}
        if len(labels) == 1 and FREE not in labels and MIXED not in labels:
            continue  # inside one forced value: the longest-first count gives it to that value
        return True
    return False


def advance(state: WordState, text: str, label, spec: ValueConstraint) -> tuple[WordState, bool]:
    """The word state after appending normalised ``text`` written with span ``label``, and
    whether the constraint still holds (no glued span, no watched run completed outside one)."""
    words, partial, plabel = state
    ok = True
    for c in text:
        if c in WORD_CHARS:
            if not partial:
                plabel = label
            elif plabel != label:
                ok, plabel = False, MIXED
            partial += c
        elif partial:
            words = (*words, (partial, plabel))[-spec.keep :]
            partial = ""
            if ok and _bad_ending(words, spec.watched):
                ok = False
    return (words, partial, plabel), ok


@dataclass
class RowState:
    """One sequence's automaton state."""

    spec: ValueConstraint
    pending: set[int]
    words: WordState = EMPTY
    value: tuple[list[tuple[int, tuple[int, ...]]], int] | None = None  # (candidates, position)
    episode: int = 0  # label of the current / last forced span
    n_tokens: int = 0
    ended: bool = False
    written: list[int] = field(default_factory=list)  # values in the order they were written
    budget_steps: int = 0  # steps where the budget allowed only value tokens (and EOS)
    fallback_steps: int = 0  # budget steps with no value token possible: free rules used
    dead_ends: int = 0
    violations: int = 0


class CoreValueProcessor(LogitsProcessor):
    """A ``LogitsProcessor`` that keeps each row inside its :class:`ValueConstraint`.

    ``constraints``: one per row, or one for every row. ``max_new_tokens``: the generation
    budget (for forcing). ``prompt_length``: width of the prompt in ``input_ids``; by default
    the width at the first call (``generate`` calls it first on the prompt alone).
    """

    def __init__(
        self,
        table: TokenTable,
        constraints: ValueConstraint | Sequence[ValueConstraint],
        max_new_tokens: int,
        prompt_length: int | None = None,
    ):
        self.table = table
        self.constraints = constraints
        self.max_new_tokens = int(max_new_tokens)
        self.prompt_length = prompt_length
        self.rows: list[RowState] | None = None
        self._seen = 0
        base = torch.ones(len(table), dtype=torch.bool)
        base[sorted(table.never | set(table.ends))] = False
        self._free = base
        self._ends = torch.tensor(table.ends, dtype=torch.long)
        self._end_set = set(table.ends)
        self.seconds = 0.0  # time spent in the hook (the automaton's cost)

    # ------------------------------------------------------------------ the hook
    def start(self, batch_size: int) -> None:
        specs = self.constraints
        if isinstance(specs, ValueConstraint):
            specs = [specs] * batch_size
        if len(specs) != batch_size:
            raise ValueError(f"{len(specs)} constraints for a batch of {batch_size} sequences")
        self.rows = [RowState(s, set(range(len(s.values)))) for s in specs]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        t0 = time.perf_counter()
        width = input_ids.shape[1]
        if self.rows is None:
            self.start(input_ids.shape[0])
            self._seen = width if self.prompt_length is None else self.prompt_length
        new = input_ids[:, self._seen : width].tolist()
        for row, toks in zip(self.rows, new, strict=True):
            for t in toks:
                self.step(row, int(t))
        self._seen = width
        mask = torch.stack([self.allowed(row) for row in self.rows])
        v = scores.shape[-1]
        if mask.shape[1] < v:
            mask = torch.cat([mask, mask.new_zeros((mask.shape[0], v - mask.shape[1]))], dim=1)
        out = scores.masked_fill(~mask[:, :v].to(scores.device), float("-inf"))
        self.seconds += time.perf_counter() - t0
        return out

    # ------------------------------------------------------------------ allowed tokens
    def allowed(self, row: RowState) -> torch.Tensor:
        """Boolean mask over the token table of what ``row`` may write next."""
        if row.ended:
            mask = torch.zeros(len(self.table), dtype=torch.bool)
            mask[self._ends] = True
            return mask
        if row.value is None:
            mask = self._free_mask(row, row.pending)
        else:
            cands, pos = row.value
            mask = torch.zeros(len(self.table), dtype=torch.bool)
            mask[sorted({ids[pos] for _, ids in cands if len(ids) > pos})] = True
            done = [v for v, ids in cands if len(ids) == pos]
            if done:  # the value is complete here: what may follow it is allowed too
                mask |= self._free_mask(row, row.pending - {done[0]})
        if not bool(mask.any()):
            row.dead_ends += 1
            mask[self._ends] = True
        return mask

    def entries(
        self, row: RowState, pending, only: int | None = None
    ) -> dict[int, list[tuple[int, tuple[int, ...]]]]:
        """First token -> the (value, token sequence) that may start here: the value starts a
        new word and its words, completed, end no watched run outside it."""
        state, out = row.words, {}
        for v in sorted(pending):
            for ids, text in row.spec.variants[v]:
                if only is not None and ids[0] != only:
                    continue
                if state[1] and text[:1] in WORD_CHARS:
                    continue  # it would be glued to the open word
                if advance(state, text + " ", row.episode + 1, row.spec)[1]:
                    out.setdefault(ids[0], []).append((v, ids))
        return out

    def _free_mask(self, row: RowState, pending) -> torch.Tensor:
        """Outside a value (or at its last token, with ``pending`` the values still to write)."""
        t, spec = self.table, row.spec
        state = row.words
        _, partial, plabel = state
        left = self.max_new_tokens - row.n_tokens
        entries = self.entries(row, pending)
        after_value = bool(partial) and plabel is not FREE
        stuck = bool(partial) and not after_value and not advance(state, " ", FREE, spec)[1]
        eos_ok = not pending and not stuck
        if left <= sum(spec.longest[v] for v in pending) + 1:  # budget: values, then EOS
            mask = torch.zeros(len(t), dtype=torch.bool)
            if entries:
                mask[sorted(entries)] = True
            if eos_ok:
                mask[self._ends] = True
            row.budget_steps += 1
            if bool(mask.any()):
                return mask
            row.fallback_steps += 1
        mask = self._free.clone()
        if after_value:
            mask &= ~t.starts_word  # a value is a whole word: a boundary must follow it
        elif stuck:
            mask &= t.starts_word  # the open word would complete a watched run: continue it
        # Tokens that complete a watched run, or leave one open (its word would have to be
        # stretched into another word, or the text would end on it): checked with a boundary
        # after them. What is not in these indexes completes or opens no watched last word.
        check = set(spec.inner_candidates)
        for w in spec.watched:
            check.update(t.open_tail.get(w, ()))
            if not after_value and w.startswith(partial):
                check.update(t.close_first.get(w[len(partial) :], ()))
                check.update(t.open_whole.get(w[len(partial) :], ()))
        for tok in sorted(check):
            if mask[tok] and not advance(state, t.texts[tok] + " ", FREE, spec)[1]:
                mask[tok] = False
        if entries:
            mask[sorted(entries)] = True
        if eos_ok:
            mask[self._ends] = True
        return mask

    # ------------------------------------------------------------------ state update
    def step(self, row: RowState, token: int) -> None:
        """Advance ``row`` by the token it wrote."""
        if row.ended:
            return
        row.n_tokens += 1
        if row.value is not None:
            cands, pos = row.value
            nxt = [(v, ids) for v, ids in cands if len(ids) > pos and ids[pos] == token]
            if nxt:
                row.words, ok = advance(row.words, self.table.texts[token], row.episode, row.spec)
                row.violations += not ok
                row.value = (nxt, pos + 1)
                return
            done = [v for v, ids in cands if len(ids) == pos]
            if done:
                row.pending.discard(done[0])
                row.written.append(done[0])
            else:
                row.violations += 1  # left a value unfinished
            row.value = None
        if token in self._end_set:
            row.ended = True
            row.violations += bool(row.pending)
            return
        start = self.entries(row, row.pending, only=token).get(token)
        if start:
            row.episode += 1
            row.value = (start, 1)
            label = row.episode
        else:
            label = FREE
        row.words, ok = advance(row.words, self.table.texts[token], label, row.spec)
        row.violations += not ok

    # ------------------------------------------------------------------ report
    def written(self, row: RowState) -> list[int]:
        """Values ``row`` has written completely (one at a terminal position counts)."""
        out = list(row.written)
        if row.value is not None:
            out += [v for v, ids in row.value[0] if len(ids) == row.value[1]][:1]
        return out

    def report(self) -> dict:
        rows = self.rows or []
        complete = [len(self.written(r)) == len(r.spec.values) for r in rows]
        return {
            "rows": len(rows),
            "rows_with_every_value": int(sum(complete)),
            "budget_steps": int(sum(r.budget_steps for r in rows)),
            "fallback_steps": int(sum(r.fallback_steps for r in rows)),
            "dead_ends": int(sum(r.dead_ends for r in rows)),
            "violations": int(sum(r.violations for r in rows)),
            "seconds": round(self.seconds, 3),
        }


def product_constraint(table: TokenTable, info, vocabulary, keys=None) -> ValueConstraint:
    """The constraint of one product (:class:`.filters.ProductInfo`): its core terms, and the
    values the contradiction filter (with its ``keys``) would reject in its queries."""
    banned = vocabulary.forbidden(info.keys, info.values, keys=keys, title=info.title)
    try:
        return build_constraint(table, info.core_terms, [" ".join(w) for _, w in banned])
    except ValueError as exc:
        raise ValueError(f"product {info.asin}: {exc} (queries.lm.constrained)") from None


def merge_reports(reports: Sequence[dict]) -> dict:
    """Sum of :meth:`CoreValueProcessor.report` over rounds and products."""
    keys = ("rows", "rows_with_every_value", "budget_steps", "fallback_steps", "dead_ends")
    out = {k: int(sum(r[k] for r in reports)) for k in (*keys, "violations")}
    out["seconds"] = round(sum(r["seconds"] for r in reports), 3)
    return out
