"""The learned familiarity router (issue 14; seeds/cera-moa.txt): routing with no LLM call.

- `features`: the task's sentence embedding (`moscopt.embedding`, a per-text cache computed
  off the event loop); `projection`: the fixed front end of the heads.
- `familiarity`: per-skill predictor and frozen target heads, training from rollouts (credit
  per skill from shared rewards), cumulative-threshold adaptive K, the exploration bonus.
- `router`: `FamiliarityRouter` and `HybridRouter` (the `moscopt.routing.gate.Router` seam).
- `engine`: the runtime the trainer uses for `gating.policy: familiarity | hybrid`.
- `specialization`: the per-niche activation distribution of a run and its index.
- `vote`: the familiarity-weighted majority vote (the paper's aggregator).

The router's export and loader are in `moscopt.exports.router`.

"Router" has one meaning in moscopt: what picks a task's active skills (the `gate.Router`
seam: the textual gate, a static table, the familiarity or hybrid router; the `router:`
config section sets the familiarity router). litellm's Router, which spreads LLM calls over
several endpoints, is always called *deployments* here (`moscopt.lm.deployments`,
`llm.deployments`, `llm.routing`).
"""
