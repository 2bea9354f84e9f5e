"""Sentence constructions of the sample world and the word lists that fill their slots.

Each construction is one syntactic pattern (passive, cleft, conditional, ...) with a few
lexical templates per polarity; all templates of a construction share its dependency shape, so
a user's mixture over constructions is a planted syntactic style that dependency/POS rules can
recover. Slots (``{part}``, ``{brand}``, ...) are filled from the reviewed product, so reviewers
of the same product share topic words while their syntax differs.

The module also holds the coarse part-of-speech lexicon the error injector uses to decide the
context of a corrupted token (NOUN, PROPN, VERB, ADJ, ADV, FUNC).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Construction:
    id: str
    description: str
    pos: tuple[str, ...]  # templates for positive sentences
    neg: tuple[str, ...]  # templates for negative sentences

    def templates(self, polarity: str) -> tuple[str, ...]:
        return self.pos if polarity == "pos" else self.neg


def _c(cid: str, description: str, pos, neg=None) -> Construction:
    pos = tuple(pos)
    return Construction(cid, description, pos, tuple(neg) if neg is not None else pos)


CONSTRUCTIONS: tuple[Construction, ...] = (
    _c(
        "copular_adjective",
        "copular clause: NP be/feel ADV ADJ",
        [
            "The {part} is {adv} {adj}.",
            "This {noun} is {adv} {adj}.",
            "The {part} feels {adv} {adj}.",
        ],
    ),
    _c(
        "contraction_copula",
        "pronoun + contracted copula: it's ADV ADJ PP",
        ["It's {adv} {adj} for the price.", "It's {adv} {adj} for {use}."],
    ),
    _c(
        "subjectless_verb",
        "subjectless verb fragment: VERB ADV (often two words)",
        ["Works {manner}.", "Fits {adv} well.", "Holds up {adv} well."],
        ["Stopped working after {period}.", "Broke within {period}.", "Falls apart {adv} fast."],
    ),
    _c(
        "bought_for",
        "first-person purchase with a benefactive PP: I bought NP for NP",
        [
            "I bought this {noun} for my {recipient}.",
            "I bought the {color} one for my {recipient}.",
            "We bought this {noun} for {use}.",
        ],
    ),
    _c(
        "passive",
        "passive voice with a by-agent or PP",
        [
            "This {noun} was recommended by {person}.",
            "The {part} was designed with {use} in mind.",
            "The {noun} was packaged {adv} carefully.",
        ],
        [
            "The {part} was damaged in shipping.",
            "This {noun} was {adv} poorly made.",
            "The {part} was scratched when it arrived.",
        ],
    ),
    _c(
        "fronted_adverbial",
        "fronted temporal PP before the main clause",
        [
            "After {period}, the {noun} still {outcome}.",
            "Within {period}, the {noun} became our favorite.",
        ],
        ["After {period}, the {part} already {outcome}.", "Within {period}, the {part} {outcome}."],
    ),
    _c(
        "wh_question",
        "wh-question",
        ["Why did I not buy this {noun} sooner?", "Who knew a {noun} could be this {adj}?"],
        ["Why is the {part} so {adj}?", "How can a {brand} {noun} be this {adj}?"],
    ),
    _c(
        "imperative",
        "imperative clause (second person, no subject)",
        [
            "Trust me and get the {color} one.",
            "Do yourself a favor and buy this {noun}.",
            "Grab this {noun} before the price goes up.",
        ],
        [
            "Do not waste your money on this {noun}.",
            "Save your money and skip the {brand} {noun}.",
            "Look elsewhere for a {need_adj} {noun}.",
        ],
    ),
    _c(
        "superlative_relative",
        "superlative NP modified by a restrictive that-clause",
        [
            "This is the {sup} {noun} that we have ever owned.",
            "It is the {sup} {part} that I have seen on a {noun}.",
        ],
    ),
    _c(
        "subject_relative",
        "subject NP with a non-restrictive who-clause",
        [
            "My {recipient}, who is very picky, {feel3} the {part}.",
            "Our {recipient}, who {activity} a lot, {feel3} this {noun}.",
        ],
    ),
    _c(
        "coordinated_clauses",
        "two finite clauses joined by and",
        [
            "The {color} finish looks {adj} and the {material} feels {adj2}.",
            "The {part} is {adj} and the {part2} is {adj2}.",
        ],
    ),
    _c(
        "existential",
        "existential there-construction",
        [
            "There is nothing I would change about the {part}.",
            "There are no complaints from my {recipient} about the {part}.",
            "There is a {adj} {part} on this {noun}.",
        ],
        [
            "There is a {adj} gap near the {part}.",
            "There are loose threads around the {part}.",
            "There is no way to fix the {part}.",
        ],
    ),
    _c(
        "comparative",
        "comparative adjective with a than-phrase",
        [
            "It is {cmp} than the {other_brand} {noun} we had before.",
            "The {part} is {cmp} than on our old {noun}.",
        ],
    ),
    _c(
        "conditional",
        "conditional if-clause before the main clause",
        [
            "If you need a {need_adj} {noun} for {use}, this one is perfect.",
            "If you're looking for a {need_adj} {noun}, buy this one.",
        ],
        [
            "If you need a {need_adj} {noun} for {use}, look elsewhere.",
            "If you're looking for a {need_adj} {noun}, this is not it.",
        ],
    ),
    _c(
        "participial_opener",
        "present/perfect participial clause opener",
        [
            "Having used it for {period}, I can say the {part} is {adj}.",
            "Coming from a {other_brand} model, I find this {noun} {adj}.",
        ],
    ),
    _c(
        "cleft",
        "wh-cleft or it-cleft",
        ["What I like most is the {part}.", "It is the {part} that sold me on this {noun}."],
        ["What bothers me most is the {part}.", "It is the {part} that ruins this {noun}."],
    ),
    _c(
        "verbless_list",
        "comma-separated list of noun phrases without a verb",
        [
            "{adj} {part}, {adj2} {material}, {price_adj} price.",
            "{adj} {part}, {adj2} {part2}, {price_adj} price.",
        ],
    ),
    _c(
        "exclamation",
        "exclamative: what a NP! / so ADJ!",
        ["What a {adj} {noun}!", "So {adj} and so {adj2}!"],
        ["What a {adj} {noun}!", "What a waste of money on a {brand} {noun}!"],
    ),
    _c(
        "gerund_subject",
        "gerund phrase as the subject",
        [
            "Setting up the {noun} was {adv} {ease}.",
            "{handling} the {part} is {ease}.",
            "{handling} the {part} takes {short_period}.",
        ],
        [
            "Setting up the {noun} was {adv} {ease}.",
            "{handling} the {part} is {ease}.",
            "{handling} the {part} takes forever.",
        ],
    ),
    _c(
        "modal_advice",
        "second-person modal advice",
        [
            "You should {advice_adv} {advice} this {noun}.",
            "You will not regret buying the {color} one.",
        ],
        [
            "You should {advice_adv} {advice} this {noun}.",
            "You will regret buying the {color} one.",
        ],
    ),
    _c(
        "present_perfect",
        "present perfect with since/for",
        [
            "We have used the {noun} every day since {month}.",
            "I have owned this {noun} for {period} now.",
        ],
        [
            "We have had nothing but trouble with the {part} since {month}.",
            "I have owned this {noun} for {period} and regret it.",
        ],
    ),
    _c(
        "because_clause",
        "main clause followed by a because-clause",
        [
            "I kept it because the {part} is so {adj}.",
            "We chose {brand} because their {part} is {adj}.",
        ],
        [
            "I returned it because the {part} was {adj}.",
            "We gave up on it because the {part} {outcome}.",
        ],
    ),
    _c(
        "concessive",
        "although-clause before the main clause",
        [
            "Although the {part} is a bit {mild_neg}, the {noun} {outcome}.",
            "Although it costs more, the {noun} is worth it.",
        ],
        [
            "Although the {color} color is nice, the {part} is {adj}.",
            "Although the price is fair, the {part} {outcome}.",
        ],
    ),
    _c(
        "temporal_when",
        "when-clause before the main clause",
        [
            "When my {recipient} {activity}, the {noun} {outcome}.",
            "When we travel, the {noun} {outcome}.",
        ],
    ),
    _c(
        "infinitival_purpose",
        "purpose infinitive or too-ADJ-to",
        ["I use it to {purpose}.", "We got it to {purpose} and it works."],
        ["It is too {adj} to {purpose}.", "I bought it to {purpose} but it failed."],
    ),
    _c(
        "appositive",
        "subject NP with an appositive NP",
        [
            "{brand}, the company behind this {noun}, {brand_outcome}.",
            "My {recipient}, a real fan of {brand}, {feel3} it.",
        ],
    ),
    _c(
        "negated_predicate",
        "negated verb with do-support",
        ["The {part} does not {fault} at all.", "It never {fault3}, even after {period}."],
        ["The {part} does not {func} properly.", "It does not {func} the way it should."],
    ),
    _c(
        "np_fragment",
        "bare noun phrase with a PP",
        ["{adj} {noun} for the price.", "{adj} {noun} for {use}."],
    ),
    _c(
        "star_rating",
        "rating statement with a number word",
        ["Five stars for the {part}.", "Two thumbs up for {brand}!"],
        ["One star for the {part}.", "Zero stars for {brand} if I could."],
    ),
    _c(
        "so_that",
        "so-ADJ-that result clause",
        ["The {part} is so {adj} that {consequence}."],
    ),
    _c(
        "not_only",
        "not only ... but also, with subject-auxiliary inversion",
        ["Not only is the {part} {adj}, but it is also {adj2}."],
    ),
    _c(
        "idiom_pronoun",
        "pronoun-heavy idiomatic clause",
        [
            "It does exactly what it says.",
            "It does what the {brand} listing promises and then some.",
        ],
        ["It does not do what it says.", "It is not what the {brand} listing promises."],
    ),
    _c(
        "wish",
        "wish + counterfactual clause",
        ["I wish I had bought the {noun} sooner.", "I wish every {noun} were this {adj}."],
        ["I wish the {part} were {cmp_pos}.", "I wish I had read the reviews first."],
    ),
    _c(
        "as_as",
        "equative as-ADJ-as comparison",
        ["It is as {adj} as the {other_brand} one.", "The {part} is just as {adj} as I hoped."],
        [
            "It is not as {need_adj} as the {other_brand} one.",
            "The {part} is not as {need_adj} as I hoped.",
        ],
    ),
    _c(
        "subjectless_recommend",
        "subjectless modal clause, optionally with a relative clause",
        [
            "Would recommend to anyone who needs a {need_adj} {noun}.",
            "Would buy again for my {recipient}.",
        ],
        ["Would not recommend to anyone who needs a {need_adj} {noun}.", "Would not buy again."],
    ),
    _c(
        "prepositional_opener",
        "fronted with-PP before the main clause",
        [
            "With the {material} {part} and the {color} finish, it fits {adv} well in our {place}.",
            "With its {adj} {part}, it fits {adv} well in our {place}.",
        ],
        [
            "With the {material} {part} and the {color} finish, it looks cheap in our {place}.",
            "With its {adj} {part}, it does not belong in our {place}.",
        ],
    ),
    _c(
        "verb_initial_love",
        "subjectless love/hate clause",
        ["Love the {color} color.", "Love how {adj} the {part} is."],
        ["Hate the {part}.", "Hate how {adj} the {part} is."],
    ),
    _c(
        "get_passive",
        "get-passive, coordinated with a predicate",
        [
            "It got delivered {fast_adv} and was easy to set up.",
            "The {noun} got noticed by every {visitor} who came over.",
        ],
        [
            "It got damaged in shipping and was hard to set up.",
            "The {part} got {damaged} after {period}.",
        ],
    ),
    _c(
        "worth_fragment",
        "adjective phrase fragment with worth",
        ["Definitely worth the money.", "Totally worth it for {use}."],
        ["Not worth the money.", "Not worth it for {use}."],
    ),
    _c(
        "for_opener",
        "fronted for-PP before a modal clause",
        ["For the price, you cannot beat this {noun}.", "For {use}, nothing beats this {noun}."],
        [
            "For the price, I expected a {need_adj} {part}.",
            "For {use}, you can do better than this {noun}.",
        ],
    ),
    _c(
        "complement_clause",
        "I think/feel + complement clause",
        [
            "I think this is the {sup} {noun} on the market.",
            "I feel that the {part} is {adv} {adj}.",
        ],
        ["I think the {part} could be {cmp_pos}.", "I feel that the {part} is {adv} {adj}."],
    ),
    _c(
        "yes_no_question",
        "yes-no question",
        ["Do you need a {need_adj} {noun} for {use}?", "Is there a better {noun} out there?"],
        [
            "Did anyone else have trouble with the {part}?",
            "Is it too much to ask for a {need_adj} {part}?",
        ],
    ),
    _c(
        "narrative_past",
        "fronted temporal NP with a past-tense narrative",
        [
            "Last {month}, we ordered the {color} {noun} from {brand}.",
            "Last {month}, I ordered this {noun} for my {recipient}.",
        ],
    ),
    _c(
        "emphatic_do",
        "emphatic do-support",
        ["We do love the {color} {noun}.", "It does feel {adv} {adj}."],
        ["It does feel {adv} {adj}.", "We did try to like the {part}."],
    ),
    _c(
        "quantifier_subject",
        "quantified subject (everyone/nobody) with a relative clause or PP",
        [
            "Everyone who sees the {noun} asks about it.",
            "Everybody in our house {feel3} the {part}.",
        ],
        ["Nobody in our house likes the {part}.", "Everyone who tried the {noun} gave up on it."],
    ),
    _c(
        "possessive_its",
        "possessive its-NP subject with too",
        ["Its {part} is {adj} and its {part2} is {adj2} too.", "Its {style} fits our {place} too."],
        ["Its {part} is too {adj} to be useful.", "Its {part} came loose after {period}."],
    ),
    _c(
        "plural_they",
        "plural subject they/their with a contraction",
        [
            "They're {adv} proud of their {noun} at {brand}, and it shows.",
            "Their {part} is {cmp} than the {other_brand} one.",
        ],
        [
            "They're selling a {adj} {noun} at {brand}, and it shows.",
            "Their {part} is {cmp} than the {other_brand} one.",
        ],
    ),
)

CONSTRUCTION_IDS: tuple[str, ...] = tuple(c.id for c in CONSTRUCTIONS)

# Slot vocabularies. Keys "pos"/"neg" give polarity-dependent lists.
POLAR_SLOTS: dict[str, dict[str, tuple[str, ...]]] = {
    "adj": {
        "pos": (
            "sturdy",
            "solid",
            "durable",
            "comfortable",
            "reliable",
            "excellent",
            "fantastic",
            "wonderful",
            "beautiful",
            "smooth",
            "soft",
            "sleek",
            "practical",
            "lightweight",
            "impressive",
            "great",
            "lovely",
            "handy",
            "well made",
        ),
        "neg": (
            "flimsy",
            "cheap",
            "fragile",
            "awkward",
            "uncomfortable",
            "disappointing",
            "noisy",
            "wobbly",
            "stiff",
            "useless",
            "rough",
            "clunky",
            "terrible",
            "poor",
            "unreliable",
        ),
    },
    "cmp": {
        "pos": ("better", "sturdier", "softer", "quieter", "smoother", "lighter", "nicer"),
        "neg": ("worse", "flimsier", "louder", "heavier", "rougher", "cheaper", "weaker"),
    },
    "sup": {
        "pos": ("best", "nicest", "sturdiest", "most reliable", "most comfortable"),
        "neg": ("worst", "flimsiest", "cheapest", "most frustrating", "least reliable"),
    },
    "outcome": {
        "pos": (
            "holds up well",
            "works perfectly",
            "looks new",
            "does its job",
            "feels solid",
            "gets the job done",
        ),
        "neg": (
            "comes loose",
            "falls apart",
            "squeaks constantly",
            "feels loose",
            "keeps breaking",
            "wobbles",
        ),
    },
    "ease": {
        "pos": ("easy", "simple", "quick", "painless"),
        "neg": ("hard", "tricky", "annoying", "frustrating"),
    },
    "advice": {"pos": ("buy", "get", "try", "consider"), "neg": ("avoid", "skip", "return")},
    "brand_outcome": {
        "pos": (
            "really knows what it is doing",
            "stands behind their products",
            "clearly cares about quality",
        ),
        "neg": (
            "clearly cut corners here",
            "should be embarrassed",
            "needs to fix their quality control",
        ),
    },
    "consequence": {
        "pos": (
            "my {recipient} uses it every day",
            "we bought a second one",
            "I told all my friends about it",
        ),
        "neg": ("we stopped using it", "I had to return it", "it went straight back in the box"),
    },
    "feel3": {"pos": ("loves", "adores", "enjoys"), "neg": ("hates", "ignores", "dislikes")},
    "manner": {
        "pos": ("great", "perfectly", "beautifully", "fine", "flawlessly"),
        "neg": ("poorly", "badly"),
    },
    "price_adj": {"pos": ("fair", "great", "reasonable"), "neg": ("steep", "silly", "high")},
}
POLAR_SLOTS["adj2"] = POLAR_SLOTS["adj"]
POLAR_SLOTS["adj3"] = POLAR_SLOTS["adj"]

PLAIN_SLOTS: dict[str, tuple[str, ...]] = {
    "adv": (
        "really",
        "very",
        "surprisingly",
        "incredibly",
        "pretty",
        "quite",
        "super",
        "extremely",
        "remarkably",
        "fairly",
    ),
    "advice_adv": ("definitely", "really", "probably", "seriously"),
    "need_adj": ("reliable", "sturdy", "durable", "comfortable", "quiet", "solid", "affordable"),
    "cmp_pos": ("sturdier", "softer", "thicker", "stronger", "quieter", "better made"),
    "mild_neg": ("stiff", "heavy", "pricey", "bulky", "loud", "small", "plain"),
    "period": (
        "two weeks",
        "a month",
        "three months",
        "six months",
        "a year",
        "a few days",
        "two years",
    ),
    "short_period": ("a minute", "five minutes", "no time", "seconds"),
    "month": (
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ),
    "fault": ("squeak", "wobble", "slip", "rattle", "leak", "scratch", "fade", "tear"),
    "fault3": ("squeaks", "wobbles", "slips", "rattles", "leaks", "scratches", "fades"),
    "func": ("fit", "lock", "stay in place", "hold", "work", "close"),
    "fast_adv": ("quickly", "fast", "early", "on time"),
    "damaged": ("scratched", "bent", "cracked", "torn"),
    "handling": ("Cleaning", "Adjusting"),
}

# Product types whose reviews need other words in some slots (a game is not "sturdy").
TYPE_SLOTS: dict[str, dict[str, tuple[str, ...] | dict[str, tuple[str, ...]]]] = {
    "game": {
        "adj": {
            "pos": (
                "fun",
                "engaging",
                "gorgeous",
                "addictive",
                "polished",
                "clever",
                "epic",
                "charming",
                "immersive",
                "satisfying",
            ),
            "neg": (
                "boring",
                "buggy",
                "repetitive",
                "clunky",
                "shallow",
                "frustrating",
                "bland",
                "broken",
                "tedious",
            ),
        },
        "cmp": {
            "pos": ("better", "deeper", "smoother", "prettier", "more fun"),
            "neg": ("worse", "shorter", "buggier", "duller", "slower"),
        },
        "sup": {
            "pos": ("best", "most fun", "most polished", "prettiest"),
            "neg": ("worst", "buggiest", "most boring", "dullest"),
        },
        "outcome": {
            "pos": ("keeps me hooked", "never gets old", "runs smoothly", "holds up well"),
            "neg": ("gets boring", "crashes constantly", "drags on", "feels unfinished"),
        },
        "fault": ("lag", "crash", "stutter", "freeze"),
        "fault3": ("lags", "crashes", "stutters", "freezes"),
        "func": ("load", "save", "run", "work"),
        "mild_neg": ("short", "easy", "slow", "linear"),
        "need_adj": ("fun", "polished", "relaxing", "challenging"),
        "cmp_pos": ("longer", "deeper", "more polished", "less buggy"),
        "handling": ("Learning", "Mastering"),
    },
}
TYPE_SLOTS["game"]["adj2"] = TYPE_SLOTS["game"]["adj"]
TYPE_SLOTS["game"]["adj3"] = TYPE_SLOTS["game"]["adj"]

REVIEW_TITLES: dict[str, tuple[str, ...]] = {
    "pos": (
        "Love it",
        "Great {noun}",
        "Perfect for my {recipient}",
        "Worth every penny",
        "Highly recommend",
        "Exactly what I needed",
        "{brand} never disappoints",
        "So happy with this",
        "Love the {color} color",
    ),
    "mid": (
        "It's okay",
        "Decent {noun}",
        "Does the job",
        "Mixed feelings",
        "Good but not great",
    ),
    "neg": (
        "Disappointed",
        "Not worth it",
        "Broke after {period}",
        "Cheap {noun}",
        "Returned it",
        "Save your money",
    ),
}

POS_CLASSES: tuple[str, ...] = ("NOUN", "PROPN", "VERB", "ADJ", "ADV", "FUNC")

# Coarse POS of every literal word in the templates and slot lists (dominant reading).
_BASE_POS_WORDS = {
    "FUNC": """
        a an the this that these those it its it's i me my we our us you your you're they
        they're their there he she his her who what which whose how why when where if
        although because but and or so as than then to too of for in on at by with from
        about into after within before around near since up out over behind off down
        is was were be been are am do does did doesn't didn't isn't can't cannot could would
        should will can had have has not no nothing nobody everyone everybody anyone every
        all any some one two three five six zero another each else just also still already
        yourself only much here back
        ever never now once even a lot more most less least way few
        """,
    "ADV": """
        really very surprisingly incredibly pretty quite super extremely remarkably fairly
        definitely probably seriously perfectly beautifully fine flawlessly poorly badly
        quickly fast early carefully properly constantly exactly totally well sooner first
        straight elsewhere sadly right away together forever again apart honestly clearly
        """,
    "ADJ": """
        sturdy solid durable comfortable reliable excellent fantastic wonderful beautiful
        smooth soft sleek practical lightweight impressive great lovely handy made flimsy
        cheap fragile awkward uncomfortable disappointing noisy wobbly stiff useless rough
        clunky terrible poor unreliable better sturdier softer quieter smoother lighter nicer
        worse flimsier louder heavier rougher cheaper weaker best nicest sturdiest reliable
        worst flimsiest cheapest frustrating easy simple quick painless hard tricky annoying
        fair reasonable steep silly high quiet affordable thicker stronger heavy pricey bulky
        loud small plain new loose old favorite perfect picky real worth proud nice happy
        okay decent good mixed second useful full long late last every other free open
        little fussy sore cold warm middle fun engaging gorgeous addictive polished clever
        epic charming immersive satisfying boring buggy repetitive shallow bland broken
        tedious deeper prettier shorter buggier duller slower prettiest buggiest dullest
        boring unfinished linear slow relaxing challenging longer short
        """,
    "VERB": """
        works work fits fit holds hold stopped working broke falls fall bought buy was
        recommended designed packaged damaged made scratched arrived became need needs
        trust get buy grab goes save skip look looking waste sold ruins bothers like likes
        setting cleaning adjusting takes regret buying used owned kept chose returned gave
        costs travel use got failed promises says do say hoped recommend fits belong looks
        love loves hate hates delivered noticed came set expected beat beats think feel ask
        ordered try tried sees asks shows selling read wish give care cares knows doing
        stands cut fix uses told went ignores dislikes adores enjoys comes squeaks feels
        keeps breaking wobbles squeak wobble slip rattle leak scratch fade tear slips rattles
        leaks scratches fades lock stay close bent cracked torn consider avoid return
        embarrassed having coming find gets done sleeping trying keep seen knew using
        help block calm settle switch store feed carry catch support protect bathe take
        practice move brighten bend change play learn hear record mix connect run replace
        aim tidy cover glide stop chat unwind kill relive relieve hooked runs drags lags
        crashes stutters freezes lag crash stutter freeze load learning mastering
        """,
    "NOUN": """
        price money favor nothing complaints threads gap company listing stars star thumbs
        reviews market finish color value day month year years weeks week days minute
        minutes seconds time shipping mind box friends friend house quality control products
        product model fan job trouble lot waste ones thing months version bit place corners design
        """,
}
BASE_POS: dict[str, str] = {}
for _pos, _words in _BASE_POS_WORDS.items():
    for _w in _words.split():
        BASE_POS.setdefault(_w, _pos)
del _pos, _words, _w
