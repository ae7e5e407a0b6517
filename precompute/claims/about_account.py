"""Claims about the account: how recent its news is, what it achieved, what it plans, and praise.

* `unsupported_recency`: "today", "this week", "this month", "just", "recently", "your new role" are backed
  by a cited fact whose date makes them true on the run's day and on every day the zone may
  be served (`precompute.facts.recency` has the windows; "your new role" needs a `leadership` fact);
* `unsupported_achievement`: awards, growth figures, records and rankings, by a cited fact
  whose statement says it (each phrasing's `support`);
* `unsupported_intent`: a plan ("plans to", "is looking to", "will double", "your upcoming
  launch"), by a cited fact whose statement states that plan (`precompute.claims.support`);
* `flattery`: praise and hype ("impressive", "world-class", "crushing it") are never backed.

The words they read are described in `precompute.claims.patterns`.
"""

from __future__ import annotations

from precompute.claims.patterns import (
    ACCOUNT_IS,
    ACCOUNT_POSSESSIVE,
    CALL_OR_FUTURE,
    CONDITIONAL,
    DAY,
    EVENT_NOUNS,
    GENERIC_RELATIVE_END,
    GENERIC_SUBJECT_END,
    JUST,
    LAST_WEEK,
    NEW_ROLE,
    RECENT,
    THIS_MONTH,
    THIS_WEEK,
    WORD,
    YESTERDAY,
    ClaimPattern,
    phrasings,
)

__all__ = ["ACHIEVEMENTS", "FLATTERY", "INTENTS", "RECENCY"]

_NOT_NEWS = r"(?! s\b)"  # "today's buyers", "yesterday's playbook": no news ...
_NEWS_OF = rf"(?:{WORD} ){{0,2}}{EVENT_NOUNS}\b"  # ... but "today's news", "this week's Berlin opening"
RECENCY: tuple[ClaimPattern, ...] = (
    *phrasings(
        DAY,
        rf"\b(?:today|tonight){_NOT_NEWS}\b",
        r"\bthis (?:morning|afternoon|evening)\b",
        r"\bjust now\b",
        unless_before=CALL_OR_FUTURE,
        in_questions=False,
    ),
    *phrasings(DAY, rf"\b(?:today|tonight) s {_NEWS_OF}"),
    *phrasings(
        YESTERDAY,
        rf"\b(?:yesterday|last night){_NOT_NEWS}\b",
        rf"\b(?:yesterday|last night) s {_NEWS_OF}",
    ),
    *phrasings(THIS_WEEK, rf"\bthis week{_NOT_NEWS}\b", unless_before=CALL_OR_FUTURE, in_questions=False),
    *phrasings(THIS_WEEK, rf"\bthis week s {_NEWS_OF}"),
    *phrasings(LAST_WEEK, rf"\blast week{_NOT_NEWS}\b", rf"\blast week s {_NEWS_OF}"),
    *phrasings(THIS_MONTH, rf"\bthis month{_NOT_NEWS}\b", unless_before=CALL_OR_FUTURE, in_questions=False),
    *phrasings(THIS_MONTH, rf"\bthis month s {_NEWS_OF}"),
    *phrasings(
        JUST,
        r"\b(?:just|freshly) (?:raised|announced|launched|opened|closed|secured|landed|hired|started|joined"
        r"|moved|expanded|released|shipped|unveiled|kicked off|went live|gone live|posted|published|named"
        r"|appointed|promoted|completed|won|welcomed|signed|acquired|rolled out|debuted|entered|celebrated"
        r"|crossed|reached|added|onboarded|brought on|funded|minted|relocated|finished|wrapped up|hit"
        r"|passed)\b",
        r"\bnewly (?:announced|raised|funded|launched|opened|minted|public|listed|acquired|merged|expanded"
        r"|formed|founded|released|unveiled)\b",
        r"\b(?:has|have|ve|had|thisaccount s) (?:only )?just\b",
        r"\bfresh (?:off|from) (?:the|a|an|its|their|your)\b",
        r"\bhot off the press(?:es)?\b",
        r"\b(?:a few|few|a couple of|couple of|several|two|three|four|five|six) days ago\b",
        r"\ba week ago\b",
        r"\bthe other day\b",
        r"\b(?:only|just|mere) (?:days|hours) (?:ago|after|since)\b",
        unless_before=GENERIC_RELATIVE_END,
    ),
    *phrasings(
        RECENT,
        r"\brecently\b(?! (?:hired|promoted|onboarded|funded|joined|added) (?:[^\W_]+ )?(?:reps|sdrs|aes"
        r"|managers|sellers|teams|companies|startups|hires|people|employees|staff|leaders)\b)",
        unless_before=GENERIC_RELATIVE_END,
    ),
    *phrasings(
        RECENT,
        r"\blately\b",
        r"\bin recent (?:days|weeks)\b",
        r"\b(?:over|in) the (?:last|past) (?:few )?(?:days|week|weeks)\b",
        r"\bthese (?:last|past) (?:few )?(?:days|weeks)\b",
        r"\b(?:your|thisaccount s|its|their|his|her) (?:(?:very|most) )?recent\b",
        rf"\b(?:the|this|that|a) recent {EVENT_NOUNS}\b",
    ),
    *phrasings(
        NEW_ROLE,
        r"\b(?:your|his|her|their) new (?:role|position|job|title|gig|seat|chair)\b",
        r"\b(?:on|into) (?:the|your|this|that) new (?:role|position|job|title)\b",
        r"\b(?:your|his|her|their|recent) promotion\b",
        r"\b(?:been|being|getting|got|was|were|is|just|recently|newly) promoted\b",
        r"\b(?:you|you ve|you have|you re|you are|she|he|they|thisaccount s [^\W_]+) (?:just |recently )?"
        r"(?:stepped|stepping) (?:into|up as|up to)\b",
        r"\bon stepping (?:into|up)\b",
        r"\bnewly (?:appointed|promoted|named)\b",
        r"\b(?:joined|joining) (?:thisaccount |the team |the thisaccount team )?as\b",
        r"\b(?:the|your|as|its|their|thisaccount s) new (?:ceo|cro|cfo|coo|cmo|cto|cpo|ciso|vp|svp|evp"
        r"|head of|director|chief|president|general manager|gm)\b",
        r"\bcongrat\w* on (?:the |your )?(?:new )?(?:role|position|job|title|appointment|promotion)\b",
    ),
)


_GERUND_TOPIC = r"^ $|\b(?:if|when|whenever|while|whether|once|before|after|for|about|without|by)\b"
ACHIEVEMENTS: tuple[ClaimPattern, ...] = (
    *phrasings(
        "award",
        r"\b(?:award|prize) winning\b",
        r"\b(?:award|prize) winners?\b",
        support=r"award|prize|winner",
    ),
    *phrasings(
        "award",
        rf"\bwon (?:{WORD} ){{0,4}}?(?:awards?|prizes?|trophy|trophies|accolades?)\b",
        r"\bwinners? of the\b",
        support=r"award|prize|troph|accolade|\bwon\b|winner",
    ),
    *phrasings(
        "recognition",
        r"\baccolades?\b",
        r"\bhonou?red (?:as|with|by|among|for)\b",
        r"\brecogni[sz]ed (?:as|by|among|for|in)\b",
        rf"\bnamed (?:to|one of|among|in|on) (?:the |a |an )?(?:{WORD} ){{0,3}}?(?:list|best|top|fastest|most"
        r"|leaders?)\b",
        r"\b(?:best|great|top) places? to work\b",
        r"\binc 5000\b",
        support=r"award|honou?r|recogni|named|accolade|list|place to work|inc 5000",
    ),
    # "Doubling the team is hard", "tips for doubling": the topic, not a claim.
    *phrasings(
        "doubled",
        r"\bdoubl(?:ed|ing)\b(?! down\b)",
        support=r"\bdoubl",
        unless_before=_GERUND_TOPIC,
        in_questions=False,
    ),
    *phrasings(
        "tripled", r"\btripl(?:ed|ing)\b", support=r"\btripl", unless_before=_GERUND_TOPIC, in_questions=False
    ),
    *phrasings(
        "quadrupled",
        r"\bquadrupl(?:ed|ing)\b",
        support=r"\bquadrupl",
        unless_before=_GERUND_TOPIC,
        in_questions=False,
    ),
    *phrasings(
        "growth_figure",
        r"\b(?:grew|grown|growing|grow|growth|increased|increase|increasing|boosted|scaled|scaling|up|rose"
        r"|risen|jumped|climbed|surged|expanded|multiplied) (?:[^\W_]+ ){0,3}?(?:by )?(?:\d+ )?"
        r"(?:\d+x|\d+ (?:x|times|fold|percent)|(?:two|three|four|five|six|seven|eight|nine|ten|twenty|fifty"
        r"|a hundred|hundred) (?:x|times|fold|percent)|(?:two|three|four|five|ten|hundred)fold)\b",
        r"\b\d+x (?:growth|revenue|arr|mrr|year over year|yoy|bigger|larger|more customers)\b",
        r"\b\d+ percent (?:growth|increase|more revenue|yoy|year over year)\b",
        support=r"\bgr[eo]w|growth|increas|\d+x\b|\bx\b|times|fold|percent|doubl|tripl",
        in_questions=False,
    ),
    *phrasings(
        "record",
        r"\brecord (?:breaking|setting|quarter|year|month|week|revenue|growth|results|sales|arr|funding|round"
        r"|raise|numbers|high|valuation)\b",
        r"\b(?:best|strongest|biggest|largest) (?:quarter|year|month|round|raise) (?:ever|to date|yet)\b",
        r"\ball time high\b",
        support=r"record|\bever\b|all time|to date",
        in_questions=False,
    ),
    *phrasings(
        "rapid_growth",
        r"\bhyper ?growth\b",
        rf"\b{ACCOUNT_POSSESSIVE} (?:{WORD} )?(?:rapid|explosive|incredible|amazing|massive|huge|impressive"
        r"|remarkable|fast|strong|stellar|record) growth\b",
        rf"\b{ACCOUNT_POSSESSIVE} (?:{WORD} )?(?:fast|rapidly|quickly) growing\b",
        rf"\b{ACCOUNT_IS} (?:(?:clearly|really|still|now) )?(?:growing|scaling|expanding) (?:so |really"
        r" |incredibly |very |super )?(?:fast|quickly|rapidly)\b",
        r"\bskyrocket\w*",
        r"\bsoar(?:ing|ed)\b",
        r"\bbooming\b",
        r"\bblitzscal\w*",
        r"\bexplosive(?:ly)? (?:growth|growing)\b",
        r"\bfastest (?:growing|growth|rising|scaling|expanding)\b",
        support=r"fast|rapid|quick|hyper|explosive|soar|skyrocket|boom|blitzscal|\bgr[eo]w",
        in_questions=False,
    ),
    *phrasings(
        "milestone",
        rf"\b(?:hit|hitting|reached|reaching|crossed|crossing|passed|passing|surpassed|surpassing|topped"
        rf"|topping|broke|breaking) (?:{WORD} ){{0,3}}?(?:arr|mrr|revenue|milestone|mark|customers|users"
        r"|employees|valuation|unicorn|profitability|million|billion)\b",
        r"\b(?:unicorn|decacorn)\b",
        rf"\b{ACCOUNT_IS} (?:now )?profitable\b",
        r"\b(?:reached|reaching|hit|turned|turning) profitab\w*",
        support=r"arr|mrr|revenue|milestone|customer|user|employee|valuation|unicorn|decacorn|profitab"
        r"|million|billion",
        in_questions=False,
    ),
    *phrasings(
        "ranking",
        r"\bnumber (?:1|one)\b",
        r"\bno 1\b",
        r"\b1st place\b",
        support=r"number (?:1|one)|\bno 1\b|1st|first place",
    ),
    *phrasings(
        "ranking",
        r"\brank(?:ed|s|ing)? (?:first|1st|number|top|among|as|no|in the top|highest)\b",
        r"\btop (?:ranked|rated)\b",
        r"\btop (?:\d+|ten|five|three|twenty|fifty|hundred)\b(?! (?:reasons|tips|ways|mistakes|questions"
        r"|things))",
        support=r"rank|rated|\btop\b",
    ),
    *phrasings(
        "leadership_position",
        r"\b(?:market|industry|category|sector|global|world|european|regional) lead(?:er|ers|ing)\b",
        r"\bleading (?:provider|platform|vendor|player|company|brand|supplier|solution|name|firm|agency"
        r"|startup|saas|fintech|expert|authority)\b",
        r"\b(?:a|the) leader (?:in|of|among)\b",
        support=r"\blead",
    ),
    *phrasings(
        "superlative",
        r"\bbest in (?:class|the (?:industry|market|world|country|business|region|space|category|game))\b",
        r"\b(?:world|europe|country|industry|market|nation|region|city|netherlands|germany|france|uk|us"
        r"|amsterdam) s (?:best|largest|biggest|leading|fastest|first|top)\b",
        r"\bthe (?:best|largest|biggest|leading|most successful|most innovative|most funded|most valuable)"
        r" (?:company|startup|scaleup|scale up|team|employer|platform|product|provider|vendor|brand|firm|saas"
        r"|fintech|business) (?:in|on|of)\b",
        r"\bcategory (?:creator|defining|king|leader|leading)\b",
        r"\bpioneer(?:s|ed|ing)?\b",
        r"\bfirst ever\b",
        r"\bfirst of its kind\b",
        r"\bindustry first\b",
        support=r"best|largest|biggest|leading|most|categor|pioneer|first",
    ),
)


_INTENT_SUBJECT = (
    r"(?:you|your (?:team|company|ceo|founders?|leadership|board|sales team|sales org|org|business)"
    r"|thisaccount|the thisaccount team|they)"
)
_INTENT_ADVERBS = (
    r"(?:now|also|already|actively|reportedly|clearly|currently|still|seriously|definitely|probably|likely"
    r"|quietly|publicly|finally|officially)"
)
_TO_VERBS = (
    r"(?:plan|plans|planning|want|wants|wanting|hope|hopes|hoping|aim|aims|aiming|intend|intends|intending"
    r"|look|looks|looking|prepare|prepares|preparing|expect|expects|expecting|seek|seeks|seeking|set|poised"
    r"|about|on track|gearing up|getting ready|keen|eager|itching|determined|committed|racing|rushing"
    r"|moving|pushing|working|scrambling) to"
)
_FOR_VERBS = r"(?:looking|searching|shopping|hunting|in the market|planning|preparing|gearing up|bracing) for"
_ING_VERBS = (
    r"(?:considering|eyeing|eyes|evaluating|exploring|weighing|mulling|contemplating|targeting|targets)"
)
_GROWTH_VERBS = (
    r"(?:double|triple|quadruple|grow|expand|hire|launch|open|scale|raise|acquire|ipo|go public|enter|move"
    r"|relocate|build|add|invest|spend|switch|replace|buy|close|list|merge|restructure|rebrand|announce"
    r"|release)"
)
INTENTS: tuple[ClaimPattern, ...] = (
    *phrasings(
        "plan",
        rf"\b{_INTENT_SUBJECT}(?: (?:is|are|re|s|was|were|has been|have been|ve been|been"
        rf"|{_INTENT_ADVERBS}))*"
        rf" (?:{_TO_VERBS}|{_FOR_VERBS}|{_ING_VERBS}) (?:an? |the |new |more )?(?P<action>{WORD})",
        rf"\b{_INTENT_SUBJECT}(?: (?:will|ll|is going to|s going to|are going to|re going to|is about to"
        rf"|are about to|re about to"
        rf"|s about to)(?: {_INTENT_ADVERBS})?)(?: soon)? (?P<action>{_GROWTH_VERBS})\b",
        unless_before=CONDITIONAL,
        in_questions=False,
    ),
    *phrasings(
        "plan",
        rf"\b(?:plans|aims|intends|hopes|expects|seeks|wants|looks|prepares) to (?P<action>{WORD})",
        rf"\b(?:is|are|re|s|was|were) (?:{_INTENT_ADVERBS} )?(?:planning|looking|aiming|preparing|hoping"
        r"|intending|expecting|seeking|gearing up|getting ready|set|about|poised|on track|racing|rushing"
        rf"|moving|pushing|scrambling|itching|keen|eager|determined) to (?P<action>{WORD})",
        rf"\b(?:is|are|re|s) (?:{_INTENT_ADVERBS} )?(?:considering|eyeing|evaluating|exploring|weighing"
        r"|mulling|contemplating|targeting|preparing for|in the market for|shopping for|looking for)"
        rf" (?:an? |the |new |more )?(?P<action>{WORD})",
        r"\bwill (?:soon |likely |probably )?(?P<action>double|triple|quadruple)\b",
        unless_before=rf"{CONDITIONAL}|{GENERIC_SUBJECT_END}",
        in_questions=False,
    ),
    *phrasings(
        "plan",
        rf"\b{ACCOUNT_POSSESSIVE} (?:upcoming|planned|coming|imminent|expected|anticipated|forthcoming"
        rf"|pending"
        r"|rumou?red|next) (?P<action>launch|expansion|ipo|round|raise|funding|opening|move|acquisition"
        r"|rollout|roll out|release|office|series|listing|merger|reorg|restructuring|rebrand|fundraise"
        r"|fundraising|hiring spree|push)\b",
        rf"\b{ACCOUNT_POSSESSIVE} (?:plans?|ambitions?|intentions?|goal|goals|bid|push|drive|efforts?|mission"
        rf"|roadmap|aim|strategy) to (?P<action>{WORD})",
        unless_before=CONDITIONAL,
        in_questions=False,
    ),
)


FLATTERY: tuple[ClaimPattern, ...] = phrasings(
    "flattery",
    r"\b(?:impressive|impressed|impressively|amazing|amazingly|awesome|incredible|incredibly|outstanding"
    r"|remarkable|remarkably|stellar|phenomenal|brilliant|extraordinary|fantastic|exceptional|exceptionally"
    r"|spectacular|astonishing|astounding|stunning|superb|terrific|tremendous|wonderful|marvell?ous"
    r"|mind ?blowing|jaw ?dropping|world ?class|rock ?stars?|super ?stars?|ninjas?|gurus?|visionary"
    r"|visionaries|legendary|legends?|trail ?blaz\w*|game ?chang\w*|unstoppable|unparalleled|unrivall?ed"
    r"|unmatched|inspiring|inspirational|genius|disruptive|disruptors?|innovative|innovators?"
    r"|thought leaders?|thought leadership|powerhouse|juggernaut|dream team|top notch|first rate|exemplary"
    r"|admirable|enviable|breathtaking|killer|epic|wow|kudos|bravo|hats off)\b",
    r"\b(?:crushing|killing|smashing|nailing|owning|rocking) it\b",
    r"\bon fire\b",
    r"\bnext level\b",
    r"\b(?:cutting|bleeding) edge\b",
    r"\brevolutionary\b",
    r"\bsecond to none\b",
    r"\bbest of the best\b",
    r"\bcream of the crop\b",
    r"\ba force to be reckoned with\b",
    r"\bfirst class\b",
    r"\b(?:huge|massive|big|giant|enormous|hearty|heartfelt|warmest|many|mega|major) congrat\w*",
    r"\b(?:great|nice|good|fantastic|excellent|awesome|amazing|solid|stellar|brilliant|outstanding|incredible"
    r"|impressive) (?:work|job|stuff|going|effort|efforts|hustle|execution|progress|momentum|run)\b",
    r"\b(?:well|nicely) done\b",
    r"\bway to go\b",
    r"\bwell deserved\b",
    r"\bso proud\b",
    r"\bproud of (?:you|your|thisaccount|the)\b",
    r"\bcheers to (?:you|your|thisaccount|the)\b",
    r"\b(?:huge|big|massive|long ?time|longtime|true|real) fans?\b",
    r"\b(?:love|loving|loved|admire|admiring|admired|respect) (?:what|how) (?:you|your team|thisaccount"
    r"|the thisaccount team|the team|they)\b",
    r"\b(?:love|loving|admire|admiring|adore) (?:your|thisaccount s) (?:product|company|team|brand|work"
    r"|mission|culture|vision|approach|story|journey|growth|energy|style|site|website|hustle)\b",
    r"\b(?:what|such) an? (?:exciting|incredible|amazing|impressive|inspiring|great|fantastic|wild|huge|big)"
    r" (?:time|journey|ride|milestone|achievement|story|run|year|moment|week|step|team)\b",
    r"\bexciting times\b",
    r"\bso exciting\b",
    r"\bwhat a (?:journey|ride|milestone|run|story|year|week|team|company|achievement)\b",
    r"\b(?:you|your team|thisaccount|the thisaccount team|they) (?:re|are|is|s) (?:clearly |really |truly"
    r" |simply |absolutely |definitely )?(?:doing|building|making|running) (?:something |it |things )?"
    r"(?:great|amazing|big|special|incredible|awesome|right|huge|impressive)\b",
    r"\b(?:the )?(?:best|brightest|smartest) (?:team|minds|people|company|startup|founders?) (?:in|of"
    r"|around)\b",
)
