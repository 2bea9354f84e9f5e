"""A construction grammar of product-search queries: the five core terms in many sentence shapes.

Why it exists. On CPU the embedded language model (SmolLM2-135M) can afford a few dozen
samples per product, and the ones that keep all five core terms mostly share one shape, the
noun-phrase query ("velvet fret red metal vintage usb audio interface"). User matching needs a
pool whose *sentence organisation* varies, so this backend realises the same core terms in a
fixed inventory of English constructions (questions, imperatives, requests, relative clauses,
clefts, conditionals, existentials, verbless lists, ...). Nothing in it is fitted to users; the
syntactic profiles decide which candidates sound like whom, exactly as for model candidates.

A query is ``template x attribute order``. Each attribute of the product (all core terms but
the brand) has a *family* that fixes its two surface forms: a prenominal modifier (``red``)
and a postnominal phrase (``in red``); relative clauses use a verb phrase (``comes in red``).
A template consumes the attributes in the drawn order: the first ``pre`` go before the head
noun (reordered to the usual English adjective order), the rest fill the template's tail
(``{pp}`` phrases, ``{rel}`` relative clause, ``{list}`` bare list). Every core term therefore
appears exactly once by construction; the lexical filter still checks it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# family -> (postnominal phrase, relative-clause verb phrase); {v} is the value.
FAMILIES: dict[str, tuple[str, str]] = {
    "style": ("in {v} style", "has a {v} style"),
    "age": ("for {v}", "is meant for {v}"),
    "color": ("in {v}", "comes in {v}"),
    "material": ("made of {v}", "is made of {v}"),
    "other": ("with {v}", "has {v}"),
    "purpose": ("for {v}", "works for {v}"),
}
# English prenominal order (opinion/style, age, colour, material, purpose): lower first.
PRENOMINAL_ORDER = {"style": 0, "age": 1, "color": 2, "other": 3, "material": 4, "purpose": 5}
# Attribute key (lower case) -> family, first matching pattern wins.
KEY_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"colou?r", "color"),
    (r"material", "material"),
    (r"style|theme|pattern|finish|edition|shape", "style"),
    (r"age", "age"),
    (r"platform|instrument|recommended use|compatib|genre|game mode|rated", "purpose"),
)


def family_of(key: str) -> str:
    k = key.lower()
    for pattern, fam in KEY_FAMILIES:
        if re.search(pattern, k):
            return fam
    return "other"


@dataclass(frozen=True)
class Template:
    id: str
    construction: str
    text: str  # slots: {brand} {np} {pp} {rel} {list}
    pre: int | None  # attributes before the head noun (None: all of them)


def _t(tid: str, construction: str, text: str, pre: int | None) -> Template:
    return Template(tid, construction, text, pre)


# {np} = prenominal modifiers + head noun, without an article.
TEMPLATES: tuple[Template, ...] = (
    _t("np_brand_first", "verbless noun phrase", "{brand} {np}", None),
    _t("np_by_brand", "verbless noun phrase with by-PP", "{np} by {brand}", None),
    _t("np_pp_tail", "noun phrase with postmodifying PPs", "{brand} {np} {pp}", 1),
    _t("np_colon_list", "noun phrase with a colon list", "{brand} {np}: {list}", 0),
    _t(
        "looking_for",
        "progressive fragment: looking for NP",
        "looking for a {np} from {brand} {pp}",
        2,
    ),
    _t(
        "need_rel",
        "first-person need with a relative clause",
        "I need a {np} by {brand} that {rel}",
        1,
    ),
    _t("want_the", "first-person want", "I want the {brand} {np} {pp}", 2),
    _t("where_buy", "wh-question: where can I buy", "where can I buy a {brand} {np} {pp}?", 2),
    _t("does_make", "yes-no question with do-support", "does {brand} make a {np} that {rel}?", 1),
    _t("which_rel", "wh-determiner question", "which {brand} {np} {rel}?", 0),
    _t("what_is", "wh-question with copula and list", "what {brand} {np} is {list}?", 0),
    _t("is_there", "existential yes-no question", "is there a {np} from {brand}?", None),
    _t("any_q", "elliptical any-question", "any {np} by {brand}?", None),
    _t("find_me", "imperative: find me", "find me a {brand} {np} {pp}", 1),
    _t(
        "show_me_rel",
        "imperative with a relative clause",
        "show me the {np} from {brand} that {rel}",
        1,
    ),
    _t("get_me", "imperative: get me", "get me the {brand} {np}", None),
    _t("made_by", "NP with a passive participle", "{np} {pp}, made by {brand}", 1),
    _t(
        "that_is_list",
        "NP with a copular relative and list",
        "a {np} from {brand} that is {list}",
        0,
    ),
    _t(
        "if_conditional",
        "conditional clause before the main clause",
        "if {brand} has a {np} {pp}, I would buy it",
        2,
    ),
    _t("possessive", "possessive brand determiner", "searching for {brand}'s {np} {pp}", 2),
    _t(
        "recommend_q",
        "modal question: can you recommend",
        "can you recommend a {np} from {brand} {pp}?",
        3,
    ),
    _t("comes_pp", "definite NP with a relative clause", "the {np} from {brand} that {rel}", 0),
    _t("please", "request fragment with please", "{np} {pp} by {brand}, please", 1),
    _t("would_love", "subjectless modal clause", "would love a {brand} {np} {pp}", 2),
    _t(
        "after_colon", "copular clause with a colon list", "I am after a {np} by {brand}: {list}", 0
    ),
    _t(
        "anyone_tried",
        "question with a perfect verb",
        "has anyone tried the {np} from {brand} {pp}?",
        2,
    ),
    _t("exist_q", "NP followed by a question tag", "{brand} {np} {pp} - does it exist?", 1),
    _t(
        "ideally",
        "NP with a relative clause and an adverbial",
        "a {np} that {rel}, ideally from {brand}",
        1,
    ),
    _t(
        "we_shop",
        "first-person plural progressive",
        "we are shopping for a {np} made by {brand} {pp}",
        1,
    ),
    _t(
        "should_be",
        "coordinated predicate with a modal",
        "the {np} should be {list} and by {brand}",
        0,
    ),
    _t(
        "having_compared",
        "participial opener",
        "having compared a few, I want the {brand} {np} {pp}",
        2,
    ),
    _t("has_to_be", "modal necessity", "it has to be a {np} from {brand} {pp}", 2),
    _t("available_q", "copular yes-no question", "is the {brand} {np} available {pp}?", 0),
    _t("must_be", "existential with a modal", "there must be a {np} by {brand} {pp} somewhere", 2),
    _t("cleft", "wh-cleft", "what I want is a {np} from {brand} {pp}", 2),
    _t(
        "concessive",
        "concessive opener",
        "although pricey, the {brand} {np} {pp} is what I need",
        2,
    ),
    _t(
        "when_clause",
        "when-clause before the main clause",
        "when I buy a {np}, I pick one from {brand} that {rel}",
        1,
    ),
    _t("would_buy", "subjectless conditional", "would buy a {brand} {np} {pp}", 2),
    _t("love_to_find", "subjectless love + infinitive", "love to find a {np} from {brand} {pp}", 2),
    _t(
        "not_sure",
        "negated clause with a coordinated modal clause",
        "not sure which {np} to get, but it should be from {brand} and {list}",
        0,
    ),
)


def join_list(items: Sequence[str]) -> str:
    items = list(items)
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def surface(value: str) -> str:
    """Values keep upper-case acronyms (USB, PC) and are otherwise lower case."""
    return " ".join(w if (w.isupper() and len(w) > 1) else w.lower() for w in value.split())


def realise(
    template: Template,
    brand: str,
    head: str,
    attributes: Sequence[tuple[str, str]],
) -> str:
    """The query of ``template`` for ``brand``, head noun ``head`` and ordered attributes."""
    n_pre = len(attributes) if template.pre is None else min(template.pre, len(attributes))
    pre = sorted(attributes[:n_pre], key=lambda a: PRENOMINAL_ORDER[family_of(a[0])])
    rest = list(attributes[n_pre:])
    np_ = " ".join([surface(v) for _, v in pre] + [head])
    pp = join_list([FAMILIES[family_of(k)][0].format(v=surface(v)) for k, v in rest])
    rel = join_list([FAMILIES[family_of(k)][1].format(v=surface(v)) for k, v in rest])
    lst = join_list([surface(v) for _, v in rest])
    text = template.text.format(brand=brand, np=np_, pp=pp, rel=rel, list=lst)
    if not rest and any(s in template.text for s in ("{pp}", "{rel}", "{list}")):
        return ""  # the template needs a tail and nothing is left for it
    text = re.sub(r"\s+([,?:])", r"\1", re.sub(r"\s{2,}", " ", text)).strip()
    return re.sub(r"\ba ([aeio])", r"an \1", text)


def split_brand(keys: Sequence[str], values: Sequence[str]) -> tuple[str, list[tuple[str, str]]]:
    """The brand (or, failing one, the first core term) and the other ``(key, value)`` pairs."""
    pairs = list(zip(keys, values, strict=True))
    for i, (k, v) in enumerate(pairs):
        if k.lower() == "brand":
            return v, pairs[:i] + pairs[i + 1 :]
    return pairs[0][1], pairs[1:]


def grammar_candidates(
    keys: Sequence[str],
    values: Sequence[str],
    head: str,
    n: int,
    generator: np.random.Generator,
    templates: Sequence[Template] = TEMPLATES,
) -> list[dict]:
    """Up to ``n`` distinct realisations: (template, attribute order) drawn without replacement."""
    brand, attrs = split_brand(keys, values)
    orders = list(itertools.permutations(range(len(attrs))))
    combos = [(t, o) for t in range(len(templates)) for o in range(len(orders))]
    picks = generator.permutation(len(combos))
    out, seen = [], set()
    for i in picks:
        if len(out) >= n:
            break
        t, o = combos[int(i)]
        order = [attrs[j] for j in orders[o]]
        text = realise(templates[t], brand, head, order)
        if not text or text.lower() in seen:
            continue
        seen.add(text.lower())
        out.append(
            {
                "text": text,
                "detail": {
                    "template": templates[t].id,
                    "construction": templates[t].construction,
                    "order": [k for k, _ in order],
                },
            }
        )
    return out
