"""``--engine ray``: the same jobs spread over a Ray cluster with Ray Data.

``ray.data.from_items(units) -> map_batches(a callable class holding the tokenizer or the image
pipeline, concurrency=N) -> iter_rows`` on whatever cluster ``ray.init`` reaches. A unit is an
input file (tokenize) or a shard of images; each actor writes its shards with the same code as
the local engine (temporary name, rename), so the outputs are byte-identical, and the driver alone
writes the manifest as results arrive. A worker that dies mid-unit leaves at most a temporary file;
Ray Data runs the unit again elsewhere and it writes the same bytes. Each actor gets one CPU, and
Ray sets OMP_NUM_THREADS=1 in it, which fastprep's thread pools follow.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .shards import Manifest, remove_temporaries
from .stats import JobStats

__all__ = ["run_ray"]


class TokenizeActor:
    def __init__(self, settings: Any, done: list[str]) -> None:
        from .tokenize import TokenizeJob

        self.job = TokenizeJob(settings)
        self.done = set(done)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        from .tokenize import process_file

        out = []
        for i in batch["file"].tolist():
            entries, samples = process_file(self.job, int(i), self.done)
            out.append(json.dumps({"entries": entries, "samples": samples}))
        return {"result": out}


class ImagesActor:
    def __init__(self, settings: Any) -> None:
        from .images import ImagesJob

        self.job = ImagesJob(settings)
        self.units = {u.name: u for u in self.job.units}

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        from .images import process_unit

        out = []
        for name in batch["unit"].tolist():
            t0 = time.perf_counter()
            entry = process_unit(self.job, self.units[str(name)])
            out.append(json.dumps({"entries": [entry], "samples": {"shard": [time.perf_counter() - t0]}}))
        return {"result": out}


def run_ray(
    command: str, settings: Any, *, address: str | None = None, concurrency: int = 2
) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """Runs ``command`` ("tokenize" or "images") on Ray; returns the summary and stage samples."""
    try:
        import ray
    except ImportError as e:
        raise ImportError("--engine ray needs Ray Data: pip install 'fastprep[ray]'") from e
    from .images import ImagesJob
    from .images import finish as finish_images
    from .tokenize import TokenizeJob, finish_bin
    from .tokenize import _finish as finish_tokenize

    job: Any = TokenizeJob(settings) if command == "tokenize" else ImagesJob(settings)
    job.out.mkdir(parents=True, exist_ok=True)
    remove_temporaries(job.out)
    manifest = Manifest(job.out, job.header)
    stages = ("read", "tokenize", "write") if command == "tokenize" else ("shard",)
    stats = JobStats(command, "docs" if command == "tokenize" else "images", stages)
    stats.skipped_shards = len(manifest.shards)
    if not manifest.complete:
        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        actor: type[TokenizeActor | ImagesActor]
        if command == "tokenize":
            items: list[dict[str, Any]] = [{"file": i} for i in range(len(job.files))]
            actor, kwargs = TokenizeActor, {"settings": settings, "done": sorted(manifest.shards)}
        else:
            items = [{"unit": u.name} for u in job.units if not manifest.done(u.name)]
            actor, kwargs = ImagesActor, {"settings": settings}
        stats.start = time.perf_counter()
        if items:
            ds = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
                actor,
                fn_constructor_kwargs=kwargs,
                batch_size=1,
                compute=ray.data.ActorPoolStrategy(size=concurrency),
                num_cpus=1,
            )
            for row in ds.iter_rows():
                result = json.loads(row["result"])
                for name, values in result["samples"].items():
                    stats.add_samples(name, values)
                for entry in result["entries"]:
                    manifest.add(entry)
                    stats.add(
                        items=entry.get("docs", entry.get("images", 0)),
                        tokens=entry.get("tokens", 0),
                        bytes_in=entry["bytes_in"],
                        bytes_out=entry["bytes_out"],
                        errors=len(entry["errors"]),
                    )
        if command == "tokenize":
            if settings.format == "bin":
                finish_bin(job, manifest)
            finish_tokenize(job.out, manifest)
        else:
            finish_images(job.out, manifest)
    stats.finish()
    return stats.summary(), stats.samples
