"""Claims about the reader: their own words, a prior relationship with us, being watched.

* `invented_quote`: quoting or paraphrasing the reader ("you said", "your post about", "loved
  your ...") is backed only by a cited `quote` fact (`welcomemat.campaign.fact_types`);
* `unsupported_relationship`: a meeting, call, demo request, event attended, working together
  or customer and partner status, only by a cited `crm_activity` fact whose words say it
  (each phrasing's `support`);
* `tracking_disclosure`: telling the reader they were watched ("we saw you on our pricing
  page") is never backed: a fact can make it true, never welcome.

The words they read are described in `precompute.claims.patterns`.
"""

from __future__ import annotations

from precompute.claims.patterns import CONDITIONAL, READER, WORD, ClaimPattern, phrasings

__all__ = ["MEDIA_WORDS", "QUOTES", "RELATIONSHIPS", "TRACKING"]

MEDIA_WORDS = frozenset(
    """post posts article articles blog essay tweet tweets thread newsletter podcast podcasts episode
    interview interviews keynote talk talks panel presentation remarks comment comments book paper
    video livestream column piece""".split()
)
_MEDIA = (
    r"(?:blog posts?|guest posts?|op ed|fireside chat|live stream|podcast episode|posts?|articles?|blog"
    r"|essay|tweets?|thread|newsletter|podcasts?|episode|interviews?|keynote|talks?|panel|presentation"
    r"|remarks|comments?|book|paper|video|livestream|column|piece)"
)
_MEDIA_MOD = (
    r"(?:recent|latest|last|new|great|brilliant|fascinating|excellent|thoughtful|insightful|popular"
    r"|viral|linkedin|twitter|blog|guest|conference|keynote|podcast|own)"
)
# Sales words after a medium that make it something else: a talk track, talk time, a book of business.
_NOT_SALES_JARGON = (
    r"(?! (?:tracks?|time|ramp|review|demo|calls?|meetings?|skills?|decks?|templates?|slides?|tracker"
    r"|volume|schedule|calendar|budget|pipeline|conferencing|of)\b)"
)
# Imperatives before "your post": "share your post", "book your talk" ask, they do not quote.
_ASKING = (
    r"\b(?:leave|share|send|post|add|drop|give|submit|write|record|publish|upload|start|schedule|plan|book"
    r"|pitch|prep|prepare)\b(?: [^\W_]+)? $"
)

QUOTES: tuple[ClaimPattern, ...] = (
    *phrasings(
        "speech",
        rf"\b{READER}(?: (?:have|has|ve|had|just|recently|once|also|really|rightly|openly|publicly|were"
        r"|was|re|are|been|being|famously|often)){0,3} (?:said|says|wrote|written|writes|posted|posts"
        r"|mentioned|mentions|shared|tweeted|told (?:us|me|our \w+|the \w+)|tells us|noted|stated"
        r"|commented|blogged|explained|argued|admitted|complained|put it|described|talked about|talks about"
        r"|spoke about|spoken about|talking about|speaking about|called it|quoted)\b"
        r"(?! (?:[^\W_]+ ){0,2}(?:roles?|jobs?|openings?|positions?|vacanc\w*|listings?|job ads?)\b)",
        r"\b(?:as|like) (?:you|thisaccount) (?:say|says|put it|often say|like to say)\b",
        r"\bin your (?:own )?words\b",
        unless_before=CONDITIONAL,
    ),
    *phrasings(
        "medium", rf"\byour (?:{_MEDIA_MOD} ){{0,2}}{_MEDIA}\b{_NOT_SALES_JARGON}", unless_before=_ASKING
    ),
    *phrasings(
        "opinion",
        r"\byour (?:take|takes|point|points|view|views|perspective|insights?|opinion|stance|argument"
        r"|predictions?|hot take|comments?|remarks) (?:on|about|that|around|regarding)\b",
        unless_before=r"\b(?:love|like|want|hear|get|know|share|ask|value|welcome|appreciate|what|curious"
        r"|keen|eager|give|send|tell)\b(?: [^\W_]+){0,2} $",
    ),
    *phrasings(
        "praise",
        r"\b(?:loved|enjoyed|really liked|really love|really enjoy|really enjoyed|devoured|bookmarked)"
        r" (?:reading |watching |listening to |hearing )?your\b",
        rf"\b(?:great|fantastic|brilliant|excellent|insightful|thoughtful|fascinating|interesting|awesome"
        rf"|amazing|nice|inspiring|powerful|compelling|spot on|sharp) {_MEDIA}\b{_NOT_SALES_JARGON}",
        r"\b(?:heard|saw|seen|watched|caught|listened to) (?:you|your (?:team|ceo|founders?)|thisaccount s"
        r" (?:ceo|founders?|team)) (?:on|at|in|during) (?:the |a |your |that |this |their )?(?:[^\W_]+ )?"
        r"(?:podcast|episode|panel|webinar|interview|keynote|talk|stage|show|livestream|live stream|radio"
        r"|tv|video|fireside chat)\b",
    ),
)


_REQUEST_SUPPORT = (
    r"demo|trial|pilot|request|sign|regist|download|subscri|inquir|enquir|contact|email|repl"
    r"|form|interest|book|rsvp|call|meet|\bmet\b|chat|attend|join"
)
# A meeting is backed by a record of one; a follow-up by any earlier exchange (a demo request too).
_MEETING_SUPPORT = (
    r"\bmet\b|\bmeet|call|spoke|spoken|talk|chat|conversation|coffee|lunch|dinner|connect|conference"
    r"|event|summit|booth"
)
_EVENT_SUPPORT = (
    r"webinar|event|attend|workshop|session|conference|summit|meetup|booth|stand|regist|dinner"
    r"|roundtable|masterclass|course|training|office|visit"
)
_FOLLOW_UP_SUPPORT = _MEETING_SUPPORT + r"|webinar|demo|discuss|email|repl|request|trial|download|regist"
_CUSTOMER_SUPPORT = (
    r"customer|client|partner|\buser|subscri|contract|relationship|account manager|csm|agreement"
)
RELATIONSHIPS: tuple[ClaimPattern, ...] = (
    *phrasings(
        "meeting",
        r"\b(?:we|i|our team)(?: (?:have|ve|had|just|recently|briefly|finally|first|already|once|last))*"
        r" (?:met|spoke|talked|chatted|connected|caught up|crossed paths|sat down|had (?:a |our )?(?:call"
        r"|chat|meeting|coffee|lunch|conversation))\b",
        r"\b(?:great|good|nice|lovely|a pleasure|pleasure|fun|wonderful|fantastic|glad|happy) (?:to )?"
        r"(?:have )?(?:met|meet|meeting|speak|speaking|spoken|talk|talking|chat|chatting|catch up|catching up"
        r"|connect|connecting|connected|reconnect|reconnecting) (?:with |to )?(?:you|your team|thisaccount"
        r"|the thisaccount team|the team|everyone|all of you)\b",
        support=_MEETING_SUPPORT,
        unless_before=CONDITIONAL,
    ),
    # Seen somewhere: a meeting, or an event the CRM says they attended.
    *phrasings(
        "seen_at",
        r"\b(?:met|meeting|saw|see|seeing|seen|ran into|bumped into|catching|caught|catch) (?:up )?(?:with )?"
        r"(?:you|your team|the team|thisaccount|the thisaccount team|you all|you both) (?:at|during|in|last"
        r"|yesterday|on|earlier|again|back)\b",
        support=_MEETING_SUPPORT + "|" + _EVENT_SUPPORT,
        unless_before=CONDITIONAL,
    ),
    *phrasings(
        "meeting",
        r"\b(?:our|my) (?:(?:recent|last|previous|earlier|great|quick|brief|lovely|productive|good) ){0,2}"
        r"(?:call|calls|meeting|meetings|chat|chats|conversation|conversations|discussion|discussions|sync"
        r"|catch up|coffee|lunch|dinner|exchange|correspondence)\b"
        r"(?! (?:library|libraries|recordings?|intelligence|analytics|data|insights|coaching|scoring|software"
        r"|platform|tools?|center|centre|widget|bot|ai|transcripts?|reviews?|tracking|volume|scripts?|flow"
        r"|templates?|rooms?|notes? taker)\b)",
        r"\b(?:the|your) (?:recent|last|previous|earlier) (?:call|meeting|chat|conversation|session|sync)\b",
        r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|yesterday|last week) s"
        r" (?:call|meeting|chat|conversation|session|sync|demo|coffee|lunch)\b",
        support=_MEETING_SUPPORT,
        unless_before=r"\b(?:book|request|schedule|join|start|try|get|grab|take|hop on|jump on)\b"
        r"(?: [^\W_]+){0,2} $",
    ),
    *phrasings(
        "follow_up",
        r"\bas (?:we |i )?(?:discussed|agreed|mentioned|promised)\b",
        r"\b(?:great|good|nice|lovely|glad|happy) to (?:reconnect|catch up again|meet again|see you again"
        r"|be back in touch)\b",
        r"\bfollow(?:ing)? up (?:on|from|after|to) (?:our|my|the|your)\b",
        r"\bfollowing up\b",
        r"\bcircling back\b",
        r"\btouch(?:ing)? base again\b",
        r"\btouching base\b",
        r"\breconnect(?:ing|ed)? with (?:you|your|thisaccount|the thisaccount)\b",
        r"\bchecking back in\b",
        r"\bper our (?:call|conversation|chat|meeting|discussion|email|exchange|last)\b",
        r"\bsince we last\b",
        r"\blast time we (?:met|spoke|talked|chatted|caught up|connected)\b",
        r"\bwhen we (?:last )?(?:met|spoke|talked|chatted)\b",
        r"\b(?:picking up )?where we left off\b",
        support=_FOLLOW_UP_SUPPORT,
        unless_before=CONDITIONAL,
    ),
    *phrasings(
        "request",
        r"\byour (?:(?:recent|free|product|last) )?(?:demo|trial|pilot|poc|proof of concept|evaluation"
        r"|sign ?up|registration|request|inquiry|enquiry|download|rsvp|form submission|booking)\b",
        support=_REQUEST_SUPPORT,
        unless_before=r"\b(?:book|request|get|start|schedule|claim|grab|begin|try|take|launch|set up|plan"
        r"|extend|see)\b(?: [^\W_]+)? $",
    ),
    *phrasings(
        "request",
        r"\byou (?:(?:recently|just|already|kindly) )?(?:requested|booked|asked for|signed up|registered"
        r"|downloaded|subscribed|filled (?:in|out)|started (?:a|your) (?:free )?trial|reached out"
        r"|contacted us"
        r"|got in touch|wrote to us|emailed|replied|responded|inquired|enquired|asked about|asked us"
        r"|submitted|rsvped|rsvp d)\b",
        r"\bthanks? (?:you )?(?:again |so much |very much )?for (?:requesting|booking|signing up|registering"
        r"|downloading|your (?:interest"
        r"|time|request|reply|email|message|note|inquiry|enquiry|order|call|questions?|feedback|rsvp)"
        r"|reaching out|getting in touch|the (?:call|chat|meeting|conversation|demo|intro|introduction|time)"
        r"|meeting|taking the time|attending|joining|coming|stopping by|connecting|subscribing|replying"
        r"|responding|chatting|talking|speaking|hopping on)\b",
        r"\byour interest in (?:our|us)\b",
        support=_REQUEST_SUPPORT,
        unless_before=CONDITIONAL,
    ),
    *phrasings(
        "event",
        r"\b(?:webinar|event|workshop|session|conference|summit|meetup|roundtable|dinner|breakfast"
        r"|masterclass|training|course|booth|panel|live stream|livestream) (?:that )?you (?:(?:recently"
        r"|just) )?"
        r"(?:attended|joined|registered for|signed up for|went to|came to|were at|visited|spoke at"
        r"|dropped into)\b",
        rf"\byou (?:(?:recently|just|also) )?(?:attended|joined us|joined our|came to|went to|were at"
        rf"|registered for|signed up for|stopped by|dropped by|visited) (?:(?:our|my|the"
        rf"|a) )?(?:{WORD} ){{0,2}}?"
        r"(?:webinar|event|workshop|session|conference|summit|meetup|roundtable|dinner|breakfast|masterclass"
        r"|training|course|booth|stand|panel|office|demo day|livestream|live stream)\b",
        r"\b(?:stopped|dropped|came) by (?:our|the) (?:booth|stand)\b",
        support=_EVENT_SUPPORT,
        unless_before=CONDITIONAL,
    ),
    *phrasings(
        "working_together",
        r"\b(?:work|working|worked|partner|partnering|partnered|collaborat\w*|team(?:ing)? up|teamed up)"
        r" (?:together |with (?:[^\W_]+ ){1,4}?)?again\b",
        r"\b(?:continue|continuing|keep|resume|resuming) (?:our |working |partnering |the )(?:work|working"
        r"|partnership|relationship|collaboration|together)\b",
        r"\b(?:our|the) (?:ongoing|continued|long|longstanding|long standing|long term|existing|current"
        r"|continuing|past|previous|prior|great|close|strong) (?:relationship|partnership|collaboration"
        r"|engagement|work together|working relationship)\b",
        r"\b(?:we|i)(?: (?:have|ve|had|already|once|previously))* (?:worked|partnered|collaborated|teamed up)"
        r" (?:together|with (?:you|your|thisaccount|the))\b",
        r"\bour work (?:together|with you|with thisaccount)\b",
        r"\b(?:great|good|nice|glad|happy|excited|thrilled|a pleasure|pleasure|fun|lovely) to (?:be )?"
        r"(?:work|working|partner|partnering|collaborat\w*|team up|teaming up) (?:with|alongside)\b",
        support=r"work|project|partner|customer|client|collaborat|contract|engag",
        unless_before=CONDITIONAL,
    ),
    *phrasings(
        "customer_or_partner",
        r"\bas (?:a |an |one of (?:our )?)?(?:(?:our|valued|trusted|close|long ?time|longtime|longstanding"
        r"|strategic|key|existing|current|loyal) )+(?:partners?|customers?|clients?)\b",
        r"\b(?:you re|you are|you ve been|you have been|thisaccount is|thisaccount s|thisaccount has been"
        r"|they re|they are) (?:already |long been |been )?(?:one of )?(?:our|a|an) (?:(?:valued|existing"
        r"|current|loyal|trusted|long ?time|longtime|close|strategic) )?(?:customers?|clients?|partners?"
        r"|users?)\b",
        r"\b(?:our|a) (?:(?:valued|existing|current|loyal|trusted|long ?time|longtime) )?(?:customer|client"
        r"|partner)s? (?:since|for (?:years|many years|a while|over|more than))\b",
        r"\b(?:our|your) (?:partnership|account manager|customer success manager|csm|contract|agreement"
        r"|relationship|account team|success manager)\b",
        support=_CUSTOMER_SUPPORT,
        unless_before=CONDITIONAL,
    ),
    # "As partners, we ..." claims it; "treat new reps as partners" does not.
    *phrasings(
        "customer_or_partner",
        r"\bas (?:partners|customers|clients)\b",
        support=_CUSTOMER_SUPPORT,
        unless_before=r"\b(?!(?:you|thisaccount|team|we|us|together)\b)[^\W_]+ $",
    ),
)


_WATCHED_SUBJECT = (
    r"(?:(?:you|your (?:team|colleagues|people|reps|folks|coworkers|co workers|company|buyers|sales team"
    r"|leadership|teammates?)|someone|somebody|people|folks|a few (?:people|folks|of you|colleagues"
    r"|of your colleagues)|several (?:people|colleagues|of you)|thisaccount|the thisaccount team|visitors?"
    r"|a colleague|a teammate)(?: (?:from|at|on|in) (?:thisaccount|your team|your company))?)"
)
# Someone else at the account, told to the reader: even a download the CRM knows of is surveillance.
_SOMEONE_ELSE = (
    r"(?:someone|somebody|people|folks|a colleague|a teammate|your (?:colleagues?|teammates?|boss|manager"
    r"|ceo|cfo|cro|vp|team)|a few (?:people|folks|colleagues)|several (?:people|colleagues))"
    r"(?: (?:from|at|on|in) (?:thisaccount|your team|your company))?"
)
_WATCHED_AUX = (
    r"(?: (?:re|are|were|was|have|ve|has|had|s|been|just|recently|already|also|again|still|clearly|kept"
    r"|keep|seem to|seem to have))*"
)
_BROWSED = (
    r"(?:on|visit|visits|visited|visiting|brows\w*|reading|read|viewing|viewed|views|check(?:ed|ing|s)? out"
    r"|look(?:ed|ing|s)? (?:at|around|through|over)|explor\w*|research\w*|compar\w*|spen[dt]\w* (?:some "
    r"|a lot"
    r" of |much |more |a bit of |quite a bit of )?time (?:on|with|in)|land(?:ed|ing|s)? on"
    r"|click(?:ed|ing|s)?(?: on| through)?|open(?:ed|ing|s)?|came (?:to|back to|across)|coming (?:to|back to)"
    r"|return\w* to|poking around|hanging around|dig(?:ging)? (?:into|through)|dug (?:into|through)|watch\w*"
    r"|scroll\w*(?: through)?|engag\w* with|interact\w* with|stopp?(?:ed|ing) by|dropp?(?:ed|ing) by|studying"
    r"|studied|reviewing|reviewed)"
)
_OUR_PAGES = (
    rf"(?:our|my|the|this) (?:{WORD} ){{0,2}}?(?:site|website|web site|page|pages|pricing|blog|docs"
    r"|documentation|emails?|newsletters?|content|ads?|case stud(?:y|ies)|product tour|careers|integrations"
    r"|features|resources|resource center|homepage|home page|landing page|videos?|comparison|guides?"
    r"|playbooks?|ebooks?|whitepapers?|reports?|articles?|posts?)\b"
)
# "Once you've read our guide, ...": advice about what the reader may do, not what they did.
_BEFORE_OR_AFTER = r"\b(?:if|once|when|whenever|while|after|before|as soon as|until|unless)\b"
TRACKING: tuple[ClaimPattern, ...] = (
    *phrasings(
        "watched",
        rf"\b{_WATCHED_SUBJECT}{_WATCHED_AUX} {_BROWSED} {_OUR_PAGES}",
        unless_before=_BEFORE_OR_AFTER,
    ),
    *phrasings(
        "watched",
        r"\bthanks? (?:you )?for (?:spending time on|checking out|browsing|reading|coming back to"
        r"|returning to"
        rf"|revisiting|clicking (?:on|through)?|opening) {_OUR_PAGES}",
        rf"\bwelcome back to {_OUR_PAGES}",
        rf"\b{_SOMEONE_ELSE}{_WATCHED_AUX} (?:downloaded|downloading|requested|signed up for|registered for)"
        rf" {_OUR_PAGES}",
    ),
)
TRACKING += phrasings(
    "watched",
    r"\b(?:we|i|our team|our (?:systems?|tools?|data|analytics))(?: (?:ve|have|had|just|recently|also|could"
    r"|can|did))* (?:saw|seen|see|noticed|notice|spotted|spot|caught|observed|detected|registered|clocked"
    rf"|tracked|logged|picked up on)(?: that)? {_WATCHED_SUBJECT}{_WATCHED_AUX} (?:{_BROWSED} {_OUR_PAGES}"
    r"|(?:browsing|checking out|looking around|researching|comparing|interested in|in the market|came back"
    r"|coming back|returning|spending time|hanging around|poking around|lurking)\b)",
    r"\byour (?:(?:recent|latest|last|many|several|repeated|frequent|multiple|\d+|two|three|four|five) )?"
    rf"(?:visits?|browsing|reading|clicks?|sessions?|page ?views?|time|activity|searches|search) (?:to|on|of"
    rf"|in|with|across|around) {_OUR_PAGES}",
    r"\byour (?:browsing|reading|search|web|online|site|website|click|clickstream|engagement|intent|buying"
    r"|research) (?:history|activity|behaviou?r|habits|data|signals?|patterns?|sessions?|trail|footprint)\b",
    rf"\bbased on (?:your|what you|the pages you|how you|which pages you) (?:{WORD} ){{0,3}}?(?:visits?"
    r"|visited|browsing|browsed|activity|read|reading|viewed|clicks?|clicked|looked at|searches|searched"
    r"|downloads?|downloaded|interest|interests|behaviou?r)\b",
    r"\b(?:our|the|my) (?:records|data|analytics|tracking|logs|intent data|ip data|pixel|signals|systems?"
    r"|tools?) (?:show|shows|showed|tell|tells|told|suggest|suggests|suggested|indicate|indicates|indicated"
    r"|say|says|said|flag|flags|flagged|picked up|caught)(?: that| us| me)? (?:you|your (?:team|colleagues"
    r"|company)|thisaccount|someone|people from|folks from|a visitor)\b",
    r"\b(?:we|i|our team)(?: (?:ve|have|had|re|are|am|m))?(?: been)? (?:tracking|watching|following"
    r"|monitoring"
    r"|keeping (?:an eye|tabs) on) (?:you|your|thisaccount)\b",
    r"\b(?:you|your team)(?: ve| have| re| are)?(?: been)? (?:showing|shown|showed) (?:(?:some|a lot of|real"
    r"|strong|a strong) )?interest in\b",
    r"\b(?:noticed|saw|see|seeing|spotted|noticing|detected) (?:(?:a lot of|some|a spike in|more|increased"
    r"|a surge in|a burst of) )?(?:activity|traffic|visits|interest|engagement|clicks|views) from (?:you"
    r"|your|thisaccount|the thisaccount|people at|folks at|someone at)\b",
    r"\b(?:you|your team)(?: ve| have)?(?: been)? (?:here|back) (?:before|again|\d+ times|a few times"
    r"|several times|twice|three times|multiple times)\b",
    r"\b(?:\d+|two|three|four|five|six|several|multiple|many|a few) (?:times|visits) (?:to|on) (?:our|the"
    rf"|this) (?:{WORD} )?(?:site|website|page|pages|pricing|blog)\b",
)
