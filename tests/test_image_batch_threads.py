"""How image batches use threads: the calling thread takes images itself beside num_threads - 1
threads of the pool, the pool threads are steered off the caller's CPU only while a batch starts (their
CPU affinity is theirs again afterwards), and the pixels do not depend on the thread count. Each
check runs in a fresh process: pools are per process and live for its lifetime."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import fastprep
from tests import image_data as data

ROOT = Path(__file__).resolve().parent.parent

PRELUDE = """
import json, os, sys
import fastprep
from tests import image_data as data

def blobs():
    img = data.scaled(data.photos()["china.jpg"], (500, 375))
    return [data.jpeg(img, quality=q, subsampling=2) for q in (70, 80, 90, 95)] * 3

def pool_threads():
    out = {}
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/comm") as f:
            name = f.read().strip()
        if name.startswith("fastprep-"):
            out[tid] = sorted(os.sched_getaffinity(int(tid)))
    return out

def exec_ns(tid):
    with open(f"/proc/self/task/{tid}/schedstat") as f:
        return int(f.read().split()[0])
"""


def run(code: str) -> dict:
    # fastprep as this process imports it (the installed wheel in CI, python/ in development).
    paths = [str(Path(fastprep.__file__).resolve().parent.parent), str(ROOT), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, paths))}
    env.pop("FASTPREP_NUM_THREADS", None)
    out = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and thread affinities")


@linux_only
@pytest.mark.parametrize("threads", [2, 3])
def test_the_caller_is_one_of_the_threads_and_helpers_keep_their_cpus(threads):
    got = run(
        f"""
        cpus = sorted(os.sched_getaffinity(0))
        pipe = fastprep.TrainPipeline(224, num_threads={threads}, seed=0)
        work = blobs()
        pipe(work)
        helpers = list(pool_threads())
        main0, pool0 = exec_ns(os.getpid()), sum(exec_ns(t) for t in helpers)
        for _ in range(8):
            pipe(work)
        main1, pool1 = exec_ns(os.getpid()), sum(exec_ns(t) for t in helpers)
        fastprep.ImagePipeline(num_threads={threads})(work)
        print(json.dumps({{"cpus": cpus, "pool": pool_threads(), "main": main1 - main0, "helpers": pool1 - pool0}}))
        """
    )
    # One pool of num_threads per size (as the tokenizer's batches use), num_threads - 1 of them
    # woken per batch.
    assert len(got["pool"]) == threads
    # The caller decodes its share (it used to sleep through the batch): at least the first
    # image, in practice about 1 / num_threads of the work.
    assert got["main"] > 0.15 * (got["main"] + got["helpers"]), got
    # Steered away from the caller's CPU to start, then given their CPUs back.
    assert all(cpus == got["cpus"] for cpus in got["pool"].values()), got


@linux_only
def test_a_fork_after_a_threaded_batch_gets_its_own_helpers():
    got = run(
        """
        pipe = fastprep.TrainPipeline(224, num_threads=2, seed=0)
        want = pipe(blobs(), step=0)[0].tobytes()
        pid = os.fork()
        if pid == 0:
            ok = pipe(blobs(), step=0)[0].tobytes() == want
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"child": os.waitstatus_to_exitcode(status)}))
        """
    )
    assert got == {"child": 0}


def test_pixels_and_params_do_not_depend_on_the_thread_count():
    img = data.scaled(data.photos()["flower.jpg"], (500, 375))
    blobs = [data.jpeg(img, quality=q, subsampling=s) for q in (75, 90) for s in (0, 2)] * 5
    train = {n: fastprep.TrainPipeline(224, num_threads=n, seed=3)(blobs, step=7) for n in (1, 2, 3)}
    evals = {n: fastprep.ImagePipeline(num_threads=n)(blobs) for n in (1, 2, 3)}
    for n in (2, 3):
        np.testing.assert_array_equal(train[n][0], train[1][0])
        np.testing.assert_array_equal(train[n][1], train[1][1])
        np.testing.assert_array_equal(evals[n], evals[1])


@linux_only
def test_tokenizer_batches_give_the_pool_threads_their_cpus_back():
    """Tokenizer batches (rayon's parallel iterators on the pool) keep the other pool threads off
    the CPU of the pool thread that took the batch while it runs, and release them afterwards;
    the ids do not depend on the thread count."""
    got = run(
        """
        from tests import tokenizer_data as tdata
        cpus = sorted(os.sched_getaffinity(0))
        tok = fastprep.Tokenizer.from_str(tdata.cl100k_tokenizer_json())
        docs = tdata.corpus_documents(300_000)
        one = [e.ids for e in tok.encode_batch(docs, add_special_tokens=False, num_threads=1)]
        for _ in range(3):
            two = [e.ids for e in tok.encode_batch_fast(docs, add_special_tokens=False, num_threads=2)]
        print(json.dumps({"cpus": cpus, "pool": pool_threads(), "same": two == one}))
        """
    )
    assert got["pool"], "no pool thread started"
    assert all(cpus == got["cpus"] for cpus in got["pool"].values()), got
    assert got["same"]
