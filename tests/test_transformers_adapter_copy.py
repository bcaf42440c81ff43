"""fastprep.hf under copies and pickles: transformers deep-copies tokenizers (its own tests and
``copy.deepcopy(tokenizer)`` in user code), DataLoader workers and ``datasets.map(num_proc=)``
pickle them. The copy must stay on fastprep, give transformers' results and be independent."""

from __future__ import annotations

import copy
import pickle

import pytest

from fastprep import hf

from . import tokenizer_data_wordpiece as wp

transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")

TEXTS = ["Hello world, this is fastprep.", "A second, longer text for the batch: café, 東京, 😀."]


@pytest.fixture(scope="module")
def pair() -> tuple[object, object]:
    model_dir = wp.bert_file().parent
    return transformers.AutoTokenizer.from_pretrained(model_dir, local_files_only=True), hf.from_pretrained(model_dir)


@pytest.mark.parametrize(
    "clone",
    [copy.copy, copy.deepcopy, lambda t: pickle.loads(pickle.dumps(t))],
    ids=["copy", "deepcopy", "pickle"],
)
def test_copies_stay_on_fastprep_with_transformers_results(pair, clone):
    ref, fp = pair
    ref_copy, fp_copy = clone(ref), clone(fp)
    assert isinstance(fp_copy._tokenizer, hf.FastprepBackend)
    kw = {"padding": True, "truncation": True, "max_length": 12, "return_offsets_mapping": True}
    assert fp_copy(TEXTS, **kw).data == ref_copy(TEXTS, **kw).data == ref(TEXTS, **kw).data
    ids = ref(TEXTS)["input_ids"]
    assert fp_copy.batch_decode(ids) == ref.batch_decode(ids)


@pytest.mark.parametrize("clone", [copy.copy, copy.deepcopy], ids=["copy", "deepcopy"])
def test_a_copied_backend_is_independent(pair, clone):
    _, fp = pair
    padding, ids = fp._tokenizer.padding, fp._tokenizer.encode("hello").ids
    backend = clone(fp._tokenizer)
    assert isinstance(backend, hf.FastprepBackend) and backend.original is not fp._tokenizer.original
    backend.enable_padding(length=20, pad_id=0, pad_token="[PAD]")
    assert len(backend.encode("hello").ids) == 20 != len(ids)
    assert fp._tokenizer.padding == padding and fp._tokenizer.encode("hello").ids == ids
