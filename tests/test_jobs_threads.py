"""A good citizen inside other engines: thread pools sized from FASTPREP_NUM_THREADS, then the
CPUs the process is given (OMP_NUM_THREADS as Ray sets it, the affinity mask); ``import fastprep``
starts no thread; a fork after use works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from .tokenizer_data_wordpiece import bert_file

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts OS threads through /proc")

# Imports fastprep, reports the threads, runs one batch encode and one image batch, reports the
# threads again (fastprep's are named fastprep-N).
PROBE = textwrap.dedent(
    """
    import json, os, sys
    def names():
        out = []
        for t in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{t}/comm") as f:
                out.append(f.read().strip())
        return out
    before = len(os.listdir("/proc/self/task"))
    import fastprep
    after_import = names()
    from fastprep.jobs.cli import DATA
    tok = fastprep.Tokenizer.from_file(sys.argv[1])
    tok.encode_batch(["some text to encode"] * 256)
    imgs = [p.read_bytes() for p in sorted((DATA / "images").glob("*.jpg"))]
    fastprep.preprocess(imgs * 4, crop=32, resize_shorter=40)
    pool = sum(n.startswith("fastprep-") for n in names())
    print(json.dumps({"before": before, "after_import": after_import, "pool": pool, "cuda": "cupy" in sys.modules}))
    """
)


def _probe(env: dict[str, str], cpus: set[int] | None = None) -> dict[str, object]:
    full = {k: v for k, v in os.environ.items() if k not in ("FASTPREP_NUM_THREADS", "OMP_NUM_THREADS")} | env
    pre = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(bert_file())],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=pre,
    )
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


def test_import_starts_no_thread_and_no_cuda() -> None:
    r = _probe({})
    assert len(r["after_import"]) == r["before"] == 1, r  # type: ignore[arg-type]
    assert r["cuda"] is False


def test_pool_size_follows_env_then_omp_then_affinity() -> None:
    cores = len(os.sched_getaffinity(0))
    threads = lambda n: 0 if n <= 1 else n  # noqa: E731 (one thread runs inline: no pool)
    assert _probe({"FASTPREP_NUM_THREADS": "3"})["pool"] == 3
    assert _probe({"FASTPREP_NUM_THREADS": "3", "OMP_NUM_THREADS": "1"})["pool"] == 3
    assert _probe({"OMP_NUM_THREADS": "1"})["pool"] == 0
    assert _probe({"OMP_NUM_THREADS": "64"})["pool"] == threads(cores)  # never more than the CPUs
    assert _probe({}, cpus={min(os.sched_getaffinity(0))})["pool"] == 0
    assert _probe({})["pool"] == threads(cores)


def test_four_workers_on_the_cpus_do_not_oversubscribe() -> None:
    """What Ray does with 4 one-CPU workers: OMP_NUM_THREADS=1 in each; fastprep then starts no
    pool threads, instead of 4 x cores."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PROBE, str(bert_file())],
            env={**os.environ, "OMP_NUM_THREADS": "1"},
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    pools = [json.loads(p.communicate(timeout=120)[0])["pool"] for p in procs]
    assert pools == [0, 0, 0, 0]


def test_fork_after_use_works() -> None:
    code = textwrap.dedent(
        """
        import os, sys
        import fastprep
        tok = fastprep.Tokenizer.from_file(sys.argv[1])
        want = tok.encode_batch_arrays(["fork safety"] * 64, num_threads=2)["input_ids"].tolist()
        pid = os.fork()
        if pid == 0:
            got = tok.encode_batch_arrays(["fork safety"] * 64, num_threads=2)["input_ids"].tolist()
            os._exit(0 if got == want else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        """
    )
    out = subprocess.run([sys.executable, "-c", code, str(bert_file())], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "0", out.stderr


def test_job_commands_keep_openblas_to_one_thread(tmp_path: object) -> None:
    """The jobs use no BLAS: the command line keeps numpy's OpenBLAS from starting (and spinning)
    a thread a core, unless the user set OPENBLAS_NUM_THREADS; the library alone changes nothing."""
    src = os.path.join(str(tmp_path), "a.txt")
    with open(src, "w") as f:
        f.write("one line\nanother line\n")
    code = textwrap.dedent(
        """
        import os, sys
        from fastprep.__main__ import main
        import fastprep
        print(os.environ.get("OPENBLAS_NUM_THREADS"))
        main(["tokenize", sys.argv[1], "--tokenizer", sys.argv[2], "--out", sys.argv[3], "--quiet"])
        import numpy
        print(os.environ.get("OPENBLAS_NUM_THREADS"))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    args = [sys.executable, "-c", code, src, str(bert_file()), os.path.join(str(tmp_path), "out")]
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == ["None", "1"]  # not set by the import, set by the command
    env["OPENBLAS_NUM_THREADS"] = "3"
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == ["3", "3"]
