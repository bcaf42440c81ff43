"""transformers' own tokenizer tests on fastprep.hf, a fast part of tests/upstream_transformers.

The upstream tests (``TokenizerTesterMixin``, ``TokenizersBackendTesterMixin``) run on the
stock tokenizers backend and then with every transformers fast tokenizer on fastprep, each
fastprep call compared with tokenizers'; this selection covers encoding with padding,
truncation and overflow, pairs, pre-tokenized input, alignment and offsets, special tokens,
added tokens, save/load, training a new tokenizer and decoding, on BERT (upstream's own backend test class), a
byte-level BPE and a SentencePiece BPE. Offline: the test files come from the transformers sdist
that scripts/env.sh caches; the full run is ``python tests/upstream_transformers/run.py``.
"""

from __future__ import annotations

import pytest

pytest.importorskip("transformers", reason="the test extra installs transformers")
pytest.importorskip("parameterized", reason="the test extra installs parameterized")

from .upstream_transformers import run, source

SELECTION = (
    "(TokenizersBackendCommonTest or BertTokenizationTest or GPT2 or LlamaTokenizationTest) and ("
    "test_alignment_methods or test_offsets_mapping or test_call or test_batch_encode_plus_padding"
    " or test_maximum_encoding_length_pair_input or test_pretokenized_inputs or test_special_tokens_mask"
    " or test_added_tokens_serialization or test_save_and_load_tokenizer or test_batch_encode_dynamic_overflowing"
    " or test_tokenize_special_tokens or test_encode_plus_with_padding or test_training_new_tokenizer"
    " or test_add_bos_token_without_bos_token)"
)


def test_upstream_tokenizer_tests_pass_on_fastprep_as_on_stock():
    if not source.sdist_path().is_file():
        pytest.fail(source.missing_message())
    summary = run.run_suite(["-k", SELECTION], timeout=600)
    assert summary.ok(), run.report(summary)
    # the selection ran, passed upstream's assertions, and fastprep answered (and was compared)
    assert summary.counts["passed"] >= 20, run.report(summary)
    assert summary.calls > 1000, run.report(summary)
