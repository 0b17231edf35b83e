"""The one-candidate rule: collect what an answer names, drop what it rejects, read the one left.

Every reader of ``paravt.rewards.answers`` (options, spans) finds the places where the answer
names a candidate (:class:`Mention`) and hands them to :func:`committed`: mentions of the same
candidate merge, the ones the answer **rejects** are dropped, and exactly one candidate left is
the answer; none, or two or more, is no answer (docs/ANSWERS.md, "One candidate").

**Rejection is negation with its scope** (docs/ANSWERS.md, "Rejection"):

- a *negator* before the candidate, with nothing between them but a few words that carry no
  content of their own (*be*, *it*, *the answer*, *choose*, *think*, an article or a copula):
  ``not B``, ``It can't be B``, ``I don't think it's B``, ``B, nicht C``, ``pas C``, ``не C``,
  ``不是C``; its scope runs on over candidates joined to the first by *or*/*and*/*nor* or a
  slash (``neither A nor B``, ``not A or B``);
- a *rejecting predicate* after the candidate and the candidates coordinated with it (``and``,
  ``or``, commas, a slash): a copula, up to three modifiers and a word that says it is wrong
  (``A is wrong``, ``B is the wrong answer``, ``A and C would be incorrect``, ``B ist falsch``,
  ``C 不对``), or a negated *right* (``B is not the answer``, ``B can't be it``);
- a double negative (``C is not wrong``) rejects nothing.

The negators and the words that say "wrong" are read in English, German, French, Spanish,
Italian, Portuguese, Dutch, Polish, Russian, Ukrainian, Chinese and Japanese; a rejection in
another language is not seen, so the candidate stays and the answer names two: no answer, never
a guess (refusing is never a hedge's gain).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Mention", "committed", "rejected"]


@dataclass(frozen=True)
class Mention:
    """One place where the answer names a candidate: ``key`` is the candidate (an option index,
    a span), ``start``/``end`` its characters in the read text."""

    start: int
    end: int
    key: Any


_NEGATOR = (
    # English, with the negated auxiliaries written as one word
    r"not|no|never|nor|neither|except|excluding|besides|unlike|without|than|instead\s+of"
    r"|cannot|(?:is|are|was|were|do|does|did|ca|can|could|wo|would|should|must|has|have|had)n['’]t"
    # German, French, Spanish, Italian, Portuguese, Dutch, Polish, Russian, Ukrainian
    r"|nicht|kein|keine|keinen|nie|niemals|außer|ausser|statt|anstatt|ohne"
    r"|pas|non|jamais|sauf|hormis|ni|ni|nunca|excepto|salvo|sin|mai|tranne|senza|né"
    r"|não|nem|exceto|sem|niet|geen|behalve|zonder|oprócz|bez"
    r"|не|нет|ни|кроме|без|вместо|ні|крім"
)
# Words that may stand between a negator and the candidate it negates: they carry no content of
# their own (a copula, an article, "the answer", "choose", "I think"), so the negation reaches on.
_BRIDGE = (
    r"be|is|it|it['’]s|its|that|that['’]s|this|the|a|an|answer|option|choice|choose|pick|select"
    r"|say|think|believe|going|to|definitely|certainly|clearly|surely"
    r"|es|ist|est|c['’]est|è|é|sein|être|ser|essere|la|le|el|die|der|das|antwort|réponse"
    r"|respuesta|risposta|resposta|opción|opzione|opção|это|ответ|вариант"
)
_REJECT_BEFORE = re.compile(
    rf"(?:(?i:(?<![^\W_])(?:{_NEGATOR})(?![^\W_]))|不是|并非|排除|而非|除了|非|不)"
    rf"(?:\s+(?i:(?:{_BRIDGE})(?![^\W_]))){{0,3}}"
    r"[\s\"'“”‘’(\[]*(?i:(?:option|choice|the\s+span)\s*)?[\s(\[]*$"
)
# The words that say a candidate is wrong, after a copula: English first, then German, French,
# Spanish, Italian, Portuguese, Dutch, Polish, Russian.
_WRONG = (
    r"wrong|incorrect|false|impossible|unlikely|excluded|eliminated|ruled\s+out|invalid|mistaken"
    r"|a\s+distractor|distractors|out"
    r"|falsch|unrichtig|ausgeschlossen|faux|fausse|incorrecte|exclue?|incorrect[oa]|fals[oa]"
    r"|equivocad[oa]|errad[oa]|descartad[oa]|sbagliat[oa]|errat[oa]|fout|onjuist|błędn\w*"
    r"|nieprawidłow\w*|неверн\w*|неправильн\w*|ошибочн\w*|исключ\w*|хибн\w*"
)
_COPULA = (
    r"is|are|was|were|seems?|looks?|appears?|sounds?"
    r"|(?:would|must|can|could|should|will|may|might)\s+be|['’]s"
    r"|ist|sind|war|wäre|est|sont|serait|es|son|sería|era|è|sono|sarebbe|é|são|seria|jest|это"
)
_MODIFIER = (
    r"the|a|an|definitely|clearly|obviously|certainly|surely|probably|likely|also|simply|plainly"
    r"|totally|completely|entirely|just|very|quite|all|both|der|die|das|la|le|el|une?|eine?"
)
_RIGHT = (
    r"it|right|correct|true|the\s+(?:right\s+|correct\s+)?answer|possible|shown|what|the\s+case"
)
_REJECT_AFTER = re.compile(
    r"[\s)\]\"'”’]*(?:"
    rf"(?i:(?:(?:{_COPULA})|\s*[—:-])?(?:\s+(?:{_MODIFIER})){{0,3}}\s*(?:{_WRONG})(?![^\W_]))"
    rf"|(?i:(?:is|are|was|were|can|could|would|must|will|should)\s*(?:not|n['’]t)\s+(?:be\s+)?"
    rf"(?:(?:{_MODIFIER})\s+){{0,2}}(?:{_RIGHT})(?![^\W_]))"
    rf"|(?i:(?:cannot|can['’]t|couldn['’]t)\s+be\s+(?:{_RIGHT})(?![^\W_]))"
    r"|(?i:(?:do|does|did)(?:\s+not|n['’]t)\s+(?:match|fit|apply|show|happen|occur|appear)\b)"
    r"|(?i:(?:shows?|showed|describes?|depicts?)\s+(?:other|another|different|something\s+else)\b)"
    r"|(?i:ist\s+nicht\s+(?:richtig|korrekt|die\s+antwort)|n['’]est\s+pas\s+(?:la\s+bonne|correct"
    r"|juste|la\s+réponse)|no\s+es\s+(?:correct[oa]|la\s+respuesta)|non\s+è\s+(?:corrett[oa]"
    r"|giust[oa]|la\s+risposta)|não\s+é\s+(?:corret[oa]|a\s+resposta)|is\s+niet\s+(?:juist|goed"
    r"|correct)|nie\s+jest\s+(?:poprawn\w*|prawidłow\w*)|не\s+(?:подходит|верн\w*|правильн\w*"
    r"|ответ))"
    r"|(?:不对|不正确|错误|错|不是|可以排除|被排除|は違う|は間違い|ではない|じゃない))"
)
# What may stand between candidates that share one rejecting predicate ("A and C are wrong",
# "A, C 不对") ...
_COORDINATION = re.compile(r"[\s,/&]*(?i:(?:and|or|&|和|或|与|及)\s*)?[\s(\[\"'“‘]*$")
# ... and between candidates that one negator before them reaches ("neither A nor B", "not A or
# B"): a joining word or a slash, never a bare comma ("Not A, B" is A rejected, then B).
_LIST_JOIN = re.compile(
    r"\s*,?\s*(?:(?i:(?:or|nor|and|oder|und|ou|et|ni|né|nem|или|ни|lub|albo|of|en)(?![^\W_]))"
    r"|[/&]|和|或|与|及)\s*(?i:(?:option|choice)\s*)?[\"'“‘(\[]*$"
)


def rejected(s: str, ordered: list[Mention]) -> list[bool]:
    """For each mention (in text order): does the text explicitly reject its candidate — a
    negator before it (or before the candidates it is listed with: ``not A or B``), or a
    rejecting predicate after it and the candidates coordinated with it (``A and C are
    wrong``)? One pass each way, so a long run is linear."""
    reach = [m.end for m in ordered]  # where the run of coordinated mentions from here ends
    for i in range(len(ordered) - 2, -1, -1):
        m, nxt = ordered[i], ordered[i + 1]
        if nxt.start < m.end or _COORDINATION.match(s, m.end, nxt.start):
            reach[i] = max(m.end, reach[i + 1])
    before = [bool(_REJECT_BEFORE.search(s, max(0, m.start - 80), m.start)) for m in ordered]
    for i in range(1, len(ordered)):
        prev, m = ordered[i - 1], ordered[i]
        if before[i - 1] and m.start >= prev.end and _LIST_JOIN.match(s, prev.end, m.start):
            before[i] = True
    return [b or bool(_REJECT_AFTER.match(s, reach[i])) for i, b in enumerate(before)]


def committed(s: str, mentions: list[Mention]) -> Any:
    """The one candidate left once mentions of the same candidate are merged and the rejected
    ones dropped, or ``None``."""
    ordered = sorted(mentions, key=lambda m: (m.start, m.end))
    kept = {m.key for m, out in zip(ordered, rejected(s, ordered), strict=True) if not out}
    return kept.pop() if len(kept) == 1 else None
