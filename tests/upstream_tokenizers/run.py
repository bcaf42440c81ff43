"""Run ``tokenizers``' own Python binding tests against fastprep, every call on both libraries.

    .venv/bin/python tests/upstream_tokenizers/run.py PATH [pytest args...]

PATH is a checkout of github.com/huggingface/tokenizers (or its bare git directory). Its
``bindings/python/tests`` are copied to a temporary directory and run by pytest with
``tokenizers.Tokenizer``, ``Encoding``, ``AddedToken`` and ``decoders.DecodeStream`` replaced by the
side-by-side objects of ``shim.py`` (tokenizers' ``implementations`` too), so each upstream
assertion checks fastprep's result and each call's results are compared with tokenizers'. The
files the tests download from the Hub are replaced by local files of the same kind (a BERT
uncased vocab.txt, a byte-level BPE vocab.json/merges.txt, a char-level BPE, text files); tests
that need a model by Hub name cannot run offline with either library. Prints the pytest summary
and every difference found. Not part of the CI suite (it needs the tokenizers sources).
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
FILES = ("test_tokenizer.py", "test_encoding.py", "test_processors.py")


def _upstream_tests(src: Path, dest: Path) -> Path:
    """Copies bindings/python/tests of the checkout (or bare git dir) ``src`` under ``dest``."""
    root = dest / "python"
    if (src / "bindings" / "python" / "tests").is_dir():
        shutil.copytree(src / "bindings" / "python" / "tests", root / "tests")
    else:
        root.mkdir(parents=True)
        archive = subprocess.run(
            ["git", f"--git-dir={src}", "archive", "HEAD", "bindings/python/tests"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
        shutil.move(str(dest / "bindings" / "python" / "tests"), str(root / "tests"))
    return root


def _local_files(dest: Path) -> dict[str, str]:
    """Local stand-ins for the Hub files of upstream's tests/utils.py."""
    sys.path.insert(0, str(REPO))
    from tests import tokenizer_data as data
    from tests import tokenizer_data_wordpiece as wp

    out: dict[str, str] = {}
    bert = json.loads(wp.bert_tokenizer_json())["model"]["vocab"]
    (dest / "bert-vocab.txt").write_text("".join(t + "\n" for t, _ in sorted(bert.items(), key=lambda kv: kv[1])))
    out["bert-base-uncased-vocab.txt"] = str(dest / "bert-vocab.txt")
    bpe = json.loads(data.trained_bytelevel_bpe(add_prefix_space=True))["model"]
    (dest / "roberta-vocab.json").write_text(json.dumps(bpe["vocab"]))
    merges = [m if isinstance(m, str) else " ".join(m) for m in bpe["merges"]]
    (dest / "roberta-merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    out["roberta-base-vocab.json"] = str(dest / "roberta-vocab.json")
    out["roberta-base-merges.txt"] = str(dest / "roberta-merges.txt")
    docs = data.corpus_documents(1_000_000)
    (dest / "small.txt").write_text("\n".join(docs)[:200_000])
    (dest / "big.txt").write_text("\n".join(docs)[:1_000_000])
    out["small.txt"], out["big.txt"] = str(dest / "small.txt"), str(dest / "big.txt")
    import tokenizers

    # Models the tests load by Hub name, as local tokenizer.json files of the same kind in a
    # Hub cache of their own (both libraries read it offline): GPT-style byte-level BPE for
    # gpt2 and gpt-oss, a Llama-style SentencePiece BPE for the Llama ones, BERT for
    # bert-base-cased, a converted SentencePiece Unigram for t5-base. Their ids differ from the
    # real models', so assertions of exact ids fail for both libraries alike.
    from tests import tokenizer_data_spm as spm

    byte_bpe = data.trained_bytelevel_bpe(add_prefix_space=False)
    models = {
        "gpt2": byte_bpe,
        "hf-internal-testing/gpt-oss-20b": byte_bpe,
        "hf-internal-testing/Llama-3.1-8B-Instruct": byte_bpe,
        "hf-internal-testing/llama-new-metaspace": spm.mistral_tokenizer_json("metaspace"),
        "bert-base-cased": wp.bert_tokenizer_json(),
        "anthony/tokenizers-test": wp.bert_tokenizer_json(),
        "t5-base": spm.unigram_tokenizer_json("sp_unigram_converter"),
    }
    hub = dest / "hf" / "hub"
    for name, text in models.items():
        repo = hub / ("models--" + name.replace("/", "--"))
        snap = repo / "snapshots" / ("0" * 40)
        snap.mkdir(parents=True)
        (snap / "tokenizer.json").write_text(text)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text("0" * 40)
    # revision="gpt-2" of anthony/tokenizers-test: the same file under a second ref.
    (hub / "models--anthony--tokenizers-test" / "refs" / "gpt-2").write_text("0" * 40)
    os.environ["HF_HOME"] = str(dest / "hf")
    os.environ["HF_HUB_CACHE"] = str(hub)
    os.environ["HF_HUB_OFFLINE"] = "1"
    # huggingface_hub reads these once, at import; it may be imported already (by datasets).
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        constants.HF_HOME = str(dest / "hf")
        constants.HF_HUB_CACHE = str(hub)
        constants.HF_HUB_OFFLINE = True
    char = tokenizers.CharBPETokenizer()
    char.train([str(dest / "small.txt")], vocab_size=2000)
    char.save_model(str(dest), "openai")
    out["openai-gpt-vocab.json"] = str(dest / "openai-vocab.json")
    out["openai-gpt-merges.txt"] = str(dest / "openai-merges.txt")
    for name in [m for m in sys.modules if m == "tests" or m.startswith("tests.")]:
        del sys.modules[name]
    sys.path.remove(str(REPO))
    return out


class Plugin:
    """Puts the side-by-side objects in place before the upstream modules are imported, and
    runs the async tests (pytest-asyncio's job) with asyncio.run."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: Any) -> bool | None:
        if not inspect.iscoroutinefunction(pyfuncitem.obj):
            return None
        args = {a: pyfuncitem.funcargs[a] for a in pyfuncitem._fixtureinfo.argnames}
        asyncio.run(pyfuncitem.obj(**args))
        return True

    def __init__(self, shim: object, files: dict[str, str]) -> None:
        self.shim, self.files = shim, files

    def pytest_configure(self, config: object) -> None:
        import tokenizers
        import tokenizers.decoders
        import tokenizers.implementations.base_tokenizer as base
        import tokenizers.implementations.bert_wordpiece as bert
        import tokenizers.implementations.byte_level_bpe as blbpe
        import tokenizers.implementations.char_level_bpe as cbpe
        import tokenizers.implementations.sentencepiece_bpe as spbpe
        import tokenizers.implementations.sentencepiece_unigram as spuni

        import fastprep._components

        s = self.shim
        original = tokenizers.Tokenizer
        fastprep._components._hf_class = lambda: original  # type: ignore[attr-defined]
        for mod in (tokenizers, base, bert, blbpe, cbpe, spbpe, spuni):
            for name in ("Tokenizer", "Encoding", "AddedToken"):
                if hasattr(mod, name):
                    setattr(mod, name, getattr(s, name))
        tokenizers.decoders.DecodeStream = s.DecodeStream  # type: ignore[attr-defined]

    def pytest_collection_modifyitems(self, session: object, config: object, items: list) -> None:
        utils = sys.modules.get("tests.utils")
        if utils is not None:
            files = self.files

            def download(filename: str) -> str:
                if filename not in files:
                    raise FileNotFoundError(f"{filename}: no local stand-in (offline run)")
                return files[filename]

            utils.download = download  # type: ignore[attr-defined]


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    src = Path(argv[0]).resolve()
    work = Path(tempfile.mkdtemp(prefix="fastprep-upstream-"))
    files = _local_files(work)
    root = _upstream_tests(src, work)
    for f in ("test_tokenizer.py", "test_encoding.py", "test_processors.py"):
        assert (root / "tests" / "bindings" / f).is_file(), f
    spec = importlib.util.spec_from_file_location("fastprep_upstream_shim", HERE / "shim.py")
    assert spec and spec.loader
    shim = importlib.util.module_from_spec(spec)
    sys.modules["fastprep_upstream_shim"] = shim
    spec.loader.exec_module(shim)
    import pytest

    # Models named by Hub id cannot be fetched here: fail at once instead of retrying.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.chdir(root)
    (root / "pytest.ini").write_text("[pytest]\nmarkers =\n    network\n    slow\n    asyncio\n")
    targets = [f"tests/bindings/{f}" for f in FILES] + ["tests/implementations"]
    # 2048 concurrent batches of a long text, timing only: not a behaviour to compare.
    slow = "tests/bindings/test_tokenizer.py::TestAsyncTokenizer::test_performance_comparison"
    code = pytest.main(
        ["-q", "-rfE", "-p", "no:cacheprovider", "--rootdir", str(root), "--deselect", slow, *targets, *argv[1:]],
        plugins=[Plugin(shim, files)],
    )
    calls = shim.CALLS["n"]  # type: ignore[attr-defined]
    mism = shim.MISMATCHES  # type: ignore[attr-defined]
    print(f"\n{calls} calls made on both libraries; {len(mism)} differences")
    for m in dict.fromkeys(mism):
        print("  DIFF", m)
    return int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
