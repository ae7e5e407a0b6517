"""The word lists grounding reads (`precompute.claims.grounding`), each with why it holds what it holds.

They are lists of *kinds of word*, not of false sentences: what asserts nothing (grammar,
greetings, light verbs), what other checks judge (numbers, time words), what a fact of each
type states by being of that type, and which words assert something about the account or the
reader. Kept apart from the rules so a reader sees every list at once, and a change to a list
is a change to this file alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = [
    "ASSERTING_WORDS",
    "COURTESY_WORDS",
    "FUNCTION_WORDS",
    "IRREGULAR_FORMS",
    "JUDGED_ELSEWHERE",
    "LIGHT_WORDS",
    "NUMBER_WORDS",
    "TYPE_WORDS",
]

# Words that assert nothing on their own: grammar. Kept small on purpose; everything else a
# line says must come from a source.
FUNCTION_WORDS: frozenset[str] = frozenset(
    """
    a an the this that these those it its it's itself
    i me my mine we us our ours ourselves you your yours yourself yourselves he him his she her hers
    they them their theirs themselves who whom whose which what whatever whoever
    about above across after against along among around as at before behind below beneath beside
    besides between beyond by down during for from in inside into like near of off on onto out
    outside over past per since than through throughout to toward towards under until up upon via
    with within without
    and but or nor so yet because if when while although though whether then else also too either
    neither both
    be is am are was were been being have has had having do does did done doing can could will would
    shall should may might must let lets let's
    not no never yes
    all any each every some many much more most few fewer less least other others another such own
    same one ones
    very quite rather just only even here there how why where
    s t re ve ll d m
    """.split()
)

# Light words: verbs and adverbs so general they say nothing by themselves ("come", "put",
# "often"); what they are said of is judged by the words around them.
LIGHT_WORDS: frozenset[str] = frozenset(
    """
    come comes came coming go goes going put puts take takes taking give gives become becomes
    becoming became get gets getting got make makes making made see seeing use uses using used
    often always usually sometimes alone people thing things way ways part kind lot lots
    """.split()
)

# Courtesy: words that greet or thank and say nothing about anyone.
COURTESY_WORDS: frozenset[str] = frozenset(
    "congrats congratulations welcome thanks thank hi hello hey great nice good best cheers please".split()
)

# What a fact of each built-in type states by being of that type, beyond its own words: a
# hiring fact is a job opening, so a line may say "posted", "role" or "opening" of it. Words,
# compared by stem; a campaign's own types state their name's words only.
TYPE_WORDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "funding": tuple("new funding raised round invest investor financing backed capital".split()),
        "hiring": tuple("new hire hiring recruit role job opening posted vacancy".split()),
        "expansion": tuple("new expand expansion open opening site office market enter move".split()),
        "leadership": tuple("new join appointed role named welcome lead hire".split()),
        "product_launch": tuple("new launch release introduce unveil ship product".split()),
        "quote": tuple("said say wrote write post share talk speak mention point view".split()),
        "crm_activity": tuple("attend join register request visit meet call demo thanks follow".split()),
    }
)

# Words whose truth other hard checks decide (numbers: `unsupported_specifics`; time words:
# `recency` and `unsupported_specifics`): grounding neither duplicates nor contradicts them.
JUDGED_ELSEWHERE: frozenset[str] = frozenset(
    """
    zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
    sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred
    thousand million billion dozen half
    today yesterday tonight tomorrow now recently recent lately soon week weeks month months quarter
    quarters year years day days ago last next earlier later morning afternoon evening weekend
    monday tuesday wednesday thursday friday saturday sunday
    january february march april may june july august september october november december
    """.split()
)

# Words that assert an event, a relationship, the reader's words or thoughts, the reader's
# role or state, or a count or rank, by class. Said of this reader they must come from a cited
# fact, never from approved copy alone (the copy said them of someone else), unless the line
# keeps the copy's own phrase around them. Compared by stem: "acquiring" is "acquired".
ASSERTING_WORDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "an event": tuple(
            """
            acquire acquired acquisition merge merger ipo award won win rival competitor layoff
            bankrupt lawsuit sued raise fund investor round launch release open expand expansion
            relocate close shut announce sign deal contract promote appoint join
            """.split()
        ),
        "a relationship": tuple(
            """
            customer client partner partnership user mutual connection introduce referral refer
            recommend meet meeting speak talk chat conversation demo again already together
            colleague friend know familiar loyal renew subscribe longtime keep still stay remain
            seat license
            """.split()
        ),
        "the reader's words or thoughts": tuple(
            """
            think thought say wrote write post tweet blog podcast article comment mention resonate
            believe feel agree love enjoy share ask tell interest excited thrilled proud curious
            wonder struggle frustrated worried concern prefer opinion insight hear quote relief
            relieved
            """.split()
        ),
        "the reader's role or state": tuple(
            "role job title position responsible career boss overwhelmed stress hectic pressure".split()
        ),
        "a count or rank": tuple(
            """
            first second third fourth fifth sixth seventh eighth ninth tenth twice double
            triple latest biggest largest
            """.split()
        ),
    }
)

# Irregular past forms Snowball leaves as they are: "won" is "win" to a fact that says "wins".
IRREGULAR_FORMS: Mapping[str, str] = MappingProxyType(
    {
        "won": "win",
        "met": "meet",
        "spoke": "speak",
        "spoken": "speak",
        "said": "say",
        "wrote": "write",
        "written": "write",
        "thought": "think",
        "told": "tell",
        "knew": "know",
        "known": "know",
        "felt": "feel",
        "heard": "hear",
        "bought": "buy",
        "sold": "sell",
        "grew": "grow",
        "grown": "grow",
        "began": "begin",
        "begun": "begin",
        "led": "lead",
        "took": "take",
        "taken": "take",
        "made": "make",
        "got": "get",
        "gotten": "get",
        "ran": "run",
        "brought": "bring",
        "built": "build",
        "chose": "choose",
        "chosen": "choose",
        "went": "go",
        "gone": "go",
        "saw": "see",
        "seen": "see",
        "left": "leave",
    }
)

# Number words as digits: "six weeks" claims a number as much as "6 weeks" ("one" is grammar).
NUMBER_WORDS: Mapping[str, str] = MappingProxyType(
    {
        w: str(i)
        for i, w in enumerate(
            "_ _ two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
            "sixteen seventeen eighteen nineteen twenty".split()
        )
        if w != "_"
    }
    | {
        w: str(10 * i)
        for i, w in enumerate("_ _ _ thirty forty fifty sixty seventy eighty ninety".split())
        if w != "_"
    }
    | {
        "hundred": "100",
        "hundreds": "100",
        "thousand": "1000",
        "thousands": "1000",
        "dozen": "12",
        "dozens": "12",
    }
)
