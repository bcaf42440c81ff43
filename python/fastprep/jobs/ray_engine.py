"""``--engine ray``: the same jobs spread over a Ray cluster with Ray Data.

``ray.data.from_items(units) -> map_batches(..., concurrency=N) -> iter_rows`` on whatever cluster
``ray.init`` reaches. A unit is an input file (tokenize: a function run as Ray tasks on the
cluster's pooled worker processes, each keeping its tokenizer between units and jobs) or a shard
of images (a callable class holding the image pipeline, in an actor pool). Each unit writes its
shards with the same code as the local engine (temporary name, rename), so the outputs are
byte-identical, and the driver alone writes the manifest as results arrive. A worker that dies
mid-unit leaves at most a temporary file; Ray Data runs the unit again elsewhere and it writes the
same bytes. Each task or actor gets one CPU, and Ray sets OMP_NUM_THREADS=1 in it, which
fastprep's thread pools follow."""

from __future__ import annotations

import json
import time
from typing import Any

from .shards import Manifest, remove_temporaries
from .stats import JobStats

__all__ = ["run_ray"]


# The tokenizer a Ray worker process loaded last, under (spec, the driver's sha256 of it): tokenize
# units run as Ray tasks on the cluster's pooled worker processes, which outlive a task and a job,
# so a warm worker skips the 0.2 s load (and actor processes' 2 s start: see run_ray).
_TOKENIZER: dict[tuple[str, str], Any] = {}


def _tokenize_job(settings: Any, sha256: str) -> Any:
    from .tokenize import TokenizeJob, load_tokenizer

    key = (settings.tokenizer, sha256)
    if key not in _TOKENIZER:
        _TOKENIZER.clear()
        _TOKENIZER[key] = load_tokenizer(settings.tokenizer)
    return TokenizeJob(settings, _TOKENIZER[key])


def tokenize_units(batch: dict[str, Any], settings: Any, sha256: str, done: list[str]) -> dict[str, Any]:
    """Ray Data's map function for tokenize: each row an input file's index."""
    from .tokenize import process_file

    job = _tokenize_job(settings, sha256)
    out = []
    for i in batch["file"].tolist():
        entries, samples = process_file(job, int(i), set(done))
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
        if command == "tokenize":
            items: list[dict[str, Any]] = [{"file": i} for i in range(len(job.files))]
        else:
            items = [{"unit": u.name} for u in job.units if not manifest.done(u.name)]
        stats.start = time.perf_counter()
        if items:
            ds: Any = ray.data.from_items(items, override_num_blocks=len(items))
            # This dataset's own context (a copy of the current one): with the per-operator
            # resource reservation, Ray Data 2.60 ran one task alone for the first second of every
            # job (the second CPU idle; a third of a 100 MB job on 2 CPUs). One map operator
            # has no other operator to share with.
            ds.context.op_resource_reservation_enabled = False
            if command == "tokenize":
                # Tasks, not an actor pool: an actor is a fresh worker process (2 s to start and
                # import on a 2-CPU box, against 2 s of work per 100 MB), while tasks run on the
                # cluster's pooled, already-started workers.
                kwargs = {"settings": settings, "sha256": job.header["tokenizer_sha256"]}
                ds = ds.map_batches(
                    tokenize_units,
                    fn_kwargs=kwargs | {"done": sorted(manifest.shards)},
                    batch_size=1,
                    compute=ray.data.TaskPoolStrategy(size=concurrency),
                    num_cpus=1,
                )
            else:
                ds = ds.map_batches(
                    ImagesActor,
                    fn_constructor_kwargs={"settings": settings},
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
