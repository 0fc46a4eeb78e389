#!/usr/bin/env bash
# One short no-skill evaluation per server config. API_BASE (if set) replaces each config's
# api_base, so that all three can be tried against one server.
set -euo pipefail
API=(); [ -n "${API_BASE:-}" ] && API=(--api-base "$API_BASE")
[ -d skills ] || moscopt init . > /dev/null
for config in vllm.yaml llamacpp.yaml litellm-proxy.yaml; do
  echo "== $config"
  moscopt eval --config "$config" --benchmark offline --mode none --split test --limit 3 \
    "${API[@]}" --out "eval-$config.jsonl"
done
