"""Corpus generation behind ``tests.tokenizer_data.corpus_documents`` (kept apart so each module stays short).

Every input is offline and deterministic: the Python stdlib (prose, docstrings, source), the CLDR words in
``tests/data/words_<script>.txt`` and the real CJK prose in ``tests/data/cpython_cjk``. Randomness comes only from
``random.Random`` seeded with fixed strings, and nothing iterates a set or depends on PYTHONHASHSEED.
"""

from __future__ import annotations

import ast
import codecs
import itertools
import json
import math
import os
import random
import re
import sysconfig
import unicodedata
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
SCRIPTS = ("zh", "ja", "ko", "ar", "he", "hi", "ru", "el", "th")
ZWJ, VS16 = "\u200d", "\ufe0f"

# ---------------------------------------------------------------------------------------------- stdlib sources


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


@cache
def stdlib_files() -> tuple[Path, ...]:
    """Stdlib .py/.txt/.rst files, minus the parts distributions strip (tests, site-packages), in sorted order."""
    skip = {"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__", "lib-dynload", "_bundled"}
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(stdlib_root()):
        dirnames[:] = sorted(d for d in dirnames if d not in skip and not d.startswith("config-"))
        out.extend(Path(dirpath, f) for f in filenames if f.endswith((".py", ".txt", ".rst")))
    return tuple(sorted(out))


def fingerprint() -> list[str | bytes]:
    """What the corpus is built from, for the cache key: stdlib listing with sizes, data files, this code."""
    stdlib = "\n".join(f"{p.relative_to(stdlib_root())}:{p.stat().st_size}" for p in stdlib_files())
    return [stdlib, Path(__file__).read_bytes(), *(p.read_bytes() for p in sorted(DATA_DIR.rglob("*.txt")))]


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


@cache
def _topics() -> dict[str, str]:
    """pydoc's help topics: ~470 KB of the Python reference manual, shipped in the stdlib as pydoc_data."""
    try:
        from pydoc_data.topics import topics
    except ImportError:  # some distributions split pydoc_data out; the other sources still fill the corpus
        return {}
    return {k: topics[k] for k in sorted(topics)}


def _zen() -> str:
    """The Zen of Python from this.py's rot13 literal; importing ``this`` would print to stdout."""
    tree = ast.parse((stdlib_root() / "this.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "s":
            return codecs.decode(ast.literal_eval(node.value), "rot13")
    return ""


@cache
def english_words() -> tuple[str, ...]:
    """The 3000 commonest words of the stdlib's own English docs; cheaper than shipping a word list."""
    counts = Counter(re.findall(r"[A-Za-z]{2,14}", " ".join([_zen(), *_topics().values()])))
    return tuple(sorted(counts, key=lambda w: (-counts[w], w))[:3000])


def _docstrings(path: Path) -> list[str]:
    source = _read(path)
    if source is None:
        return []
    with warnings.catch_warnings():  # old stdlib modules have invalid escapes; -W error must not break the tests
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return []
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef))]
    return [d for n in nodes if (d := ast.get_docstring(n))]


def doc_len(rng: random.Random) -> int:
    """Target document size in UTF-8 bytes: mostly 100 B - 5 KB (median ~900 B), 3% long ones of 10-100 KB."""
    if rng.random() < 0.03:
        return int(10 ** rng.uniform(4, 5))
    return max(100, min(5000, int(rng.lognormvariate(math.log(900), 0.8))))


def _split_long(text: str, limit: int = 100_000) -> Iterator[str]:
    """Cut texts over ``limit`` bytes at paragraph breaks, so no document exceeds the stated maximum."""
    while len(text.encode()) > limit:
        window = text[:limit]
        while len(window.encode()) > limit:
            window = window[: len(window) * 3 // 4]
        para = window.rfind("\n\n")
        cut = para + 2 if para > len(window) // 2 else len(window)
        yield text[:cut]
        text = text[cut:]
    if text:
        yield text


def _prose_docs() -> Iterator[str]:
    """English prose: the Zen, LICENSE and other stdlib .txt/.rst files, pydoc topics, docstrings grouped by size."""
    rng = random.Random("fastprep/prose")
    texts = [_zen(), *(t for p in stdlib_files() if p.suffix != ".py" and (t := _read(p)))]
    pyfiles = [p for p in stdlib_files() if p.suffix == ".py"]
    rng.shuffle(pyfiles)

    def grouped_docstrings() -> Iterator[str]:
        buf: list[str] = []
        target = doc_len(rng)
        for p in pyfiles:
            for doc in _docstrings(p):
                buf.append(doc)
                if sum(len(b) for b in buf) >= target:
                    yield "\n\n".join(buf)
                    buf, target = [], doc_len(rng)

    sources = [iter(texts), iter(_topics().values()), grouped_docstrings()]
    for doc in itertools.chain.from_iterable(itertools.zip_longest(*sources)):
        if doc and doc.strip():
            yield from _split_long(doc)


def _code_docs() -> Iterator[str]:
    """Source code: one slice per stdlib module, starting on a random line, a random length (whole small files)."""
    rng = random.Random("fastprep/code")
    pyfiles = [p for p in stdlib_files() if p.suffix == ".py" and p.name != "topics.py"]
    rng.shuffle(pyfiles)
    for p in pyfiles:
        text = _read(p)
        if not text or not text.strip():
            continue
        target, lines = doc_len(rng), text.splitlines(keepends=True)
        start = end = rng.randrange(len(lines))
        size = 0
        while end < len(lines) and size < target:  # grow forward, then backward near the end of the file
            size, end = size + len(lines[end].encode()), end + 1
        while start > 0 and size < target:
            start, size = start - 1, size + len(lines[start - 1].encode())
        yield from _split_long("".join(lines[start:end]))


# ---------------------------------------------------------------------------------------------- other scripts

_FUNCTION_WORDS = {
    "zh": "的 了 是 在 和 有 我们 这个 一个 不 也 就 都 而 与 对 从 到 为 被 把 他们 可以 因为 所以 但是 如果 已经",
    "ja": "は が を に で と の も から まで より へ や です ます でした ました する した して いる ある ない この",
    "ko": "은 는 이 가 을 를 에 에서 의 와 과 도 로 으로 입니다 있습니다 했습니다 그리고 하지만 그래서 우리는",
    "ar": "في من إلى على عن مع هذا هذه التي الذي كان كانت و أن لا ما هو هي بين بعد قبل كل",
    "he": "של את על עם זה זו הוא היא אני לא כי גם אבל או כל יש אין היה",
    "hi": "है हैं का की के में से को और पर यह वह था थी थे नहीं भी एक लिए कि",
    "ru": "и в не на я что с по это он она как а но к у из за так же от для",
    "el": "και το η ο να σε με για από είναι δεν που θα τα οι στο στη ένα μια αλλά",
    "th": "และ ที่ ใน ของ เป็น มี ไม่ ได้ จะ ให้ กับ ว่า นี้ การ ความ แต่ ก็ ไป มา อยู่",
}


@cache
def words(script: str) -> tuple[str, ...]:
    """CLDR words of one script (tests/data/words_<script>.txt): territory, language, unit and calendar names."""
    return tuple((DATA_DIR / f"words_{script}.txt").read_text(encoding="utf-8").split())


@dataclass(frozen=True)
class _Style:
    """How one script writes: word and sentence separators, punctuation, native digits, quotes, casing."""

    sep: str
    gap: str
    ends: tuple[str, ...]
    commas: tuple[str, ...]
    digits: str = ""
    quotes: tuple[str, str] = ("\u201c", "\u201d")
    caps: bool = False
    attach: bool = False  # short function words glue onto the previous word (Korean particles)
    function: float = 0.27  # share of function words (Japanese needs more: its particles are the hiragana)


_STYLES = {
    "zh": _Style("", "", ("。", "！", "？", "。"), ("，", "、"), "０１２３４５６７８９"),
    "ja": _Style("", "", ("。", "！", "？", "。"), ("、",), "０１２３４５６７８９", ("「", "」"), function=0.6),
    "ko": _Style(" ", " ", (".", "?", "!", "."), (",",), attach=True),
    "ar": _Style(" ", " ", (".", "؟", "!", "."), ("،",), "٠١٢٣٤٥٦٧٨٩", ("«", "»")),
    "he": _Style(" ", " ", (".", "?", "!", "."), (",",), quotes=("\u05f4", "\u05f4")),
    "hi": _Style(" ", " ", ("।", "?", "।"), (",",), "०१२३४५६७८९"),
    "ru": _Style(" ", " ", (".", "!", "?", "…", "."), (",", " —"), quotes=("«", "»"), caps=True),
    "el": _Style(" ", " ", (".", "\u037e", "!", "."), (",", "\u0387"), quotes=("«", "»"), caps=True),
    "th": _Style("", " ", ("", "", "ฯ"), (" ",), "๐๑๒๓๔๕๖๗๘๙"),
}


def _number(rng: random.Random, digits: str = "") -> str:
    n = str(rng.choice([rng.randint(0, 99), rng.randint(100, 99_999), rng.randint(10**5, 10**12)]))
    return n.translate(str.maketrans("0123456789", digits)) if digits and rng.random() < 0.5 else n


def _sentence(rng: random.Random, script: str) -> str:
    style, function = _STYLES[script], _FUNCTION_WORDS[script].split()
    out: list[str] = []
    glued = False
    for i in range(n := rng.randint(4, 16)):
        r = rng.random()
        if r < 0.05:
            word = _number(rng, style.digits)
        elif r < 0.08:
            word = rng.choice(english_words())
        elif r < 0.08 + style.function:
            word = rng.choice(function)
        else:
            word = rng.choice(words(script))
        if rng.random() < 0.04:
            word = style.quotes[0] + word + style.quotes[1]
        if style.attach and word in function and len(word) <= 2 and out and not glued:
            out[-1], glued = out[-1] + word, True
        else:
            out.append(word)
            glued = False
        if 0 < i < n - 1 and rng.random() < 0.1:
            out[-1] += rng.choice(style.commas)
    text = style.sep.join(out)
    return (text[:1].upper() + text[1:] if style.caps else text) + rng.choice(style.ends)


def _script_text(rng: random.Random, script: str, target: int) -> str:
    """Paragraphs of sentences composed from real CLDR words in the script's own punctuation and spacing."""
    style, paragraphs, size = _STYLES[script], [], 0
    while size < target:
        paragraphs.append(style.gap.join(_sentence(rng, script) for _ in range(rng.randint(2, 7))))
        size += len(paragraphs[-1].encode()) + 2
    return "".join(p + rng.choice(("\n\n", "\n\n", "\n")) for p in paragraphs).rstrip("\n") + "\n"


def _script_docs() -> Iterator[str]:
    """Real CJK prose first, then generated documents, always for the script with the fewest bytes so far."""
    rng = random.Random("fastprep/scripts")
    yield from (p.read_text(encoding="utf-8") for p in sorted((DATA_DIR / "cpython_cjk").glob("*.txt")))
    written = dict.fromkeys(SCRIPTS, 0)
    while True:
        script = min(SCRIPTS, key=written.__getitem__)
        doc = _script_text(rng, script, doc_len(rng))
        written[script] += len(doc.encode())
        yield doc


# ---------------------------------------------------------------------------------------------- edge-case text

EMOJI = (
    *"😀🙂😂🥲🎉🔥✅🚀💯🤖🐍☕✨🫠🪿🧠🍣🌍⚡",
    *("❤" + VS16, "☺\ufe0e", "©" + VS16, "™", "1" + VS16 + "\u20e3", "#" + VS16 + "\u20e3"),
    ZWJ.join("👨👩👧👦"),
    ZWJ.join(["👩", "💻"]),
    ZWJ.join(["🏳" + VS16, "🌈"]),
    ZWJ.join(["👁" + VS16, "🗨" + VS16]),
    ZWJ.join(["🧑🏽", "🤝", "🧑🏻"]),
    *(base + chr(0x1F3FB + k) for base in "👍👋🙏💪🤝" for k in range(5)),
    *("".join(chr(0x1F1E6 + ord(c) - 65) for c in cc) for cc in ("JP", "US", "FR", "BR", "IN", "UA", "DE", "KR")),
    "🏴" + "".join(chr(0xE0000 + ord(c)) for c in "gbsct") + "\U000e007f",
)
_ACCENTED_TEXT = (
    "café naïve résumé Ångström Zoë São Paulo Kraków Straße façade Dvořák Łódź Ærøskøbing fiancée jalapeño Gödel "
    "Erdős İstanbul ﬁnance Tiếng Việt Nguyễn Đặng Hà Nội crème brûlée Øresund Māori Pešić señor "
    "السَّلَامُ عَلَيْكُمْ تَشْكِيل שָׁלוֹם בְּרֵאשִׁית क्षत्रिय द्वितीय ñandú ǅemal Å Ω K ℌ"
)
_ACCENTED = _ACCENTED_TEXT.split()
_SPACES: tuple[str, ...] = (" ", "  ", "   ", "\t", "\t\t", " \t ", "\u00a0", "\u3000", "\u200b", "\u2009", "\u202f")
_SPACES += ("\u2002", "\ufeff", "\u200c", "\u200d", "\x0b", "\x0c", "\u1680", "\u205f", "\u2060")
_NEWLINES = ("\n", "\n", "\r\n", "\r\n", "\r", "\n\n", "\n\n\n", "\r\n\r\n", "\u2028", "\u2029", "\x85", " \n", "\t\n")
_CONTRACTIONS_TEXT = (
    "it's It's IT'S he's she'd we're We're WE'RE they've They'LL I'm I'M you'll YOU'LL I'd don't DON'T won't can't "
    "isn't John's JOHN'S o'clock rock'n'roll '90s O'Neill y'all ma'am l'homme 'tis 'twas we'd've ''s 's 'S 'LL"
)
_CONTRACTIONS = _CONTRACTIONS_TEXT.split()
_APOSTROPHES = ("'",) * 6 + ("\u2019",) * 3 + ("\u2018", "\u02bc", "\uff07", "`")


def _fill(rng: random.Random, target: int, piece: Callable[[], str], seps: tuple[str, ...]) -> str:
    out, size = [], 0
    while size < target:
        out.append(piece() + rng.choice(seps))
        size += len(out[-1].encode())
    return "".join(out)


def _eng(rng: random.Random) -> str:
    word = rng.choice(english_words())
    return word.capitalize() if rng.random() < 0.1 else word.upper() if rng.random() < 0.02 else word


def zalgo(rng: random.Random, word: str) -> str:
    """Each letter followed by 1-8 random combining diacritics (U+0300-U+036F)."""
    return "".join(c + "".join(chr(rng.randint(0x300, 0x36F)) for _ in range(rng.randint(1, 8))) for c in word)


def _emoji_doc(rng: random.Random, target: int) -> str:
    def piece() -> str:
        r = rng.random()
        return rng.choice(EMOJI) * rng.randint(2, 12) if r < 0.03 else rng.choice(EMOJI) if r < 0.3 else _eng(rng)

    return _fill(rng, target, piece, (" ",) * 12 + ("", "\n", ". ", "! "))


def _combining_doc(rng: random.Random, target: int) -> str:
    """NFC/NFD/NFKC/NFKD spellings side by side, Zalgo stacks, decomposed Hangul, marks that start a word."""

    def piece() -> str:
        r = rng.random()
        if r < 0.1:
            return zalgo(rng, _eng(rng))
        if r < 0.15:
            return unicodedata.normalize("NFD", rng.choice(words("ko")))
        if r < 0.18:
            return chr(rng.randint(0x300, 0x36F)) + _eng(rng)
        word = rng.choice(_ACCENTED) if r < 0.6 else _eng(rng)
        return unicodedata.normalize(rng.choice(("NFC", "NFD", "NFKC", "NFKD")), word) if r < 0.5 else word

    return _fill(rng, target, piece, (" ",) * 10 + ("\n", ", ", ". "))


def _whitespace_doc(rng: random.Random, target: int) -> str:
    """Every kind of space, tab and line break, indentation, and whitespace tails (where split patterns differ)."""

    def line() -> str:
        indent = rng.choice(("", "", "    ", "\t", "\t\t", "  \t", " " * rng.randint(1, 40)))
        joined = "".join(_eng(rng) + rng.choice((" ",) * 6 + _SPACES) for _ in range(rng.randint(0, 12)))
        return indent + joined + rng.choice(("", "", " ", "  ", "\t"))

    text = _fill(rng, target, line, _NEWLINES)
    return text + rng.choice(("", "\n", "\n   ", "   ", "\n\t", "\r\n  ", " \n", "\u3000"))


def _numbers_doc(rng: random.Random, target: int) -> str:
    """Digit runs of every length, formatted numbers, native and fullwidth digits, fractions, numerals."""
    native = [s.digits for s in _STYLES.values() if s.digits]
    fixed = ("½ ⅓ ¾", "x² + y² = z²", "Ⅻ Ⅳ ⅸ", "① ② ③", "1st 2nd 3rd 4th", "10km", "3x4", "abc123def456")

    def piece() -> str:
        n, k = rng.randint(0, 10**9), rng.randint(0, 15)
        return [
            lambda: "".join(rng.choice("0123456789") for _ in range(rng.randint(10, 400))),
            lambda: f"{n:,}",
            lambda: f"{n / 997:.{k % 8 + 1}f}",
            lambda: f"{n:.3e}",
            lambda: f"${n / 100:,.2f}",
            lambda: f"{n % 100}%",
            lambda: f"20{n % 30:02d}-{n % 12 + 1:02d}-{n % 28 + 1:02d}T{n % 24:02d}:{n % 60:02d}:{k:02d}Z",
            lambda: f"+1 ({n % 1000:03d}) 555-{n % 10000:04d}",
            lambda: f"{n % 256}.{k}.{n % 7}.{n % 255}",
            lambda: f"v{k}.{n % 20}.{n % 9}-rc.{k % 3}",
            lambda: f"0x{n:08X} {rng.getrandbits(128):032x}",
            lambda: _number(rng, rng.choice(native)),
            lambda: rng.choice(fixed),
            lambda: _eng(rng),
            lambda: _eng(rng),
            lambda: _eng(rng),
        ][k]()

    return _fill(rng, target, piece, (" ", " ", " ", ", ", "\n", "; "))


def _contractions_doc(rng: random.Random, target: int) -> str:
    def piece() -> str:
        if rng.random() < 0.4:
            return rng.choice(_CONTRACTIONS).replace("'", rng.choice(_APOSTROPHES))
        return _eng(rng)

    return _fill(rng, target, piece, (" ",) * 10 + (". ", "\n", ", ", " '", "' "))


def _structured_doc(rng: random.Random, target: int) -> str:
    """URLs, e-mail, JSON, markdown tables, HTML, CSV, logs, paths, base64, SQL, shell, YAML: crawled-web shapes."""

    def piece() -> str:
        w = [rng.choice(english_words()).lower() for _ in range(6)]
        uni = rng.choice(words(rng.choice(SCRIPTS)))
        obj = {w[0]: rng.randint(-(10**6), 10**6), w[1]: [uni, None, True, 1.5e-3], w[2]: {w[3]: f"{w[4]} {uni}"}}
        choices = [
            lambda: f"https://{w[0]}.example.com/{w[1]}/{w[2]}?q={w[3]}&page={rng.randint(1, 99)}#{w[4]}",
            lambda: f"<{w[0]}.{w[1]}@example.org>",
            lambda: json.dumps(obj, ensure_ascii=rng.random() < 0.3, indent=rng.choice((None, 2, 4, "\t"))),
            lambda: (
                "| name | value | note |\n|:-----|------:|:----:|\n"
                + "".join(f"| {a} | {rng.randint(0, 9999)} | {uni} |\n" for a in w[:4])
            ),
            lambda: f'<div class="{w[0]}"><a href="/{w[1]}">{w[2]} &amp; {uni}</a><br/></div>',
            lambda: ",".join(f'"{a}"' if i % 2 else a for i, a in enumerate(w)),
            lambda: f"2024-05-{rng.randint(1, 28):02d} 12:{rng.randint(0, 59):02d}:07,123 WARNING [{w[0]}] {w[1]}",
            lambda: f"C:\\Users\\{w[0]}\\{w[1]}.txt and /usr/local/{w[2]}/{w[3]}.so",
            lambda: codecs.encode(rng.randbytes(rng.randint(8, 120)), "base64").decode(),
            lambda: f"SELECT {w[0]}, {w[1]} FROM {w[2]} WHERE {w[3]} = '{uni}';",
            lambda: f"$ {w[0]} --{w[1]}={w[2]} | grep -E '^{w[3]}' > /dev/null 2>&1",
            lambda: f"- {w[0]}: {w[1]}\n  {w[2]}: [{w[3]}, {uni}]",
        ]
        return rng.choice(choices)()

    return _fill(rng, target, piece, ("\n", "\n\n", " "))


def _mixed_script_doc(rng: random.Random, target: int) -> str:
    """Words of different scripts in one line, bidi controls, and code with non-ASCII string literals."""

    def piece() -> str:
        r = rng.random()
        if r < 0.1:
            return f'print("{rng.choice(words(rng.choice(SCRIPTS)))}")  # {_eng(rng)}\n'
        if r < 0.14:
            return rng.choice("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2069")
        return rng.choice(words(rng.choice(SCRIPTS))) if r < 0.6 else _eng(rng)

    return _fill(rng, target, piece, (" ",) * 8 + ("", "\n", ", "))


def _mixed_docs() -> Iterator[str]:
    rng = random.Random("fastprep/mixed")
    kinds = (_emoji_doc, _combining_doc, _whitespace_doc, _numbers_doc, _contractions_doc, _structured_doc)
    for kind in itertools.cycle((*kinds, _mixed_script_doc)):
        yield kind(rng, doc_len(rng))


# (name, stream, share of min_bytes); a finite stream's shortfall moves on to the next, and the last never ends.
PLAN: tuple[tuple[str, Callable[[], Iterator[str]], float], ...] = (
    ("english prose", _prose_docs, 0.34),
    ("python source", _code_docs, 0.20),
    ("nine scripts", _script_docs, 0.30),
    ("edge cases", _mixed_docs, 0.16),
)


def build_corpus(min_bytes: int) -> list[str]:
    """Fill each stream's share of ``min_bytes`` in turn, then shuffle the documents with a fixed seed."""
    docs: list[str] = []
    total = carry = 0
    for i, (_name, stream, share) in enumerate(PLAN):
        quota = carry + (min_bytes - total if i == len(PLAN) - 1 else int(min_bytes * share))
        got = 0
        for doc in stream():
            if got >= quota:
                break
            docs.append(doc)
            got += len(doc.encode())
        total, carry = total + got, max(0, quota - got)
    random.Random("fastprep/order").shuffle(docs)
    return docs


# ---------------------------------------------------------------------------------------------- composition report

_SCRIPT_PREFIXES: tuple[str, ...] = (
    "CJK",
    "HIRAGANA",
    "KATAKANA",
    "HANGUL",
    "ARABIC",
    "HEBREW",
    "DEVANAGARI",
    "CYRILLIC",
    "GREEK",
)
_SCRIPT_PREFIXES += ("THAI", "LATIN")


@cache
def char_class(c: str) -> str:
    """A coarse class for composition reports: ASCII kinds, the script (by Unicode name), or the general category."""
    o, cat = ord(c), unicodedata.category(c)
    if o < 128:
        kinds = (("ascii letter", c.isalpha()), ("ascii digit", c.isdigit()), ("ascii whitespace", c.isspace()))
        return next((k for k, hit in kinds if hit), "ascii control" if cat == "Cc" else "ascii punct/symbol")
    if cat[0] == "M":
        return "combining mark"
    if cat[0] == "Z" or c in "\x85\u200b\u200c\u200d\u2060\ufeff":
        return "unicode space / zero-width"
    name = unicodedata.name(c, "")
    script = next((p for p in _SCRIPT_PREFIXES if name.startswith(p)), None)
    if script:
        return script.lower() + (" (non-ascii)" if script == "LATIN" else "")
    if cat == "So" or 0x1F1E6 <= o <= 0x1FAFF or 0xE0020 <= o <= 0xE007F or c in "\ufe0e\ufe0f":
        return "emoji / symbol"
    other = {"N": "other number", "L": "other letter", "P": "other punctuation", "C": "control / format"}
    return other.get(cat[0], "other")


def composition(docs: list[str]) -> Counter[str]:
    """Characters per char_class over all documents (counted per distinct character, so it is fast)."""
    counts: Counter[str] = Counter()
    for doc in docs:
        counts.update(doc)
    classes: Counter[str] = Counter()
    for ch, n in counts.items():
        classes[char_class(ch)] += n
    return classes
