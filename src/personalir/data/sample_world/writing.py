"""Writing the sample world's reviews: sentences from construction templates, then errors.

:class:`SentenceWriter` fills the construction templates with a product's and a user's slot
values; :class:`ErrorInjector` corrupts tokens of each sentence at the user's planted rate,
mechanism mixture and POS preferences; the small helpers choose a review's rating, polarity
and title. All draws come from the streams
:func:`~personalir.data.sample_world.world.build_world` hands them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from personalir.data.sample_world.constructions import (
    BASE_POS,
    CONSTRUCTIONS,
    PLAIN_SLOTS,
    POLAR_SLOTS,
    PROPER_NOUNS,
    REVIEW_TITLES,
    with_aliases,
)
from personalir.data.sample_world.domains import DomainSpec
from personalir.data.sample_world.mechanisms import (
    HOMOPHONES,
    MECHANISM_NAMES,
    MECHANISMS,
    eligible,
)
from personalir.data.sample_world.model import (
    WORD,
    Draw,
    GeneratorParams,
    Product,
    User,
    cumulative,
)

_COUNTED_WORD = re.compile(r"\w+")
_SLOT = re.compile(r"\{(\w+)\}")
_ARTICLE = re.compile(r"\b([Aa]) (?=[AEIOUaeiou])(?!(?:[Uu]se|[Uu]ni|[Ee]u|[Oo]ne))")


@dataclass
class SentenceWriter:
    """Renders review sentences for a product and a user from the construction templates."""

    spec: DomainSpec
    draw: Draw
    # (construction id, polarity, has color, has material) -> usable templates
    table: dict = field(default_factory=dict)

    def __post_init__(self):
        for c in CONSTRUCTIONS:
            for pol in ("pos", "neg"):
                for has_color in (False, True):
                    for has_material in (False, True):
                        usable = tuple(
                            t
                            for t in c.templates(pol)
                            if (has_color or "{color}" not in t)
                            and (has_material or "{material}" not in t)
                        )
                        if not usable:
                            raise ValueError(f"construction {c.id} has no generic template")
                        self.table[c.id, pol, has_color, has_material] = usable
        self.types = {t.key: t for t in self.spec.types}
        # Product types whose reviews need other words in some slots (a game is not "sturdy").
        self.overrides = {t.key: with_aliases(dict(t.slots)) for t in self.spec.types}
        for t in self.spec.types:
            unknown = [s for s in self.overrides[t.key] if s not in POLAR_SLOTS | PLAIN_SLOTS]
            if unknown:
                raise ValueError(
                    f"{self.spec.name}: product type {t.key!r} sets slots {unknown}, which no "
                    f"construction fills; the slots are {sorted(POLAR_SLOTS | PLAIN_SLOTS)}"
                )

    def templates(self, cid: str, polarity: str, product: Product) -> tuple[str, ...]:
        return self.table[cid, polarity, product.color is not None, product.material is not None]

    def sentence(self, template: str, polarity: str, product: Product, user: User) -> str:
        return _finish(self.fill(template, polarity, product, user))

    def fill(self, template: str, polarity: str, product: Product, user: User) -> str:
        t = self.types[product.product_type]
        draw, spec = self.draw, self.spec
        chosen: dict[str, str] = {}
        overrides = self.overrides[product.product_type]

        def slot(m: re.Match) -> str:
            name = m.group(1)
            if name in chosen:
                return chosen[name]
            if name in overrides or name in POLAR_SLOTS or name in PLAIN_SLOTS:
                options = overrides.get(name) or POLAR_SLOTS.get(name) or PLAIN_SLOTS[name]
                if isinstance(options, dict):
                    options = options[polarity]
                value = draw.pick(options)
                for _ in range(3):  # "so sturdy and so sturdy" reads like a bug
                    if value not in chosen.values():
                        break
                    value = draw.pick(options)
            elif name == "noun":
                value = product.noun
            elif name == "brand":
                value = product.brand
            elif name == "other_brand":
                value = draw.pick(spec.brands)
                if value == product.brand:
                    value = draw.pick(spec.brands)
            elif name == "color":
                value = (product.color or "").lower()
            elif name == "material":
                value = (product.material or "").lower()
            elif name == "style":
                style = product.style.lower() if spec.style_lowercase else product.style
                value = spec.style_phrase.format(style=style)
            elif name in ("part", "part2"):
                value = draw.pick(t.parts)
                other = chosen.get("part2" if name == "part" else "part")
                if other is not None and value == other:
                    value = t.parts[(t.parts.index(value) + 1) % len(t.parts)]
            elif name == "use":
                value = draw.pick(t.uses)
            elif name == "purpose":
                value = draw.pick(t.purposes)
            elif name == "recipient":
                value = user.recipient
            elif name == "activity":
                value = draw.pick(spec.activities)
            elif name == "place":
                value = draw.pick(spec.places)
            elif name == "person":
                value = draw.pick(spec.persons)
            elif name == "visitor":
                value = draw.pick(spec.visitors)
            else:
                raise KeyError(f"unknown slot {name!r} in {template!r}")
            chosen[name] = value
            return value

        text = _SLOT.sub(slot, template)
        if "{" in text:  # slot values may themselves hold slots ("my {recipient} ...")
            text = _SLOT.sub(slot, text)
        return text


def _finish(text: str) -> str:
    text = _ARTICLE.sub(lambda m: m.group(1) + "n ", text)
    return text[:1].upper() + text[1:]


def is_counted(sentence: str, params: GeneratorParams) -> bool:
    return len(_COUNTED_WORD.findall(sentence)) >= params.min_counted_words


# ------------------------------------------------------------------------ error injection
class ErrorInjector:
    def __init__(self, spec: DomainSpec, draw: Draw, params: GeneratorParams):
        self.draw = draw
        self.params = params
        self.lexicon, self.proper = _domain_lexicon(spec)
        self.dictionary = set(self.lexicon) | set(HOMOPHONES)
        self._info: dict[str, tuple[bool, bool, str, bool]] = {}
        self._mech_cum: dict[str, list[float]] = {}

    def pos(self, word: str) -> str:
        low = word.lower()
        if word[:1].isupper() and low in self.proper:
            return "PROPN"
        found = self.lexicon.get(low)
        if found:
            return found
        if low.endswith("ly"):
            return "ADV"
        if low.endswith(("ing", "ed")):
            return "VERB"
        return "NOUN"

    def info(self, word: str) -> tuple[bool, bool, str, bool]:
        """(char mechanisms apply, homophone applies, POS, long word), cached per word."""
        got = self._info.get(word)
        if got is None:
            got = (
                eligible("keyboard", word),
                eligible("homophone", word),
                self.pos(word),
                len(word) >= self.params.long_word_len,
            )
            self._info[word] = got
        return got

    def inject(self, sentence: str, user: User, pending: list[str]):
        """Corrupt tokens of one sentence; return the new sentence and (offset, token) edits."""
        prof = user.error_profile
        if prof.error_free:
            return sentence, []
        draw, params = self.draw, self.params
        tokens = [(m.start(), m.group()) for m in WORD.finditer(sentence)]
        infos = [self.info(w) for _, w in tokens]
        n_eligible = sum(1 for char_ok, homo_ok, _, _ in infos if char_ok or homo_ok)
        mech_cum = self._mech_cum.get(user.user_id)
        if mech_cum is None:
            mech_cum = cumulative(prof.mechanism_probs[m] for m in MECHANISM_NAMES)
            self._mech_cum[user.user_id] = mech_cum
        for _ in range(draw.poisson(prof.rate * n_eligible)):
            pending.append(MECHANISM_NAMES[draw.weighted(mech_cum)])
        if not pending:
            return sentence, []
        changes: dict[int, tuple[str, str, str]] = {}
        waiting = []
        for mech in pending:
            if len(changes) >= params.max_errors_per_sentence:
                waiting.append(mech)
                continue
            slot = 1 if mech == "homophone" else 0
            cands = [i for i, inf in enumerate(infos) if inf[slot] and i not in changes]
            if not cands:
                waiting.append(mech)
                continue
            cum = cumulative(
                prof.pos_weights[infos[i][2]] * (prof.long_word_factor if infos[i][3] else 1.0)
                + 1e-9
                for i in cands
            )
            i = cands[draw.weighted(cum)]
            word = tokens[i][1]
            for _ in range(4):
                out = MECHANISMS.get(mech)(word, draw)
                if (
                    out
                    and out.lower() != word.lower()
                    and (mech == "homophone" or out.lower() not in self.dictionary)
                ):
                    changes[i] = (out, mech, infos[i][2])
                    break
            else:
                waiting.append(mech)
        pending[:] = waiting[-4:]
        if not changes:
            return sentence, []
        pieces, edits, last = [], [], 0
        length = 0
        for i, (start, word) in enumerate(tokens):
            if i not in changes:
                continue
            out, mech, pos = changes[i]
            head = sentence[last:start]
            pieces.append(head)
            length += len(head)
            edits.append((length, i, word, out, mech, pos))
            pieces.append(out)
            length += len(out)
            last = start + len(word)
        pieces.append(sentence[last:])
        return "".join(pieces), edits


def _domain_lexicon(spec: DomainSpec) -> tuple[dict[str, str], set[str]]:
    """word -> coarse POS for every word the domain's sentences can contain."""
    lex = dict(BASE_POS)
    proper: set[str] = set()

    def add(phrases, pos):
        for phrase in phrases:
            for w in WORD.findall(phrase):
                lex.setdefault(w.lower(), pos)

    makers = (b for t in spec.types for b in t.makers)
    names = (w for t in spec.types for words in t.name_parts for w in words)
    for b in (*spec.brands, *makers, *names, *PROPER_NOUNS):
        proper.update(w.lower() for w in WORD.findall(b))
    add(PLAIN_SLOTS["month"], "PROPN")
    proper.update(m.lower() for m in PLAIN_SLOTS["month"])
    if spec.style_lowercase:
        add(spec.styles, "ADJ")
    else:
        add(spec.styles, "PROPN")
        proper.update(w.lower() for s in spec.styles for w in WORD.findall(s))
    add(spec.colors, "ADJ")
    for t in spec.types:
        add(t.colors or (), "ADJ")
        add(t.materials, "NOUN")
        add(t.parts, "NOUN")
        add((t.noun,), "NOUN")
        for phrase in (*t.uses, *t.purposes):
            for w in WORD.findall(phrase):
                lex.setdefault(w.lower(), "VERB" if w.lower().endswith("ing") else "NOUN")
    add((*spec.recipients, *spec.places, *spec.persons, *spec.visitors), "NOUN")
    for phrase in spec.activities:
        for w in WORD.findall(phrase):
            lex.setdefault(w.lower(), "VERB" if w.endswith("s") else "NOUN")
    for w in proper:
        lex.setdefault(w, "PROPN")
    return lex, proper


# ----------------------------------------------------------------------------- the world
def choose_rating(product: Product, user: User, draw: Draw) -> int:
    if draw.u() < 0.05 + 0.04 * (5.0 - product.quality):  # a faulty unit: the J-shape
        return 1
    noise = (draw.u() + draw.u() + draw.u() - 1.5) * 1.8  # roughly N(0, 0.9)
    return int(min(5, max(1, round(product.quality + user.rating_bias + noise))))


def rating_polarity(rating: int) -> str:
    return "pos" if rating >= 4 else "neg" if rating <= 2 else "mixed"


def sentence_polarity(review_polarity: str, position: int, n_sent: int, draw: Draw) -> str:
    """Mostly the review's polarity; longer reviews may concede a point after the opener."""
    if review_polarity == "mixed":
        return "pos" if draw.u() < 0.5 else "neg"
    if position > 0 and n_sent >= 3 and draw.u() < 0.1:
        return "neg" if review_polarity == "pos" else "pos"
    return review_polarity


def review_title(spec: DomainSpec, rating: int, product: Product, user: User, draw: Draw):
    if draw.u() < 0.15:  # the stock titles of star-only reviews
        return ("One Star", "Two Stars", "Three Stars", "Four Stars", "Five Stars")[rating - 1]
    kind = "pos" if rating >= 4 else "mid" if rating == 3 else "neg"
    options = [t for t in REVIEW_TITLES[kind] if product.color or "{color}" not in t]
    title = draw.pick(options)
    return title.format(
        noun=product.noun,
        recipient=user.recipient,
        brand=product.brand,
        color=(product.color or "").lower(),
        period=draw.pick(PLAIN_SLOTS["period"]),
    )
