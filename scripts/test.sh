#!/usr/bin/env bash
# Quick start, command 2: build fastprep (release) into .venv and run the whole test suite: the
# Rust tests, then the Python tests and the benchmarks as smoke tests against the installed wheel.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cargo test --quiet
# Test files run in parallel (pytest-xdist), one file per worker at a time: a file's module
# fixtures (a loaded vocabulary, a Ray cluster) are built once. Workers: the CPUs, at most 4
# (on 2 cores the suite takes ~13 minutes instead of ~25).
cpus=$(nproc 2>/dev/null || echo 2)
workers=$(( cpus < 4 ? cpus : 4 ))
"$VPY" -m pytest tests benches --benchmark-disable -n "$workers" --dist loadfile -m "not serial" "$@"
# Then the tests that time something, with the machine to themselves (5: none selected by "$@").
"$VPY" -m pytest tests benches --benchmark-disable -m serial "$@" || [ $? -eq 5 ]
