#!/usr/bin/env bash
# Quick start, command 2: build fastprep (release) into .venv and run the whole test suite: the
# Rust tests, then the Python tests and the benchmarks as smoke tests against the installed wheel.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cargo test --quiet
"$VPY" -m pytest tests benches --benchmark-disable "$@"
