#!/usr/bin/env bash
# Train the skills of your own agent (my_agent.py). The gate, reflection and edits use MODEL
# (with API_BASE if set); my_agent.py calls MY_AGENT_MODEL at MY_AGENT_API_BASE.
set -euo pipefail
MODEL=${MODEL:-openai/gpt-4.1-mini}
API=(); [ -n "${API_BASE:-}" ] && API=(--api-base "$API_BASE")
export MY_AGENT_API_BASE=${MY_AGENT_API_BASE:-${API_BASE:-https://api.openai.com/v1}}

[ -d skills ] || moscopt init . > /dev/null        # the seed skill library

moscopt train --config external-agent.yaml --benchmark sums.yaml --data sums.jsonl \
  --model "$MODEL" "${API[@]}" --epochs 1 --steps-per-epoch 3 --no-evolution --run runs/my-agent
moscopt eval --run runs/my-agent --split test --model "$MODEL" "${API[@]}"
moscopt status --run runs/my-agent
