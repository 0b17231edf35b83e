"""Words of a language, in any script: what the think terms count as reasoning.

**The principle.** Reasoning is written in a language, and every language's sentences hold its
grammatical words — articles, pronouns, forms of *be*, prepositions, conjunctions, particles — the
closed class of words that no topic can do without and no string of random letters happens to
spell. So a run of letters counts as a word of reasoning only when its script's words in the
same think include a grammatical word **of that script**: ``Нужно посмотреть, что в середине``
is Russian (``что``, ``в``); ``ывапролдж фывапр`` is letters (no Russian grammatical word), and
``It is ывапролдж фывапр`` is two English grammatical words beside Cyrillic letters that are no
Russian. What cheap filler does is what the rule refuses:

- **loops** — a word, a phrase or a sentence (up to 64 tokens) said over and over (two and a half
  times or more in a row: ``no no no``, ``let me check the video`` ×3) is dropped whole
  (:func:`looped`);
- **runs of characters** — one letter or syllable repeated (``aaaa``, ``lalala``), the alphabet
  recited (``abcd``, ``абвг``), a Latin,
  Cyrillic or Greek run without a vowel letter (``hmm``, ``xkcd``), a letter or two that is no
  grammatical word (``ok``, ``ba``), Lorem ipsum's placeholder Latin;
- **letters of a script with none of its grammatical words** — random Cyrillic, Hangul, Thai,
  Arabic or Devanagari, alphabet recitations (``абвгд``, ``가나다라``, ``กขคง``).

A think needs content too: at least one word that is not grammatical (``It is the`` says
nothing). What the rule cannot do is tell a grammatical sentence of nonsense, or pseudo-words
beside real grammatical words of their own script, from sense: that needs a dictionary, and the
rule refuses only what costs nothing to write.

**Why grammatical words and not statistics.** Character n-gram or compression statistics need a
model of each language and many characters to be reliable; a think is often one short sentence
(``Look at 1-2 s first.``). The closed class is small, the same in every text of a language,
and it is what separates a sentence from a list of letters at any length.

**Scripts.** A character's script is the first word of its Unicode name (LATIN, CYRILLIC, GREEK,
ARABIC, HEBREW, DEVANAGARI, BENGALI, THAI, HANGUL, ...; Han ideographs and kana are one group,
``CJK``). Words are runs of one script's letters and combining marks, lower case, except where a
script writes no spaces: Han and kana are read one character at a time (as before), and Thai is
cut at its grammatical words (a Thai run ``ต้องดูช่วงกลางของวิดีโอ`` holds ``ของ``). Korean words
carry their particles (``영상의``, ``중간을``): a Hangul word ending in a particle is grammatical,
and so is an Arabic word that starts with the article ``ال``.

**The word lists** (:data:`LANGUAGES`) are short closed-class lists written for this module from
each language's grammar (articles, pronouns, copulas and auxiliaries, the commonest prepositions,
conjunctions and negations), checked against the Snowball project's stop-word lists (BSD licence)
where Snowball has one. Languages: English, Spanish, French, German, Italian, Portuguese, Dutch,
Polish, Turkish, Vietnamese, Indonesian, Russian, Ukrainian, Greek, Arabic, Persian, Hebrew,
Hindi, Bengali, Thai, Chinese, Japanese, Korean. A script none of them writes (Georgian,
Armenian, Tamil, ...) has no grammatical words here, so reasoning in it earns no think term
(docs/ANSWERS.md says so).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = [
    "ARTICLES",
    "GRAMMAR_WORDS",
    "LANGUAGES",
    "LOREM_IPSUM",
    "Language",
    "Word",
    "language_words",
    "looped",
    "script_of",
]


@dataclass(frozen=True)
class Language:
    """One language's grammatical words (``words``: articles, pronouns, copulas and auxiliaries,
    the commonest conjunctions, question words, prepositions and negations), and the endings or
    beginnings that make a longer word grammatical (``suffixes``: Korean particles;
    ``prefixes``: the Arabic article)."""

    code: str
    script: str
    words: frozenset[str]
    suffixes: tuple[str, ...] = field(default=())
    prefixes: tuple[str, ...] = field(default=())


def _lang(code: str, script: str, *words: str, **affixes) -> Language:
    """A language from its word lists (whitespace-separated), joined."""
    return Language(code, script, frozenset(" ".join(words).split()), **affixes)


#: The grammatical words of each language the reasoning rule reads (module docstring).
LANGUAGES: tuple[Language, ...] = (
    _lang(
        "en",
        "LATIN",
        """a an the this that these those it its i me my we us our you your he him his she her
        they them their there here is are was were be been being am do does did done has have
        had will would shall should can could may might must of to and or but so as if because
        than then also just very what which who whom whose why how when where""",
        """at in on to from with by for of about into onto over under after before between
        through during until since near off out up down not no never nor first next now then
        again still yet only also""",
    ),
    _lang(
        "es",
        "LATIN",
        """el la lo los las un una unos unas y e o u que es son era fue ser está están estar hay
        yo tú él ella ello nosotros vosotros ellos ellas me te se nos le les mi mis tu tus su sus
        este esta estos estas ese esa eso esto aquel qué cuál quién cómo cuándo dónde porque pero
        como si también muy ya""",
        "a al de del en con sin por para sobre entre hasta desde no ni nunca después antes luego",
    ),
    _lang(
        "fr",
        "LATIN",
        """le la les un une des du et ou que qui est sont était être a ai as ont avons avez je tu
        il elle on nous vous ils elles me te se ce cet cette ces mon ma mes ton ta tes son sa ses
        notre votre leur leurs quoi quel quelle comment quand où mais donc car si aussi très
        déjà""",
        "à au aux de en dans sur sous avec pour par sans entre vers chez ne pas plus jamais puis",
    ),
    _lang(
        "de",
        "LATIN",
        """der die das den dem des ein eine einen einem einer eines und oder aber ist sind war
        waren sein bin bist hat haben habe hatte wird werden ich du er sie es wir ihr mich dich
        sich uns euch mein dein sein ihr unser dieser diese dieses was wer wie wo wann warum dass
        wenn weil auch noch schon dann also sehr""",
        """in im an am auf aus bei mit nach von vom vor zu zum zur für über unter durch zwischen
        ohne gegen nicht kein keine keinen nie erst jetzt""",
    ),
    _lang(
        "it",
        "LATIN",
        """il lo la i gli le un uno una e ed o che è sono era essere ha ho hanno io tu lui lei
        noi voi loro mi ti si ci vi mio mia tuo tua suo sua questo questa quello quella cosa
        come quando dove perché ma anche molto già""",
        """di del della dei delle da dal dalla in nel nella a al alla con su sul per tra fra
        senza non mai poi prima dopo""",
    ),
    _lang(
        "pt",
        "LATIN",
        """o a os as um uma uns umas e ou que é são era foi ser está estão estar há eu tu ele ela
        nós vós eles elas me te se nos lhe meu minha seu sua este esta isto esse essa isso
        aquele qual quem como quando onde porque mas também muito já""",
        """de do da dos das em no na nos nas ao à com sem por para pelo pela entre até desde não
        nem nunca depois antes""",
    ),
    _lang(
        "nl",
        "LATIN",
        """de het een en of is zijn was waren ben bent heeft hebben had ik je jij hij zij ze wij
        we jullie mij me hem haar ons dat die dit deze wat wie hoe waar wanneer omdat als maar
        ook dan heel al""",
        "van in op aan met voor naar bij om te door over onder tussen zonder niet geen nooit",
    ),
    _lang(
        "pl",
        "LATIN",
        """i a ale lub albo czy że jest są był była było byli być ma mają ja ty on ona ono my wy
        oni one mnie mi cię go jej nas to ten ta te tego tej co kto jak gdzie kiedy dlaczego bo
        też także już jeszcze bardzo""",
        "w we na z ze do od po za o dla przez pod nad przy bez między nie nigdy potem",
    ),
    _lang(
        "tr",
        "LATIN",
        """ve bir bu şu o da de ki ne mi mı mu mü ben sen biz siz onlar bunu şunu onu var yok
        değil olan olarak ise ama fakat çünkü eğer gibi daha çok en her""",
        "ile için sonra önce kadar göre hiç",
    ),
    _lang(
        "vi",
        "LATIN",
        """và là của có không được cho với này đó những các một người tôi bạn chúng anh chị nó
        họ thì mà để khi đã sẽ đang như cũng rất nên vì nhưng hay hoặc gì nào""",
        "trong ở từ đến lại sau trước chưa",
    ),
    _lang(
        "id",
        "LATIN",
        """dan yang ini itu adalah ada akan juga saya aku kita kami kamu dia mereka atau tetapi
        tapi karena jika kalau sudah bisa apa siapa bagaimana kapan mana""",
        "di ke dari dengan untuk pada dalam tidak bukan belum setelah sebelum",
    ),
    _lang(
        "ru",
        "CYRILLIC",
        """и а но да или что как это то так он она оно они мы вы ты я его её ее их мне меня
        нам нас вам вас ему ей им был была было были быть есть будет этот эта эти этого того
        тот та те который которая которые кто где когда почему потому если чтобы тоже также
        уже ещё еще вот здесь там тут надо можно нужно""",
        "в во на с со к ко у о об от из за по до для при без под над через после перед не ни нет",
    ),
    _lang(
        "uk",
        "CYRILLIC",
        """і й та а але або що як це то він вона воно вони ми ви ти я його її їх мені мене
        нам нас вам вас був була було були бути є буде цей ця ці цього того той яка які хто де
        коли чому тому якщо щоб також вже ще тут там треба можна потрібно""",
        "в у на з із зі до від для при без під над через після перед не ні",
    ),
    _lang(
        "el",
        "GREEK",
        """ο η το οι τα του της των τον την ένα ένας μια μία και ή να θα είναι ήταν είμαι έχει
        έχω αυτό αυτή αυτός αυτά εγώ εσύ εμείς εσείς αυτοί που ότι πως αλλά επειδή αν όταν
        πού τι ποιο πολύ""",
        "σε στο στη στην στον στα από με για προς χωρίς μετά πριν δεν μην",
    ),
    _lang(
        "ar",
        "ARABIC",
        """و أو ثم هذا هذه ذلك تلك التي الذي الذين هو هي هم أنا نحن أنت أن إن كان كانت يكون
        قد ما ماذا هل كيف متى أين لماذا لكن لأن إذا كل بعض""",
        "في من على إلى عن مع بين بعد قبل حتى لا لم لن ليس غير",
        prefixes=("ال",),
    ),
    _lang(
        "fa",
        "ARABIC",
        """و یا این آن که را است هست بود هستند بودند من تو او ما شما آنها چه چرا کجا کی اما
        اگر هم نیز باید""",
        "در به از با برای تا بدون بعد قبل نه",
    ),
    _lang(
        "he",
        "HEBREW",
        """ו או זה זו זאת הוא היא הם הן אני אתה את אנחנו אתם של את יש אין היה הייתה מה מי
        איך מתי איפה למה כי אם אבל גם כל רק עוד""",
        "על עם אל מן בין אחרי לפני לא בלי",
    ),
    _lang(
        "hi",
        "DEVANAGARI",
        """और या यह वह ये वे मैं हम तुम आप है हैं था थे थी हो होता होती कि जो क्या क्यों कब
        कहाँ कैसे लेकिन भी तो एक""",
        "का की के को में से पर तक लिए बाद पहले नहीं न",
    ),
    _lang(
        "bn",
        "BENGALI",
        """এবং ও বা এই সেই এটা ওটা আমি আমরা তুমি আপনি সে তারা হয় হবে ছিল আছে কি কী কেন কখন
        কোথায় কিন্তু যে যদি""",
        "থেকে জন্য পরে আগে সাথে না নয়",
    ),
    _lang(
        "th",
        "THAI",
        """และ หรือ ที่ ของ เป็น คือ มี ได้ จะ ให้ ว่า การ นี้ นั้น แล้ว ก็ ผม ฉัน เรา เขา มัน
        แต่ เพราะ ถ้า เมื่อ อะไร ทำไม อย่างไร ต้อง อยู่ ด้วย""",
        "ใน จาก กับ ไป มา ก่อน หลัง ไม่",
    ),
    _lang(
        "zh",
        "CJK",
        "的 是 了 我 你 他 她 它 们 这 那 有 也 都 就 要 会 个 着 过 吗 呢 吧 和 或 但 而 所 以 因 为 其 之",
        "在 不 没 从 到 对 把 被 给 向 于 后 前 再 先",
    ),
    _lang("ja", "CJK", "の は を が に で た て だ す と も へ や か"),
    _lang(
        "ko",
        "HANGUL",
        """그리고 그래서 하지만 그러나 또는 및 이 그 저 것 수 나 너 우리 그들 있다 없다 이다
        한다 하다 있습니다 없습니다 입니다 합니다 무엇 왜 어디 언제 어떻게""",
        "먼저 다음 안 못 더",
        suffixes=tuple("에서 으로 에게 은 는 을 를 의 에 로 와 과 도 만".split()),
    ),
)

#: Every language's grammatical words, one set (any script).
GRAMMAR_WORDS: frozenset[str] = frozenset().union(*(lang.words for lang in LANGUAGES))
#: The articles of the Latin-script languages above beside English (Spanish, French, German,
#: Italian, Portuguese, Dutch): grammatical in an open-ended answer as "a" and "the" are.
ARTICLES: frozenset[str] = frozenset(
    """el la los las un una unos unas le les une des du der die das den dem ein eine einen einem
    einer eines il lo gli uno o os as um uma uns umas de het een""".split()
)
#: The placeholder Latin of "Lorem ipsum" (the standard passage's words): filler, not words,
#: whatever words of a language it shares ("do", "in", "sit").
LOREM_IPSUM = frozenset(
    """lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut
    labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris
    nisi aliquip ex ea commodo consequat duis aute irure in reprehenderit voluptate velit esse
    cillum eu fugiat nulla pariatur excepteur sint occaecat cupidatat non proident sunt culpa qui
    officia deserunt mollit anim id est laborum""".split()
)

_BY_SCRIPT: dict[str, tuple[Language, ...]] = {}
for _l in LANGUAGES:
    _BY_SCRIPT[_l.script] = (*_BY_SCRIPT.get(_l.script, ()), _l)
_SCRIPT_WORDS = {s: frozenset().union(*(x.words for x in ls)) for s, ls in _BY_SCRIPT.items()}
_SCRIPT_SUFFIXES = {s: tuple(a for x in ls for a in x.suffixes) for s, ls in _BY_SCRIPT.items()}
_SCRIPT_PREFIXES = {s: tuple(a for x in ls for a in x.prefixes) for s, ls in _BY_SCRIPT.items()}

#: Scripts read one character at a time (no spaces between words).
_PER_CHARACTER = frozenset({"CJK"})
#: Scripts without spaces between words that are cut at their grammatical words.
_UNSPACED = frozenset({"THAI", "LAO", "KHMER", "MYANMAR"})
#: The vowel letters of the alphabets that write them (accents removed first): a word of these
#: scripts without one is a run of consonants (``hmm``, ``xkcd``, ``пфф``).
_VOWELS = {"LATIN": "aeiouy", "CYRILLIC": "аеёиоуыэюяіїє", "GREEK": "αεηιουω"}
#: Below this many letters a word must be a grammatical word (``ok``, ``ba`` are syllables).
_MIN_LETTERS = {"HANGUL": 2, "THAI": 2}
_DEFAULT_MIN_LETTERS = 3
_MAX_LOOP_PERIOD = 64
_NAME_ALIASES = {"KATAKANA-HIRAGANA": "CJK", "HIRAGANA": "CJK", "KATAKANA": "CJK", "CJK": "CJK"}
_THAI_SPLIT = re.compile("(" + "|".join(sorted(_SCRIPT_WORDS["THAI"], key=len, reverse=True)) + ")")


@lru_cache(maxsize=8192)
def script_of(ch: str) -> str | None:
    """The script of a letter or combining mark (the first word of its Unicode name, Han and
    kana as ``CJK``); ``"MARK"`` for a combining mark of no script (it joins the word before
    it); ``None`` for anything that is not part of a word."""
    cat = unicodedata.category(ch)
    if cat[0] not in "LM":
        return None
    name = unicodedata.name(ch, "")
    if not name:
        return None
    first = name.split()[0]
    if first == "COMBINING":
        return "MARK"
    return _NAME_ALIASES.get(first, first)


@dataclass(frozen=True)
class Word:
    """One token of reasoning: its text (lower case) and its script (``"NUMBER"`` for digits)."""

    text: str
    script: str

    @property
    def grammatical(self) -> bool:
        """A grammatical word of its script's languages (or one carrying a particle or article
        that is: Korean ``영상의``, Arabic ``الفيديو``)."""
        if self.text in _SCRIPT_WORDS.get(self.script, ()):
            return True
        if len(self.text) < 2:
            return False
        return self.text.endswith(_SCRIPT_SUFFIXES.get(self.script, ("\0",))) or (
            self.text.startswith(_SCRIPT_PREFIXES.get(self.script, ("\0",))) and len(self.text) > 3
        )

    @property
    def content(self) -> bool:
        """Not one of its script's grammatical words (a word with a particle is content)."""
        return self.text not in _SCRIPT_WORDS.get(self.script, ())


def _runs(text: str) -> list[Word]:
    """Letter runs of one script each (combining marks join the run before them), digit runs
    as ``NUMBER`` words, in order; CJK one character at a time."""
    out: list[Word] = []
    buf: list[str] = []
    script: str | None = None

    def flush() -> None:
        if buf and script is not None:
            out.append(Word("".join(buf).lower(), script))
        buf.clear()

    for ch in text:
        s = "NUMBER" if ch.isdigit() else script_of(ch)
        if s == "MARK" and buf:
            buf.append(ch)
            continue
        if s is None or s == "MARK" or s != script or s in _PER_CHARACTER:
            flush()
            script = s if s != "MARK" else None
        if script is not None:
            buf.append(ch)
    flush()
    return out


def _split_unspaced(words: list[Word]) -> list[Word]:
    """Thai (and the other unspaced scripts with grammatical words here) cut at their
    grammatical words, each piece a word."""
    out: list[Word] = []
    for w in words:
        if w.script not in _UNSPACED or w.script not in _SCRIPT_WORDS:
            out.append(w)
            continue
        out.extend(Word(piece, w.script) for piece in _THAI_SPLIT.split(w.text) if piece)
    return out


def looped(tokens: list[str], max_period: int = _MAX_LOOP_PERIOD) -> list[bool]:
    """For each token: is it part of a loop — a stretch where the same ``p`` tokens (``p`` up
    to ``max_period``) follow each other two and a half times or more (``no no no``, ``la la
    la``, a sentence said three times)? For each period, the runs where a token equals the one
    ``p`` later."""
    n = len(tokens)
    dropped = [False] * n
    for p in range(1, min(max_period, n // 2) + 1):
        i = 0
        # each token beside the one p later (the shorter side ends it)
        pairs = zip(tokens, tokens[p:], strict=False)
        for same, run in itertools.groupby(a == b for a, b in pairs):
            m = sum(1 for _ in run)
            if same and 2 * m >= 3 * p:  # m + p tokens: at least 2.5 copies of p
                dropped[i : i + m + p] = [True] * (m + p)
            i += m
    return dropped


def _repeats(word: str) -> bool:
    """One letter or one syllable over and over: ``aa``, ``lala``, ``hahaha``, ``mmmm``."""
    n = len(word)
    return n >= 2 and any(n % k == 0 and word == word[:k] * (n // k) for k in range(1, n // 2 + 1))


def _recited(word: str) -> bool:
    """Three or more letters in alphabetical order, up or down (``abcd``, ``абвг``, ``कखग``):
    the alphabet recited, no word."""
    steps = {ord(b) - ord(a) for a, b in zip(word, word[1:], strict=False)}  # neighbours
    return len(word) >= 3 and steps in ({1}, {-1})


def _base_letters(word: str) -> str:
    """``word`` without its accents (NFD, combining marks removed)."""
    return "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))


def _is_word(w: Word) -> bool:
    """A token that may be a word of a language (module docstring's "runs of characters")."""
    if w.script == "NUMBER":
        return False
    if w.script == "LATIN" and w.text in LOREM_IPSUM:
        return False  # placeholder Latin, whatever words of a language it shares (do, in, et)
    if w.script in _PER_CHARACTER or w.text in _SCRIPT_WORDS.get(w.script, ()):
        return True  # a listed grammatical word is a word (Russian где, for all its a-b-c)
    if _repeats(w.text) or _recited(w.text):
        return False
    vowels = _VOWELS.get(w.script)
    if vowels and not any(v in vowels for v in _base_letters(w.text)):
        return False
    if len(w.text) < _MIN_LETTERS.get(w.script, _DEFAULT_MIN_LETTERS):
        return w.grammatical
    return True


def language_words(text: str) -> list[Word]:
    """The words of ``text`` (NFKC, lower case) that may be words of a language, in order,
    loops dropped (:func:`looped`), without asking yet whether their script's grammatical
    words are there (that is :func:`paravt.rewards.format.reasoning_words`)."""
    tokens = _split_unspaced(_runs(unicodedata.normalize("NFKC", text)))
    dropped = looped([t.text for t in tokens])
    return [t for t, out in zip(tokens, dropped, strict=True) if not out and _is_word(t)]
