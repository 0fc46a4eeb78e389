#!/usr/bin/env bash
# Train a pool, export it for Agent Skills agents, and deploy it into an agent's project.
set -euo pipefail
MODEL=${MODEL:-openai/gpt-4.1-mini}
API=(); [ -n "${API_BASE:-}" ] && API=(--api-base "$API_BASE")
TARGET=${TARGET:-my-app}                          # the project your agent works in

[ -d skills ] || moscopt init . > /dev/null
moscopt train --benchmark sums.yaml --data sums.jsonl --model "$MODEL" "${API[@]}" \
  --n 3 --k 2 --epochs 1 --steps-per-epoch 2 --no-evolution --run runs/deploy

# For agents that route by description (Claude Code, Codex CLI, ...): every skill's
# description says when to use it, and skill-router/SKILL.md holds the rules.
moscopt export --mode agents --run runs/deploy --force
mkdir -p "$TARGET/.claude/skills" "$TARGET/.agents/skills"
cp -R runs/deploy/exports/agents/skills/. "$TARGET/.claude/skills/"   # Claude Code
cp -R runs/deploy/exports/agents/skills/. "$TARGET/.agents/skills/"   # Codex CLI and others
ls "$TARGET/.claude/skills"

# What was deployed, measured as the agent sees it (every skill), and a routing example.
moscopt eval --run runs/deploy --mode agents --split test --model "$MODEL" "${API[@]}"
moscopt route "Compute 21 + 21." --export runs/deploy/exports/agents
