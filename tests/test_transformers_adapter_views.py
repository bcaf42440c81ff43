"""fastprep.hf follows a component changed in place: tokenizers' ``normalizer``, ``pre_tokenizer``,
``post_processor``, ``decoder`` and ``model`` are views of the tokenizer, so
``tok.backend_tokenizer.normalizer.lowercase = False`` changes what transformers gives; the
patched tokenizer must give the same, also when the view was taken before other calls."""

from __future__ import annotations

import pytest

from fastprep import hf

from . import tokenizer_data as data
from . import tokenizer_data_wordpiece as wp

transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")
from tokenizers import pre_tokenizers  # noqa: E402  (transformers brings tokenizers)

TEXTS = ["Hello World, UNAFFABLE café", "  two  spaces and ᚠ runes", "unaffable"]


def _bert() -> tuple[object, object]:
    model_dir = wp.bert_file().parent
    return transformers.AutoTokenizer.from_pretrained(model_dir, local_files_only=True), hf.from_pretrained(model_dir)


def _bytelevel(tmp_path) -> tuple[object, object]:
    path = tmp_path / "tokenizer.json"
    path.write_text(data.trained_bytelevel_bpe(add_prefix_space=False))
    ref = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path))
    return ref, hf.patch(transformers.PreTrainedTokenizerFast(tokenizer_file=str(path)))


def _same(ref, fp) -> list:
    assert fp(TEXTS, return_offsets_mapping=True).data == ref(TEXTS, return_offsets_mapping=True).data
    ids = ref(TEXTS)["input_ids"]
    assert fp.batch_decode(ids) == ref.batch_decode(ids)
    assert fp.batch_decode(ids, skip_special_tokens=True) == ref.batch_decode(ids, skip_special_tokens=True)
    return [ids, ref.batch_decode(ids)]


CHANGES = {
    "normalizer attribute": lambda t: setattr(t.backend_tokenizer.normalizer, "lowercase", False),
    "normalizer strip_accents": lambda t: setattr(t.backend_tokenizer.normalizer, "strip_accents", False),
    "decoder attribute": lambda t: setattr(t.backend_tokenizer.decoder, "prefix", "@@"),
    "model attribute": lambda t: setattr(t.backend_tokenizer.model, "unk_token", "[PAD]"),
    "model prefix": lambda t: setattr(t.backend_tokenizer.model, "continuing_subword_prefix", "@@"),
}


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_bert_component_changed_in_place(change):
    ref, fp = _bert()
    before = _same(ref, fp)  # fastprep built and used before the change
    for tok in (ref, fp):
        CHANGES[change](tok)
    assert _same(ref, fp) != before  # the change shows in transformers' results, and in fastprep's


def test_view_kept_across_calls_and_sequence_item_set(tmp_path):
    ref, fp = _bytelevel(tmp_path)
    views = [tok.backend_tokenizer.pre_tokenizer for tok in (ref, fp)]
    before = _same(ref, fp)
    for view in views:  # a view taken before calls, changed after them
        view.add_prefix_space = True
    assert _same(ref, fp) != before
    for tok in (ref, fp):
        tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
        )
    _same(ref, fp)
    for tok in (ref, fp):  # an item of a Sequence set in place
        tok.backend_tokenizer.pre_tokenizer[0] = pre_tokenizers.Digits(individual_digits=False)
    _same(ref, fp)
    assert fp("12345")["input_ids"] == ref("12345")["input_ids"]


def test_no_rebuild_while_nothing_changes():
    """transformers reads ``backend_tokenizer.decoder`` (and, for some, ``.model``) on every
    decode: watching them must not rebuild fastprep's tokenizer (a full reload) unless one really changed."""
    _, fp = _bert()
    fp(TEXTS)
    ids = fp(TEXTS)["input_ids"]
    fp.batch_decode(ids)
    fp.convert_tokens_to_string(["un", "##aff", "##able"])
    core = fp._tokenizer._fp
    for _ in range(3):
        fp(TEXTS, padding=True, truncation=True, max_length=8)
        fp.batch_decode(ids, skip_special_tokens=True)
    assert fp._tokenizer._fp is core and "decoder" in fp._tokenizer._views
    fp.backend_tokenizer.model.max_input_chars_per_word = 3
    fp(TEXTS)
    assert fp._tokenizer._fp is not core
