"""Whether a question asks how things are, or what happened: pure, English, no model.

Newest first between two statements of one fact (ranking.newest_first) answers "how are things
now": "where do I keep my old sneakers", "how many trips have I taken my camera on", "am I still
doing the running plan", "what's the latest on the crib". It does not answer "what happened then":
"what did I get for my first Father's Day", "how much was the check around Christmas", "who
offered to pay for the crib" ask about one event, and the note that tells it is the answer however
many later notes talk about something alike. On three people's vaults the rule fired on such
questions and moved a later, unrelated note above the answer (bench foreign, docs/ranking.md).

So a question asks how things are when it names the present ("now", "currently", "still", "these
days", "the latest", "anymore", "yet", "so far", "end up", "ever") or its first auxiliary is in
the present ("do", "does", "am", "is", "are", "have", "has", "can", "what's", "I'm", "I've"); a question
whose first auxiliary is in the past ("did", "was", "were", "had"), or that has none ("who offered
to pay"), asks what happened.
"""

from __future__ import annotations

import re

_NOW = re.compile(
    r"\b(?:now|nowadays|currently|current|still|these days|latest|newest|most recent(?:ly)?|recently|anymore|"
    r"any more|yet|so far|up[- ]to[- ]date|end(?:ed)? up|ever|today)\b",
    re.I,
)
_PRESENT = frozenset({"do", "does", "am", "is", "are", "have", "has", "can"})
_PAST = frozenset({"did", "was", "were", "had"})
#: "'s" is "is" after these ("what's", "it's"); after a name it is a possessive ("the baby's crib")
_IS_AFTER = frozenset(
    {"what", "who", "where", "when", "how", "why", "which", "that", "there", "here", "it", "he", "she"}
)
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def asks_how_things_are(question: str) -> bool:
    """Whether `question` asks how things are (the module docstring), not what happened."""
    if _NOW.search(question):
        return True
    for word in _WORD.findall(question.lower().replace("’", "'")):
        base, _, tail = word.partition("'")
        if base in _PRESENT or tail in ("m", "re", "ve") or (tail == "s" and base in _IS_AFTER):
            return True
        if base in _PAST:
            return False
    return False


__all__ = ["asks_how_things_are"]
