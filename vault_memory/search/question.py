"""What a question asks, read from its words: pure, English, no model.

    asks_how_things_are(q)   how things are now, or what happened then (newest first answers the first)
    asks(q)                  it asks something (a question), rather than saying something or asking for
                             something to be done: its first hit is what it asks for (ranking.marks)
    asks_for_work(q)         it asks for something to be done ("Write ...", "...; fix the JSX"): a name
                             no note mentions does not silence its block (prefetch)
    asked_spans(q)           what it asks: its clauses that ask, and the question a request asks to
                             have answered (search/days.py reads "two weeks ago" there)
    names_in(q)              the names it asks about ("Kubernetes", "SQLite", 'Sapiens'): when the vault
                             never mentions one, nothing in it answers (recall.rank_query: all weak)
    asks_price(q)            it asks what something cost; unstated_price(q, texts) when none of
                             `texts` (its first hits) states a price: then nothing in the vault
                             answers (recall.rank_query: all weak)

How things are, or what happened:

Newest first between two statements of one fact (ranking.newest_first) answers "how are things
now": "where do I keep my old sneakers", "how many trips have I taken my camera on", "am I still
doing the running plan", "what's the latest on the crib". It does not answer "what happened then":
"what did I get for my first Father's Day", "how much was the check around Christmas", "who
offered to pay for the crib" ask about one event, and the note that tells it is the answer however
many later notes talk about something alike. On three people's vaults the rule fired on such
questions and moved a later, unrelated note above the answer (bench foreign, docs/ranking.md).

So a question asks how things are when it names the present ("now", "currently", "still", "these
days", "the latest", "anymore", "yet", "so far", "end up", "ever") or its first auxiliary is in
the present or a modal ("do", "does", "am", "is", "are", "have", "has", "can", "should", "will",
"what's", "I'm", "I've"). It asks what happened when its first auxiliary is in the past ("did",
"was", "were", "had") or, with no auxiliary, its first verb is ("who offered to pay", "what went
missing": a word in -ed or a common irregular past). A question with neither ("who owns the search
indexer", "which server hosts the VPN gateway") asks how things are: the present needs no auxiliary.
The tense is read in the clauses that ask (`asked_spans`), when there are any: "After being told
the promotion probably wouldn't come until year end, what did I decide?" asks what happened.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_NOW = re.compile(
    r"\b(?:now|nowadays|currently|current|still|these days|latest|newest|most recent(?:ly)?|recently|anymore|"
    r"any more|yet|so far|up[- ]to[- ]date|end(?:ed)? up|ever|today)\b",
    re.I,
)
_PRESENT = frozenset(
    {"do", "does", "am", "is", "are", "have", "has", "can", "should", "will", "would", "could", "may", "might", "must"}
)
_PAST = frozenset({"did", "was", "were", "had"})
#: Past forms of common verbs that do not end in -ed ("who got me my job", "what went missing").
_IRREGULAR_PAST = frozenset(
    "ate began bought brought broke built came caught chose drank drove fell felt flew forgot found gave got "
    "grew heard held kept knew led left lost made meant met paid ran said sang sat saw sent showed sold spent "
    "stood stole taught thought told took understood went woke won wore wrote".split()
)
#: "'s" is "is" after these ("what's", "it's"); after a name it is a possessive ("the baby's crib")
_IS_AFTER = frozenset(
    {"what", "who", "where", "when", "how", "why", "which", "that", "there", "here", "it", "he", "she"}
)
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def asks_how_things_are(question: str) -> bool:
    """Whether `question` asks how things are (the module docstring), not what happened: read in
    what it asks (`asked_spans`) when a clause of it asks, not in what leads up to that ("After
    being told the promotion probably wouldn't come until year end, what did I decide?" asks what
    happened; stop 71)."""
    if _NOW.search(question):
        return True
    spans = asked_spans(question)
    return _tense_is_present(" ".join(spans) if spans else question)


def _tense_is_present(question: str) -> bool:
    """Whether the first auxiliary, else the first verb, of `question` is in the present."""
    words = [w.partition("'") for w in _WORD.findall(question.lower().replace("’", "'"))]
    for base, _, tail in words:
        if tail == "t":  # "don't", "won't", "didn't", "wasn't"
            base = {"don": "do", "won": "will", "can": "can"}.get(base, base.removesuffix("n"))
        if base in _PRESENT or tail in ("m", "re", "ve"):
            return True
        if tail == "s" and base in _IS_AFTER:
            return True
        if base in _PAST:
            return False
    return not any(_past_verb(base) for base, _, tail in words if not tail)


#: The words a question opens with: a question word or an auxiliary put first ("is it true that ...").
_QUESTION_WORDS = frozenset("what who whom whose where when why how which what's who's where's when's how's".split())
_ASKING_OPENERS = _QUESTION_WORDS | _PRESENT | _PAST | {"isn't", "aren't", "don't", "doesn't", "didn't", "wasn't"}
_ASKING_OPENERS |= {"weren't", "can't"}
_SENTENCE = re.compile(r"[^.!?;:]+")
_CLAUSE = re.compile(r"[^.!?;:,]+")


def _openings(text: str) -> list[list[str]]:
    """The first two words of each sentence or clause of `text` (after "." "?" "!" ";" ":"), lowercased."""
    return [_WORD.findall(m.group())[:2] for m in _SENTENCE.finditer(text.lower().replace("’", "'"))]


def _clauses(text: str) -> list[tuple[str, list[str], str]]:
    """Each sentence or clause of `text` (after "." "?" "!" ";" ":" and ","), as written, with its
    words (lowercased) and the mark that ends it ("" at the end of the text)."""
    return [
        (m.group(), _WORD.findall(m.group().lower().replace("’", "'")), text[m.end() : m.end() + 1])
        for m in _CLAUSE.finditer(text)
    ]


def asked_spans(text: str) -> list[str]:
    """What `text` asks about, as written, clause by clause (after "." "?" "!" ";" ":" and ","):
    - a clause that asks: one that opens with a question word ("who did I go with to the music
      event last Saturday", and "what did I do yesterday" of "Remind me, what did I do yesterday?"),
      or with an auxiliary and ends with "?" ("Did I make it to the gym yesterday?"; without the
      mark, "was just at the gym yesterday" and "Had some bumps though - last Friday ..." are a
      chat's narration);
    - in a request, what follows its question word, the question it asks to have answered
      ("Summarise what I did on the thesis three days ago", "remind me what we found out the day
      before yesterday").
    Not "I went hiking yesterday" of "I went hiking yesterday, what should I eat?", nor a request
    with no question in it ("diff develop from a week ago", "List the branches I was on yesterday")."""
    out = []
    for clause, words, mark in _clauses(text):
        if words and (words[0] in _QUESTION_WORDS or words[0] in _ASKING_OPENERS and mark == "?"):
            out.append(clause)
            continue
        verb = words[1:2] if words[:1] == ["please"] else words[:1]
        if verb and verb[0] in _WORK_VERBS and (w := _EMBEDDED.search(clause)):
            out.append(clause[w.start() :])
    return out


_EMBEDDED = re.compile(r"\b(?:what|which|who|whom|whose|where|when|how)\b", re.I)


def asks(text: str) -> bool:
    """Whether `text` asks something (a question mark, or a sentence that opens with a question word
    or an auxiliary: "what did I set up for Cypress", "is it true that ..."), rather than asking for
    something to be done ("Write the program note for our jazz night") or saying something."""
    return "?" in text or any(words and words[0] in _ASKING_OPENERS for words in _openings(text))


#: Verbs that open a request to get something done ("Write the program note ...", "Help me plan ...",
#: "fix the JSX"): the imperatives people use with an assistant, not read off any vault's turns.
_WORK_VERBS = frozenset(
    """add analyse analyze build calculate change check choose collect combine compare compose compute
    configure confirm convert copy create debug delete deploy describe design dig draft edit email estimate
    explain export extract fetch file fill find finish fix format gather generate get give grab group help
    implement import install label list look make merge move name note order organise organize outline
    parse pick plan port post prepare print pull put queue recommend refactor remind remove rename replace
    reply rewrite run save schedule search send set share show sketch sort split start suggest summarise
    summarize tag tell test text track translate turn update upload use validate verify write""".split()
)


def asks_for_work(text: str) -> bool:
    """Whether `text` asks for something to be done: one of its sentences (or clauses after ";" or
    ":") opens with a verb of a request, "please" aside ("Write a short explainer on the Nile dispute",
    "I need to pass currentUser into this Route; fix the JSX")."""
    for words in _openings(text):
        if words[:1] == ["please"]:
            words = words[1:]
        if words and words[0] in _WORK_VERBS:
            return True
    return False


def _past_verb(word: str) -> bool:
    """`word` reads as a verb in the past: "offered", "tipped", "went" (not "need", "speed")."""
    return word in _IRREGULAR_PAST or len(word) > 4 and word.endswith("ed") and not word.endswith("eed")


#: Words a question capitalises that name nothing: the question's own words and "I".
_NOT_NAMES = frozenset(
    {
        "i",
        "i'm",
        "i've",
        "i'd",
        "i'll",
        "what",
        "who",
        "whom",
        "whose",
        "where",
        "when",
        "why",
        "how",
        "which",
        "do",
        "does",
        "did",
        "is",
        "are",
        "was",
        "were",
        "can",
        "could",
        "should",
        "would",
        "will",
        "have",
        "has",
        "had",
        "am",
        "my",
        "the",
        "a",
        "an",
        "in",
        "on",
        "at",
        "for",
        "and",
        "or",
        "to",
        "of",
        "help",
        "please",
        "write",
        "draft",
        "give",
        "tell",
        "show",
        "remind",
        "set",
    }
)
#: ... nor do the names of months and weekdays: a day is asked for by its date (search/days.py), and a
#: vault of ISO-named daily notes never writes "October".
_CALENDAR = re.compile(
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)"
    r"(?:uary|ruary|ch|il|e|y|ust|tember|ober|ember|day|sday|nesday|rsday|urday)?",
    re.I,
)
_TOKEN = re.compile(r"[\w][\w'’.-]*[\w]|[\w]")
#: Two or three capitals: an abbreviation ("UI", "FAQ", "SSO", "ETH"), which a note spells out as
#: often as it writes it: a vault that never writes "FAQ" may still answer "write the Agora FAQ
#: answer to 'what is a backlink?'" (stop 57: the four such names in ten question files per vault
#: each silenced a question the vault answers, and no question it does not).
_ABBREVIATION = re.compile(r"[A-Z]{2,3}")
_POSSESSIVE = re.compile(r"['’]s$")


def _word(m: re.Match[str]) -> str:
    """A token of the question as a word: without a possessive "'s" and the dots and quotes around it."""
    return _POSSESSIVE.sub("", m.group()).strip(".'’")


def names_in(question: str) -> list[str]:
    """The names a question asks about: its words that begin with a capital letter, or hold one after
    their first letter ("iPad", "SQLite"), except at the start of a sentence and its question words;
    each once, in order. "How do I set up a Kubernetes ingress" names Kubernetes. A word that begins
    with a digit is a quantity, not a name: "bump the JVM max heap to 2GB" names no "2GB", and a
    vault that writes `-Xmx2g` answers it (stop 51, the fourth question file for jbranchaud-til).
    Nor is an abbreviation of two or three capitals ("JVM", "FAQ": `_ABBREVIATION`)."""
    out: list[str] = []
    start = True
    for m in _TOKEN.finditer(question):
        word = _word(m)
        named = word[:1].isalpha() and (word[0].isupper() and not start or any(c.isupper() for c in word[1:]))
        if (
            named
            and word.lower() not in _NOT_NAMES
            and not _CALENDAR.fullmatch(word)
            and not _ABBREVIATION.fullmatch(word)
            and word not in out
        ):
            out.append(word)
        start = question[m.end() : m.end() + 2].startswith((". ", "? ", "! ", ": "))
    return out


#: Endings a name takes as a word of the sentence ("I'm SSHing into the box", "we Dockerized it"):
#: FTS5's Porter stemmer drops them only after a vowel, so "SSHing" is no form of "SSH" there.
_INFLECTIONS = ("ing", "ed", "es", "s")


def name_forms(name: str, question: str = "") -> list[str]:
    """The ways a note may write a name the question inflects: the name itself, then the name without
    its ending when at least three letters are left ("SSHing" -> "SSH"), then, when `question` names
    it beside another name, the two (and any word between them) written as one word: a handle, a
    file name or a URL writes "Norman Chella" as `normanchella`, "Mehr als Wohnen" as `Mehralswohnen`."""
    low = name.lower()
    ending = next((e for e in _INFLECTIONS if low.endswith(e) and len(name) - len(e) >= 3), None)
    forms = [name] if ending is None else [name, name[: -len(ending)]]
    return forms + [j for j in _joined(name, question) if j not in forms]


def _joined(name: str, question: str) -> list[str]:
    """`name` joined with the names next to it in `question` (at most one word between), as one word."""
    if not question:
        return []
    words = [_word(m) for m in _TOKEN.finditer(question)]
    # a name's neighbour may open the sentence ("Norman Chella just pinged me")
    capital = [bool(w) and w[0].isupper() and w.lower() not in _NOT_NAMES for w in words]
    out: list[str] = []
    for i, w in enumerate(words):
        if w != name:
            continue
        for a, b in ((i - 2, i), (i - 1, i), (i, i + 1), (i, i + 2)):
            if 0 <= a and b < len(words) and capital[a] and capital[b]:
                joined = "".join(words[a : b + 1])
                if joined not in out:
                    out.append(joined)
    return out


#: A question that asks a price: "How much did we pay for the glider", "what does it cost per
#: month", "what's the membership fee", "how much was the scooter" (a thing is what "how much is"
#: asks about; a person or "there" is not a thing: "how much was I sleeping", "how much is there
#: left"). Not "how much flour", "how many", "how long": a quantity, a list or a span is answered
#: in words as often as in figures.
_ASKS_PRICE = re.compile(
    r"\bhow much\b.*\b(?:pay|paid|payment|cost|costs|costing|price|priced|fee|fees|rent|bill|charge|charged"
    r"|spend|spent|earn|earned|salary|worth|go for|went for|sell|sold|owe|tip|donated?|give|gave)\b"
    r"|\b(?:what|what's|which)\b.*\b(?:price|cost|fee|rent|salary)\b"
    r"|\bhow much (?:is|was|are|were)\b(?! (?:i|you|we|he|she|they|it|there)\b)",
    re.I,
)
#: A price as notes write one: a currency and a number ("$40", "25 euros", "CHF 120", "₹500",
#: "300 kr"). Not "free", which notes use for anything ("rent free", "first week is free", "free
#: tickets").
_CURRENCY_SIGNS = "$€£¥₹₩₽₺₪฿₫₱₦"
_CURRENCY_CODES = "usd|eur|chf|gbp|jpy|cny|inr|cad|aud|nzd|sek|nok|dkk|pln|brl|mxn|sfr"
_CURRENCY_WORDS = "dollars?|bucks|euros?|francs?|pounds?|cents?|yen|yuan|rupees?|pesos?|reais|kr|kronor|kroner|zloty"
_PRICE = re.compile(
    rf"[{_CURRENCY_SIGNS}]\s?\d|\d\s?[{_CURRENCY_SIGNS}]"
    rf"|\b\d[\d,.]*\s?(?:k\b\s?)?(?:{_CURRENCY_WORDS}|{_CURRENCY_CODES})\b|\b(?:{_CURRENCY_CODES})\s?\d",
    re.I,
)


def asks_price(question: str) -> bool:
    """It asks what something cost, was paid or is charged: "How much did the deep freezer cost
    me?"; not "What time zone is Ding in?" nor "How much flour goes into the challah?"."""
    return _ASKS_PRICE.search(question) is not None


def states_price(text: str) -> bool:
    """It states a price: a currency and a number."""
    return _PRICE.search(text) is not None


def unstated_price(question: str, texts: Sequence[str]) -> bool:
    """`question` asks a price (`asks_price`) and none of `texts`, the chunks that ranked its first
    hits, states one. "How much did I pay for the deep freeze I picked up at Menards?" of a vault
    whose notes on the freezer never give a price is answered by none of them, however close their
    words are: near misses that name what the vault talks about and ask what it never says."""
    return asks_price(question) and not any(states_price(t) for t in texts)


__all__ = [
    "asked_spans",
    "asks",
    "asks_for_work",
    "asks_how_things_are",
    "asks_price",
    "name_forms",
    "names_in",
    "states_price",
    "unstated_price",
]
