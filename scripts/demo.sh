#!/usr/bin/env bash
# Quick start, command 1: build fastprep (release) into .venv, run its two jobs (`fastprep
# tokenize`, `fastprep images`) on the bundled sample data with their reports under fastprep-demo/,
# then print the figures in the README table's terms. Extra arguments go to `python -m fastprep demo`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
# A fresh output each time: a job resumes an existing output directory instead of redoing it.
rm -rf fastprep-demo
"$VPY" -m fastprep demo-jobs --out fastprep-demo
exec "$VPY" -m fastprep demo "$@"
