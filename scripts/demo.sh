#!/usr/bin/env bash
# Quick start, command 1: build fastprep (release) into .venv and run its main job on the bundled
# sample data, printing the figures. Extra arguments go to `python -m fastprep demo`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
exec "$VPY" -m fastprep demo "$@"
