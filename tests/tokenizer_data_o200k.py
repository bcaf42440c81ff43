"""o200k_base (GPT-4o, gpt-oss) without a download: the hash-checked rank file that
`fastprep._vocab.o200k_file()` rebuilds from the `quicktok-v1` wheel (in the test extra for
Python 3.11, the wheel's only build), or `FASTPREP_O200K_TIKTOKEN`; where neither is there the
o200k tests and benches say so.
"""

from __future__ import annotations

from typing import Any

from fastprep._vocab import O200K_SHA256, o200k_file

__all__ = ["O200K_PATTERN", "O200K_SHA256", "O200K_SPECIAL_TOKENS", "o200k_file", "tiktoken_o200k"]

O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
O200K_SPECIAL_TOKENS = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}


def tiktoken_o200k() -> Any:
    """tiktoken's own Encoding for o200k_base, fed with the verified file (no download)."""
    import tiktoken
    import tiktoken.load

    path = o200k_file()
    if path is None:
        raise LookupError("o200k_base.tiktoken is not here: install quicktok-v1 or set FASTPREP_O200K_TIKTOKEN")
    ranks = tiktoken.load.load_tiktoken_bpe(str(path), expected_hash=O200K_SHA256)
    return tiktoken.Encoding(
        "o200k_base", pat_str=O200K_PATTERN, mergeable_ranks=ranks, special_tokens=O200K_SPECIAL_TOKENS
    )
