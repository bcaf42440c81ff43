"""transformers' tokenizer test mixins applied to the local stand-in models (hub.py).

Copied next to upstream's tests (as ``tests/test_fastprep_models.py``) and collected with them,
as a model's own ``tests/models/*/test_tokenization_*.py`` would apply the mixins (those files
are not in transformers' sdist): ``TokenizerTesterMixin`` (test_tokenization_common.py) and
``TokenizersBackendTesterMixin`` (test_tokenizers_backend_mixin.py) on one tokenizer per model
family. Upstream's own ``TokenizersBackendCommonTest`` (BERT) runs from its file unchanged.
"""

import unittest

from transformers import (
    BertTokenizer,
    GPT2Tokenizer,
    LlamaTokenizer,
    PreTrainedTokenizerFast,
    Qwen2Tokenizer,
    RobertaTokenizer,
    T5Tokenizer,
)

from .test_tokenization_common import TokenizerTesterMixin
from .test_tokenizers_backend_mixin import TokenizersBackendTesterMixin

BERT = "google-bert/bert-base-uncased"
GPT2 = "openai-community/gpt2"
LLAMA = "hf-internal-testing/llama-tokenizer"
ROBERTA = "FacebookAI/roberta-base"
QWEN2 = "Qwen/Qwen2-0.5B"
T5 = "google-t5/t5-base"
UNIGRAM = "robot-test/dummy-tokenizer-fast"
WORDLEVEL = "robot-test/dummy-tokenizer-wordlevel"


class BertTokenizationTest(TokenizerTesterMixin, unittest.TestCase):
    tokenizer_class = BertTokenizer
    from_pretrained_id = BERT


class GPT2TokenizationTest(TokenizerTesterMixin, unittest.TestCase):
    tokenizer_class = GPT2Tokenizer
    from_pretrained_id = GPT2


class GPT2BackendTest(TokenizersBackendTesterMixin, unittest.TestCase):
    tokenizer_class = rust_tokenizer_class = GPT2Tokenizer
    from_pretrained_id = GPT2


class RobertaTokenizationTest(TokenizerTesterMixin, unittest.TestCase):
    tokenizer_class = RobertaTokenizer
    from_pretrained_id = ROBERTA


class RobertaBackendTest(TokenizersBackendTesterMixin, unittest.TestCase):
    tokenizer_class = rust_tokenizer_class = RobertaTokenizer
    from_pretrained_id = ROBERTA


class Qwen2TokenizationTest(TokenizerTesterMixin, unittest.TestCase):
    tokenizer_class = Qwen2Tokenizer
    from_pretrained_id = QWEN2


class Qwen2BackendTest(TokenizersBackendTesterMixin, unittest.TestCase):
    tokenizer_class = rust_tokenizer_class = Qwen2Tokenizer
    from_pretrained_id = QWEN2


class LlamaTokenizationTest(TokenizerTesterMixin, unittest.TestCase):
    tokenizer_class = LlamaTokenizer
    from_pretrained_id = LLAMA


class LlamaBackendTest(TokenizersBackendTesterMixin, unittest.TestCase):
    tokenizer_class = rust_tokenizer_class = LlamaTokenizer
    from_pretrained_id = LLAMA


class T5TokenizationTest(TokenizerTesterMixin, unittest.TestCase):
    tokenizer_class = T5Tokenizer
    from_pretrained_id = T5


class UnigramFastTokenizationTest(TokenizerTesterMixin, unittest.TestCase):
    tokenizer_class = PreTrainedTokenizerFast
    from_pretrained_id = UNIGRAM


class UnigramFastBackendTest(TokenizersBackendTesterMixin, unittest.TestCase):
    tokenizer_class = rust_tokenizer_class = PreTrainedTokenizerFast
    from_pretrained_id = UNIGRAM


class WordLevelFastTokenizationTest(TokenizerTesterMixin, unittest.TestCase):
    tokenizer_class = PreTrainedTokenizerFast
    from_pretrained_id = WORDLEVEL


class WordLevelFastBackendTest(TokenizersBackendTesterMixin, unittest.TestCase):
    tokenizer_class = rust_tokenizer_class = PreTrainedTokenizerFast
    from_pretrained_id = WORDLEVEL
