"""fastprep: fast AI preprocessing (tokenization, image decode/resize/normalize) in Rust and CUDA.

The public API is what ``__all__`` lists; ``fastprep._core`` is private.
"""

from __future__ import annotations

from . import decoders, errors, hf
from ._core import __version__, build_profile
from ._info import build_info
from ._token_cache import set_token_cache_mb, token_cache_bytes, token_cache_mb
from .decoders import DecodeStream
from .errors import (
    DecodeError,
    DecompressionBombWarning,
    DeviceUnavailableError,
    FastprepError,
    PoolExhaustedError,
    TokenizeError,
    TokenizerFileError,
    UnsupportedTokenizerError,
)
from .gpu import gpu_resize
from .image import MAX_IMAGE_PIXELS, decode, decode_batch, pillow_order, reduce, resize, resize_batch
from .kernels import kernel_names, kernel_source
from .pipeline import IMAGENET_MEAN, IMAGENET_STD, ImagePipeline, preprocess
from .pool import Block, BlockPool, PoolStats
from .tokenizer import AddedToken, Encoding, Tokenizer
from .train import PARAM_COLUMNS, TrainPipeline

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "MAX_IMAGE_PIXELS",
    "PARAM_COLUMNS",
    "AddedToken",
    "Block",
    "BlockPool",
    "DecodeError",
    "DecodeStream",
    "DecompressionBombWarning",
    "DeviceUnavailableError",
    "Encoding",
    "FastprepError",
    "ImagePipeline",
    "PoolExhaustedError",
    "PoolStats",
    "TokenizeError",
    "Tokenizer",
    "TokenizerFileError",
    "TrainPipeline",
    "UnsupportedTokenizerError",
    "__version__",
    "build_info",
    "build_profile",
    "decode",
    "decode_batch",
    "decoders",
    "errors",
    "gpu_resize",
    "hf",
    "kernel_names",
    "kernel_source",
    "pillow_order",
    "preprocess",
    "reduce",
    "resize",
    "resize_batch",
    "set_token_cache_mb",
    "token_cache_bytes",
    "token_cache_mb",
]
