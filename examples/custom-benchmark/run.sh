#!/usr/bin/env bash
# Optimize skills on your own benchmark, then evaluate and read what changed.
# MODEL (default openai/gpt-4.1-mini) and API_BASE (optional: an OpenAI-compatible server) pick
# the model; keys come from the usual environment variables (OPENAI_API_KEY, ...).
set -euo pipefail
MODEL=${MODEL:-openai/gpt-4.1-mini}
API=(); [ -n "${API_BASE:-}" ] && API=(--api-base "$API_BASE")
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}"   # the grader module lives here

[ -f moscopt.yaml ] || moscopt init .             # moscopt.yaml + the seed skill library

# Each invocation trains a new run, so the script can be run again after a failure (a stopped
# run stays resumable: moscopt train --resume --run <its folder>).
RUN=${RUN:-runs/units-$(date +%Y%m%d-%H%M%S)-$$}

moscopt benchmarks --json > /dev/null             # (built-in ones; yours is a path)
moscopt train --benchmark units.yaml --data conversions.jsonl --model "$MODEL" "${API[@]}" \
  --n 3 --k 2 --epochs 1 --steps-per-epoch 2 --no-evolution --run "$RUN"
moscopt eval --run "$RUN" --split test --model "$MODEL" "${API[@]}"
moscopt eval --benchmark units.yaml --data conversions.jsonl --mode none --split test \
  --model "$MODEL" "${API[@]}"                    # the no-skill baseline
moscopt log --run "$RUN"
