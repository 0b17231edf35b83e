"""What the answer reader reads: the answer text normalised so that what looks alike reads alike.

Why one step before every reading rule: a letter written in another encoding of itself
(fullwidth ``Ｂ``, mathematical bold ``𝐁``, the circled ``Ⓑ``) or in a letter of another script
that looks the same (Cyrillic ``С``, Greek ``Β``, the Roman numeral ``Ⅽ``) was read as no letter
at all, so an honest ``Ｂ`` scored 0 and a hedge ``B or С`` read as one candidate (B) and was
paid in full whenever B was right. Reading every look-alike as the letter it looks like closes
both: ``Ｂ`` is B, and ``B or С`` names two options, so it is no answer (docs/ANSWERS.md,
"Normalising").

Three steps, in order (:func:`reading_text`):

1. **Struck-through text is deleted**, not read: ``~~B~~``, ``<s>B</s>``, ``<del>B</del>``,
   ``<strike>B</strike>`` and a character overlaid with a combining stroke (``B̶``, U+0334–U+0338).
   A writer who strikes a candidate out rejects it.
2. **Unicode NFKC**: the compatibility forms (fullwidth, mathematical alphanumerics, circled and
   parenthesised letters, Roman numerals, ligatures, fullwidth digits and punctuation) become
   the characters they stand for.
3. **Look-alike letters** (:data:`LOOKALIKES`): the letters of other scripts that Unicode's
   confusable table (Unicode Technical Standard 39, ``confusables.txt``) lists as looking like
   one Latin letter, and the Latin small capitals, become that letter. The table here is written
   from that standard's mappings for the Cyrillic, Greek, Armenian and Cherokee letters whose
   skeleton is one ASCII letter; it
   is applied to the answer, the options and the gold alike, so matching a Russian option text
   against a Russian answer is unaffected (both sides change the same way). One exception: a
   small look-alike standing alone before a word of its own script is that language's word (the
   Russian preposition ``с`` in ``B, с уверенностью``), not a letter; before anything else
   (``B or с``, ``B или с``) it is the letter it looks like.

Reasoning is not mapped to Latin (Russian reasoning must stay Russian to be read as Russian:
``paravt.rewards.language``); only NFKC applies there.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["LOOKALIKES", "lookalike_form", "nfkc", "nfkc_form", "reading_text", "strike_out"]

# (Unicode character name, the Latin letter it looks like). Names rather than code points so
# that the table says what each entry is; resolved once at import.
_LOOKALIKE_NAMES: tuple[tuple[str, str], ...] = (
    # Cyrillic capitals
    ("CYRILLIC CAPITAL LETTER A", "A"),
    ("CYRILLIC CAPITAL LETTER VE", "B"),
    ("CYRILLIC CAPITAL LETTER ES", "C"),
    ("CYRILLIC CAPITAL LETTER IE", "E"),
    ("CYRILLIC CAPITAL LETTER EN", "H"),
    ("CYRILLIC CAPITAL LETTER BYELORUSSIAN-UKRAINIAN I", "I"),
    ("CYRILLIC LETTER PALOCHKA", "I"),
    ("CYRILLIC CAPITAL LETTER JE", "J"),
    ("CYRILLIC CAPITAL LETTER KA", "K"),
    ("CYRILLIC CAPITAL LETTER EM", "M"),
    ("CYRILLIC CAPITAL LETTER O", "O"),
    ("CYRILLIC CAPITAL LETTER ER", "P"),
    ("CYRILLIC CAPITAL LETTER QA", "Q"),
    ("CYRILLIC CAPITAL LETTER DZE", "S"),
    ("CYRILLIC CAPITAL LETTER TE", "T"),
    ("CYRILLIC CAPITAL LETTER WE", "W"),
    ("CYRILLIC CAPITAL LETTER HA", "X"),
    ("CYRILLIC CAPITAL LETTER U", "Y"),
    ("CYRILLIC CAPITAL LETTER STRAIGHT U", "Y"),
    # Cyrillic small letters
    ("CYRILLIC SMALL LETTER A", "a"),
    ("CYRILLIC SMALL LETTER SOFT SIGN", "b"),
    ("CYRILLIC SMALL LETTER ES", "c"),
    ("CYRILLIC SMALL LETTER KOMI DE", "d"),
    ("CYRILLIC SMALL LETTER IE", "e"),
    ("CYRILLIC SMALL LETTER SHHA", "h"),
    ("CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I", "i"),
    ("CYRILLIC SMALL LETTER JE", "j"),
    ("CYRILLIC SMALL LETTER PALOCHKA", "l"),
    ("CYRILLIC SMALL LETTER O", "o"),
    ("CYRILLIC SMALL LETTER ER", "p"),
    ("CYRILLIC SMALL LETTER QA", "q"),
    ("CYRILLIC SMALL LETTER DZE", "s"),
    ("CYRILLIC SMALL LETTER WE", "w"),
    ("CYRILLIC SMALL LETTER HA", "x"),
    ("CYRILLIC SMALL LETTER U", "y"),
    # Greek capitals
    ("GREEK CAPITAL LETTER ALPHA", "A"),
    ("GREEK CAPITAL LETTER BETA", "B"),
    ("GREEK CAPITAL LUNATE SIGMA SYMBOL", "C"),
    ("GREEK CAPITAL LETTER EPSILON", "E"),
    ("GREEK CAPITAL LETTER ETA", "H"),
    ("GREEK CAPITAL LETTER IOTA", "I"),
    ("GREEK CAPITAL LETTER YOT", "J"),
    ("GREEK CAPITAL LETTER KAPPA", "K"),
    ("GREEK CAPITAL LETTER MU", "M"),
    ("GREEK CAPITAL LETTER NU", "N"),
    ("GREEK CAPITAL LETTER OMICRON", "O"),
    ("GREEK CAPITAL LETTER RHO", "P"),
    ("GREEK CAPITAL LETTER TAU", "T"),
    ("GREEK CAPITAL LETTER UPSILON", "Y"),
    ("GREEK CAPITAL LETTER CHI", "X"),
    ("GREEK CAPITAL LETTER ZETA", "Z"),
    # Greek small letters
    ("GREEK SMALL LETTER ALPHA", "a"),
    ("GREEK LUNATE SIGMA SYMBOL", "c"),
    ("GREEK SMALL LETTER IOTA", "i"),
    ("GREEK LETTER YOT", "j"),
    ("GREEK SMALL LETTER OMICRON", "o"),
    ("GREEK SMALL LETTER RHO", "p"),
    ("GREEK SMALL LETTER NU", "v"),
    # Armenian
    ("ARMENIAN CAPITAL LETTER OH", "O"),
    ("ARMENIAN SMALL LETTER OH", "o"),
    ("ARMENIAN SMALL LETTER SEH", "u"),
    # Cherokee capitals that are drawn as Latin capitals
    ("CHEROKEE LETTER GO", "A"),
    ("CHEROKEE LETTER YV", "B"),
    ("CHEROKEE LETTER TLI", "C"),
    ("CHEROKEE LETTER A", "D"),
    ("CHEROKEE LETTER GV", "E"),
    ("CHEROKEE LETTER NAH", "G"),
    ("CHEROKEE LETTER MI", "H"),
    ("CHEROKEE LETTER GU", "J"),
    # Latin small capitals and the dotless i: a letter of the Latin alphabet in another shape
    ("LATIN LETTER SMALL CAPITAL A", "A"),
    ("LATIN LETTER SMALL CAPITAL B", "B"),
    ("LATIN LETTER SMALL CAPITAL C", "C"),
    ("LATIN LETTER SMALL CAPITAL D", "D"),
    ("LATIN LETTER SMALL CAPITAL E", "E"),
    ("LATIN LETTER SMALL CAPITAL G", "G"),
    ("LATIN LETTER SMALL CAPITAL H", "H"),
    ("LATIN LETTER SMALL CAPITAL I", "I"),
    ("LATIN LETTER SMALL CAPITAL J", "J"),
    ("LATIN SMALL LETTER DOTLESS I", "i"),
)

#: Every look-alike letter and the Latin letter it is read as (module docstring, step 3).
LOOKALIKES: dict[str, str] = {unicodedata.lookup(name): latin for name, latin in _LOOKALIKE_NAMES}
_LOOKALIKE_TABLE = str.maketrans(LOOKALIKES)
# the look-alikes NFKC would turn into something else (the lunate sigma Ϲ, which NFKC makes Σ):
# mapped before NFKC
_BEFORE_NFKC = str.maketrans(
    {c: latin for c, latin in LOOKALIKES.items() if unicodedata.normalize("NFKC", c) != c}
)

# Struck-through text: Markdown's ~~...~~ (on one line), the HTML strike tags, and a character
# carrying a combining overlay (tilde, short/long stroke, short/long solidus: U+0334-U+0338).
_STRUCK = re.compile(
    r"~~[^~\n]+~~"
    r"|<(s|del|strike)\s*>.*?</\1\s*>"
    r"|[^\u0334-\u0338][\u0334-\u0338]+",
    re.IGNORECASE | re.DOTALL,
)


def strike_out(text: str) -> str:
    """``text`` without its struck-through parts (each replaced by a space)."""
    return _STRUCK.sub(" ", text)


def nfkc(text: str) -> str:
    """Unicode NFKC: the compatibility forms become the characters they stand for."""
    return unicodedata.normalize("NFKC", text)


def _script(ch: str) -> str:
    return unicodedata.name(ch, "?").split()[0]


# A small look-alike standing alone as a word (Russian с "with", а "but"), and the words around
_LONE_SMALL = re.compile(
    "(?<![^\\W\\d_])(["
    + "".join(c for c in LOOKALIKES if c.islower() and _script(c) != "LATIN")
    + "])(?![^\\W\\d_])"
)
_WORD_RUN = re.compile(r"[^\W\d_]+")


def _own_word(text: str, m: re.Match) -> bool:
    """Whether the lone small letter of ``m`` is followed by a word of its own script: then it
    is that language's preposition or conjunction (Russian ``с уверенностью``, ``а потом``), not
    a look-alike (``B or с``, ``B или с``)."""
    script = _script(m.group(1))
    after = _WORD_RUN.search(text, m.end())
    return bool(after) and all(_script(c) == script for c in after.group(0))


def nfkc_form(text: str) -> str:
    """``text`` with its struck-through parts deleted and NFKC applied (steps 1 and 2): what the
    readers match words in (``не``, ``nicht``, ``wait`` as the writer wrote them)."""
    return nfkc(strike_out(text).translate(_BEFORE_NFKC))


def lookalike_form(text: str) -> str:
    """``text`` (already :func:`nfkc_form`) with its look-alike letters read as Latin (step 3),
    character for character, so a position in one is the same position in the other: the
    readers find letters here and the words around them in ``text``. A small look-alike that
    stands alone before a word of its own script is that script's word and stays (Russian
    ``B, с уверенностью`` is B, not B and C)."""
    kept = [m for m in _LONE_SMALL.finditer(text) if _own_word(text, m)]
    if not kept:
        return text.translate(_LOOKALIKE_TABLE)
    pieces, pos = [], 0
    for m in kept:
        pieces.append(text[pos : m.start()].translate(_LOOKALIKE_TABLE))
        pieces.append(m.group(1))
        pos = m.end()
    pieces.append(text[pos:].translate(_LOOKALIKE_TABLE))
    return "".join(pieces)


def reading_text(text: str) -> str:
    """``text`` as the answer reader reads its letters: struck-through parts deleted, NFKC,
    look-alike letters read as the Latin letter they look like (module docstring)."""
    return lookalike_form(nfkc_form(text))
