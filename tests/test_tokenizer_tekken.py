"""``Tokenizer.from_tekken`` against mistral-common's own ``Tekkenizer`` on its two bundled
Tekken files: ids (with and without bos) and decode, on the multilingual sample and on
hypothesis text."""

from __future__ import annotations

import functools
import pickle
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastprep import Tokenizer

tekken = pytest.importorskip("mistral_common.tokens.tokenizers.tekken")

DATA = Path(tekken.__file__).parents[2] / "data"
FILES = ["tekken_240911.json", "tekken_240718.json"]
SAMPLE = Path(__file__).parents[1] / "python" / "fastprep" / "data" / "sample_text.txt"


@functools.cache
def pair(name: str) -> tuple[Tokenizer, object]:
    path = DATA / name
    if not path.is_file():
        pytest.skip(f"{name} is not in this mistral-common")
    return Tokenizer.from_tekken(path), tekken.Tekkenizer.from_file(path)


def lines() -> list[str]:
    text = SAMPLE.read_text(encoding="utf-8")
    return [*text.splitlines(keepends=True), text]


@pytest.mark.parametrize("name", FILES)
def test_ids_and_decode_match_mistral_common_on_the_sample(name: str) -> None:
    fp, ref = pair(name)
    texts = [*lines(), "[INST] hi </s><s> <SPECIAL_20> [/INST]", "", "  \n\n\t x"]
    got = [e.ids for e in fp.encode_batch(texts, add_special_tokens=False)]
    want = [ref.encode(t, bos=False, eos=False) for t in texts]  # type: ignore[attr-defined]
    assert got == want
    assert fp.encode(texts[0]).ids == ref.encode(texts[0], bos=True, eos=False)  # type: ignore[attr-defined]
    for t, ids in zip(texts, want, strict=True):
        assert fp.decode(ids) == ref.decode(ids) == t  # type: ignore[attr-defined]
    # Special tokens are skipped by both, and named by both.
    ids = [1, *want[0], 2, 3]
    assert fp.decode(ids) == ref.decode(ids)  # type: ignore[attr-defined]
    assert fp.decode(ids, skip_special_tokens=False).startswith("<s>")
    assert fp.token_to_id("[INST]") == 3
    assert fp.get_vocab_size() == ref.n_words  # type: ignore[attr-defined]
    # A copy reads special strings as text too (the setting is not in the tokenizer.json).
    copied = pickle.loads(pickle.dumps(fp))
    assert copied.encode(texts[-3], add_special_tokens=False).ids == want[-3]
    # So does one whose pipeline is rebuilt by setting a component.
    copied.decoder = copied.decoder
    assert copied.encode(texts[-3], add_special_tokens=False).ids == want[-3]


def test_the_split_engine_is_pcre2() -> None:
    fp, _ = pair(FILES[0])
    engines = [p["engine"] for p in fp.describe()["pre_tokenizers"]]
    assert engines[0] == "dfa, class bytes", engines


@settings(max_examples=150, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=60))
def test_ids_match_on_hypothesis_text(text: str) -> None:
    for name in FILES:
        fp, ref = pair(name)
        want = ref.encode(text, bos=False, eos=False)  # type: ignore[attr-defined]
        assert fp.encode(text, add_special_tokens=False).ids == want
        assert fp.decode(want) == ref.decode(want)  # type: ignore[attr-defined]
