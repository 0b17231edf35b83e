"""Reasoning credit needs words of a language, in any script (docs/ANSWERS.md, "Reasoning";
``paravt.rewards.language``): generated filler in many scripts earns exactly what no reasoning
earns, and honest short reasoning in the twenty-two languages beside English that the rule reads
earns the think terms English earns.

**The property** (as ``test_reward_filler.py``'s): the same tool episode (a correct answer after
one executed call, every tag in place) is scored by ``paravt.rewards.compose`` with filler ``F``
in both thinks and with nothing in them; ``T(F) == T(nothing)`` (2.4 with the paper's
constants), and honest reasoning earns 2.8.

Filler is generated from parts, never listed whole:

- letters of a script strung into pseudo-words (Cyrillic, Greek, Arabic, Hebrew, Devanagari,
  Bengali, Thai, Hangul syllables, Armenian, Georgian, Latin consonants), with none of that
  script's grammatical words, and with or without grammatical words of *another* script around
  them (``It is the ывапр олдж``);
- an alphabet recited in pieces (``абв где жзи``, ``कखग घङच``, ``a bcd efgh``);
- a sentence of real reasoning, in any of the languages, looped (said two and a half times or
  more in a row), alone or among the pieces above.

1,000 examples, derandomized (``reward_episodes.SETTINGS``).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from reward_episodes import CALL, CFG, EXECUTED, PREFILL, SETTINGS

from paravt.rewards import compose
from paravt.rewards.language import LANGUAGES, Word, script_of

OPTIONS = ["cyan", "red", "yellow", "green"]
QUESTION = "What colour was the square that appeared briefly?"

#: Honest short reasoning in the twenty-two languages beside English (two sentences each: what to look at, and
#: what was seen), each holding a grammatical word of its language.
HONEST = {
    "ru": ["Нужно посмотреть, что происходит в середине видео.", "Квадрат красный, он появляется в конце."],
    "uk": ["Треба подивитися, що відбувається в середині відео.", "Квадрат червоний, він з'являється наприкінці."],
    "es": ["Necesito ver la mitad del vídeo primero.", "El cuadrado es rojo y aparece al final."],
    "fr": ["Je dois regarder le milieu de la vidéo.", "Le carré est rouge, il apparaît à la fin."],
    "de": ["Ich muss zuerst die Mitte des Videos ansehen.", "Das Quadrat ist rot und erscheint am Ende."],
    "it": ["Devo guardare la parte centrale del video.", "Il quadrato è rosso e appare alla fine."],
    "pt": ["Preciso ver o meio do vídeo primeiro.", "O quadrado é vermelho e aparece no final."],
    "nl": ["Ik moet eerst het midden van de video bekijken.", "Het vierkant is rood en verschijnt aan het eind."],
    "pl": ["Muszę zobaczyć, co jest w środku nagrania.", "Kwadrat jest czerwony i pojawia się na końcu."],
    "tr": ["Önce videonun ortasına bakmam gerek.", "Kare kırmızı ve videonun sonunda görünüyor."],
    "vi": ["Tôi cần xem phần giữa của video.", "Hình vuông màu đỏ và xuất hiện ở cuối."],
    "id": ["Saya perlu melihat bagian tengah video ini.", "Kotak itu berwarna merah dan muncul di akhir."],
    "el": ["Πρέπει να δω το μέσο του βίντεο.", "Το τετράγωνο είναι κόκκινο."],
    "ar": ["يجب أن أشاهد منتصف الفيديو أولا.", "المربع أحمر ويظهر في النهاية."],
    "fa": ["باید وسط ویدیو را ببینم.", "مربع قرمز است و در پایان دیده می‌شود."],
    "he": ["אני צריך לראות את אמצע הסרטון.", "הריבוע הוא אדום, הוא מופיע בסוף."],
    "hi": ["मुझे पहले वीडियो का बीच देखना है।", "वर्ग लाल है और अंत में दिखता है।"],
    "bn": ["আমি ভিডিওর মাঝখানটা দেখতে চাই।", "বর্গটি লাল এবং শেষে দেখা যায়।"],
    "th": ["ต้องดูช่วงกลางของวิดีโอ", "สี่เหลี่ยมเป็นสีแดงและปรากฏตอนท้าย"],
    "ja": ["ビデオの真ん中を見る必要があります。", "四角は赤で、最後に出てきます。"],
    "ko": ["영상의 중간을 먼저 봐야 한다.", "사각형은 빨간색이고 마지막에 나온다."],
    "zh": ["我要看一看中间的画面", "方块是红色的，出现在中间。"],
}  # fmt: skip
SENTENCES = [s for pair in HONEST.values() for s in pair] + [
    "I need to see the middle of the clip first.",
    "The square is red.",
]


def total(reasoning: str) -> float:
    turns = [f"{reasoning}</think>\n{CALL}", f"{reasoning}</think>\n<answer>red</answer>"]
    r = compose(PREFILL, turns, EXECUTED, "B", "mcq", OPTIONS, CFG, question=QUESTION)
    assert r.acc == 1.0 and r.tool == pytest.approx(0.8)  # the answer and the call are real
    return r.total


NONE = total("")
assert NONE == pytest.approx(2.4)


@pytest.mark.parametrize(
    "reasoning", [s for pair in HONEST.values() for s in pair], ids=lambda s: s[:24]
)
def test_honest_reasoning_in_any_language_earns_the_think_terms(reasoning):
    assert total(reasoning) == pytest.approx(2.8), reasoning


# --------------------------------------------------------------------------- generated filler

#: Letters of a script, by code-point range: what pseudo-words are strung from.
ALPHABETS = {
    "cyrillic": (0x0430, 0x044F),
    "greek": (0x03B1, 0x03C9),
    "arabic": (0x0628, 0x064A),
    "hebrew": (0x05D0, 0x05EA),
    "devanagari": (0x0915, 0x0939),
    "bengali": (0x0995, 0x09B9),
    "thai": (0x0E01, 0x0E2E),
    "hangul": (0xAC00, 0xD7A3),
    "armenian": (0x0561, 0x0586),
    "georgian": (0x10D0, 0x10F0),
}
LATIN_CONSONANTS = "bcdfghjklmnpqrstvwxz"
#: Grammatical words, by script, that filler may wear around the letters of another script.
GRAMMAR_BY_SCRIPT = {
    "latin": ["it is the", "this is", "and the", "der die"],
    "cyrillic": ["это", "и это"],
    "cjk": ["的是", "は"],
}


#: The letters of each alphabet (the ranges' unassigned code points and marks left out).
LETTERS_OF = {
    name: [c for c in map(chr, range(lo, hi + 1)) if script_of(c) not in (None, "MARK")]
    for name, (lo, hi) in ALPHABETS.items()
} | {"latin": list(LATIN_CONSONANTS)}


THAI_WORDS = next(lang for lang in LANGUAGES if lang.code == "th").words


def _no_grammar(token: str) -> bool:
    """A pseudo-word that happens to spell none of its script's grammatical words (nor hold
    one, for Thai, which the rule cuts at them)."""
    script = script_of(token[0]) or ""
    if Word(token.lower(), script).grammatical:
        return False
    return script != "THAI" or not any(w in token for w in THAI_WORDS)


@st.composite
def pseudo_words(draw, name: str) -> str:
    """Three to ten pseudo-words of the script ``name``, three to nine letters each (strung by
    one seeded ``Random``: one draw for the piece, so a thousand examples stay fast)."""
    rnd = draw(st.randoms(use_true_random=False))
    letters, words = LETTERS_OF[name], []
    for _ in range(rnd.randint(3, 10)):
        word = "".join(rnd.choice(letters) for _ in range(rnd.randint(3, 9)))
        if _no_grammar(word):
            words.append(word)
    return draw(st.sampled_from([" ", ", ", " ... ", "\n"])).join(words)


@st.composite
def recitations(draw, name: str) -> str:
    """A stretch of the alphabet of ``name`` cut into pieces of three or more letters."""
    lo, hi = (ord("a"), ord("z")) if name == "latin" else ALPHABETS[name]
    n = draw(st.integers(9, 12))
    if name == "hangul":  # the next initial consonant is 588 syllables on: 가 까 나 다 ...
        start = draw(st.integers(lo, lo + 587))
        letters = [chr(start + 588 * i) for i in range(n)]
    else:
        start = draw(st.integers(lo, hi - n))
        letters = [chr(c) for c in range(start, start + n)]
    cuts = sorted(draw(st.sets(st.integers(3, len(letters) - 3), max_size=2)))
    pieces, prev = [], 0
    for c in [*cuts, len(letters)]:
        if c - prev >= 3:
            pieces.append("".join(letters[prev:c]))
            prev = c
    return " ".join(pieces)


@st.composite
def loops(draw) -> str:
    """A sentence of real reasoning said over and over (2.5 times or more in a row)."""
    sentence = draw(st.sampled_from(SENTENCES))
    sep = draw(st.sampled_from([" ", "\n", " ... "]))
    n = draw(st.integers(3, 6))
    return sep.join([sentence] * n)


@st.composite
def fillers(draw) -> str:
    """Up to four pieces: pseudo-words of one script, an alphabet of another recited, loops, and
    grammatical words of a third script around them (never of the pseudo-words' own script: a
    pseudo-word beside its own script's grammatical words is the nonsense the rule cannot
    tell from sense, docs/ANSWERS.md)."""
    scripts = ["latin", *ALPHABETS]
    pseudo = draw(st.sampled_from(scripts))
    recited = draw(st.sampled_from([s for s in scripts if s != pseudo]))
    kinds = st.one_of(pseudo_words(pseudo), recitations(recited), loops())
    pieces = draw(st.lists(kinds, min_size=1, max_size=3))
    if draw(st.booleans()):
        other = [w for script, ws in GRAMMAR_BY_SCRIPT.items() if script != pseudo for w in ws]
        pieces.insert(draw(st.integers(0, len(pieces))), draw(st.sampled_from(other)))
    return draw(st.sampled_from([" ", "\n"])).join(pieces)


@SETTINGS
@given(fillers())
def test_filler_in_any_script_earns_no_more_than_no_reasoning(filler):
    assert total(filler) == pytest.approx(NONE), filler
