"""``Tokenizer.from_sentencepiece``: a SentencePiece ``.model`` file loaded directly (our own
protobuf reader) builds the pipeline of transformers' ``build_tokenizer_from_spm_proto`` (same
tokenizer.json) and must give the ids of the ``sentencepiece`` package's ``encode`` on the corpus
sample, for Mistral v1's BPE and the Unigram models trained here.

Deliberate differences from HF tokenizers on the converted file, where HF and SentencePiece
disagree: Unigram models loaded this way sum their scores in float32 as SentencePiece does
(re-centred past 1e5 like it), so long documents break near-ties SentencePiece's way (HF sums
float64); and a text that the converter's normalizers turn into another string than
SentencePiece's normalizer does (HF's Precompiled reads the charsmap per grapheme cluster,
SentencePiece by longest match over the bytes) takes SentencePiece's; and text never matches a
control, unknown, unused or byte piece (``<s>``, ``<unk>``, ``<0x41>`` written out), which the
converted Unigram vocabulary lets text spell. Everywhere else the encodings are HF's, offsets
included.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastprep

from . import tokenizer_data as data
from . import tokenizer_data_spm as spm_data
from .tokenizer_compare import diff

EDGE = ["<unk>", "<s>x</s>", "<0x41>", "▁", "  two  spaces  ", "ｆｕｌｌ ① ﬁ", "e\u0301", "\x00a", "\u3000x\t\n"]


def _files() -> dict[str, Path]:
    return {
        "mistral_bpe": spm_data.mistral_model_file(),
        "unigram_nfkc_bytes": spm_data.sentencepiece_unigram_file("nfkc_bytes"),
        "unigram_plain": spm_data.sentencepiece_unigram_file("plain"),
    }


@pytest.fixture(scope="module")
def corpus():
    return data.corpus_documents(5_000_000)[2::4]


@pytest.fixture(scope="module", params=["mistral_bpe", "unigram_nfkc_bytes", "unigram_plain"])
def model(request):
    import sentencepiece
    import transformers.convert_slow_tokenizer as conv

    path = _files()[request.param]
    proto = spm_data._model_proto(path)
    if proto.trainer_spec.model_type == 2:
        vocab = {p.piece: i for i, p in enumerate(proto.pieces)}
    else:
        vocab = [(p.piece, p.score) for p in proto.pieces]
    hf = conv.SpmConverter.build_tokenizer_from_spm_proto(proto, vocab)
    sp = sentencepiece.SentencePieceProcessor(model_file=str(path))
    return request.param, fastprep.Tokenizer.from_sentencepiece(path), hf, sp


def test_same_pipeline_as_the_converter(model):
    name, fp, hf, _ = model
    ours, theirs = json.loads(fp.to_str()), json.loads(hf.to_str())
    for key in ("normalizer", "pre_tokenizer", "decoder", "post_processor", "added_tokens"):
        assert ours[key] == theirs[key], (name, key)
    assert ours["model"] == theirs["model"], name


def test_encodings_equal_hf_on_the_conversion(model, corpus):
    """Identical encodings, except where fastprep takes SentencePiece's way (float32 near-ties,
    a different normalized text): the ids must then be SentencePiece's."""
    name, fp, hf, sp = model
    docs = corpus[::2]
    bad = []
    for doc in docs:
        ref, got = hf.encode(doc), fp.encode(doc)
        if diff(ref, got) is None:
            continue
        if name != "mistral_bpe" and got.ids != ref.ids and got.ids == sp.encode(doc):
            continue
        bad.append(doc[:40])
    assert not bad, f"{name}: {len(bad)}/{len(docs)} differ: {bad[:3]}"


def test_ids_equal_sentencepiece(model, corpus):
    name, fp, _, sp = model
    docs = [*corpus, *data.short_texts(), *EDGE]
    want = sp.encode(docs)
    got = [e.ids for e in fp.encode_batch(docs)]
    differ = [i for i, (w, g) in enumerate(zip(want, got, strict=True)) if w != g]
    assert not differ, f"{name}: {len(differ)}/{len(docs)} differ: {[docs[i][:40] for i in differ[:3]]}"


CHAR = st.one_of(
    st.characters(codec="utf-8"),
    st.sampled_from(list("日本語éñ\u0301▁ \t\n\u3000\xa0ｆＡ①ﬁ㍿\u200b\u200d")),
    st.sampled_from(["𓀀", "\x00", "\ufffd"]),
)
PIECE = st.one_of(st.text(CHAR, max_size=6), st.sampled_from([" the", "  ", "▁▁", "ing", "<0x41>", "<unk>", "<s>"]))


@settings(max_examples=300, deadline=None)
@given(text=st.lists(PIECE, max_size=40).map("".join))
def test_hyp_ids_equal_sentencepiece(text):
    for fp, sp in _loaded():
        assert fp.encode(text).ids == sp.encode(text)


_LOADED: list[tuple[fastprep.Tokenizer, Any]] = []


def _loaded() -> list[tuple[fastprep.Tokenizer, Any]]:
    if not _LOADED:
        import sentencepiece

        for path in _files().values():
            sp = sentencepiece.SentencePieceProcessor(model_file=str(path))
            _LOADED.append((fastprep.Tokenizer.from_sentencepiece(path), sp))
    return _LOADED


def test_decode_round_trip(model, corpus):
    name, fp, hf, sp = model
    for doc in corpus[:50]:
        ids = sp.encode(doc)
        assert fp.decode(ids) == hf.decode(ids), (name, doc[:40])


def test_not_a_model_file(tmp_path):
    bad = tmp_path / "x.model"
    bad.write_bytes(b"\x0a\xff\xff")
    with pytest.raises(fastprep.TokenizerFileError, match="sentencepiece"):
        fastprep.Tokenizer.from_sentencepiece(bad)


def test_exact_ties_inside_words_fall_sentencepieces_way_in_long_texts(tmp_path):
    """A Unigram model whose ``▁the`` scores exactly ``▁th`` + ``e`` (float32): the two cuts of
    every "the" tie, and SentencePiece's float32 running sum, which grows along a text, decides
    each. fastprep caches a word's cut only where its margin beats the rounding the sum can carry
    (a tie never does), so these words run SentencePiece's lattice from the running sum: the ids
    must equal ``sentencepiece``'s on long texts, also past the sum's re-centring at 1e5."""
    import numpy as np
    import sentencepiece

    proto = spm_data._model_proto(spm_data.sentencepiece_unigram_file("plain"))
    pieces = {p.piece: p for p in proto.pieces}
    split = next((a, b) for a, b in (("▁th", "e"), ("▁t", "he"), ("▁", "the")) if a in pieces and b in pieces)
    assert "▁the" in pieces, "the trained model has no ▁the"
    pieces["▁the"].score = float(np.float32(pieces[split[0]].score) + np.float32(pieces[split[1]].score))
    path = tmp_path / "tied.model"
    path.write_bytes(proto.SerializeToString())
    sp = sentencepiece.SentencePieceProcessor(model_file=str(path))
    fp = fastprep.Tokenizer.from_sentencepiece(path)
    docs = data.corpus_documents(2_000_000)
    texts = [*docs[:300], " ".join(docs[:40]), " ".join(docs[:400])]  # the last one past 1e5
    got = [e.ids for e in fp.encode_batch(texts)]
    bad = [t[:40] for t, g, w in zip(texts, got, sp.encode(texts), strict=True) if g != w]
    assert not bad, f"{len(bad)}/{len(texts)} differ: {bad[:3]}"
    # the ties really went both ways along the texts (else this test would not test them)
    pieces_out = [sp.id_to_piece(i) for ids in got for i in ids]
    whole = pieces_out.count("▁the")
    cut = sum(1 for a, b in itertools.pairwise(pieces_out) if (a, b) == split)
    assert whole > 0 and cut > 0, (whole, cut)
