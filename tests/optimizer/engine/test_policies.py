"""The engine receives its policies: the application layer builds them from the config
(`app.workspace.policies_for`) and the trainer's phases use those objects as given."""

from __future__ import annotations

from pathlib import Path

from moscopt.app.workspace import make_trainer, policies_for
from moscopt.optimizer.engine.skills_phase import minibatches
from moscopt.optimizer.policies.acceptance import PairedAcceptance
from moscopt.optimizer.policies.edit_budget import EditBudget
from moscopt.optimizer.policies.edit_targets import EditTargets
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeLM
from moscopt.testing.scripted import make_run


def test_policies_follow_the_config() -> None:
    from moscopt.config import load_config

    config = load_config(
        None,
        {
            "optimizer.schedule": "linear",
            "optimizer.l_max": 5,
            "optimizer.l_min": 1,
            "optimizer.max_targets": 3,
            "gating.rebuild_threshold": 0.4,
            "gating.rebuild_window": 2,
            "optimizer.acceptance": "paired",
            "optimizer.max_val_samples": 3,
            "optimizer.margin": 0.05,
        },
    )
    p = policies_for(config, 12)
    assert p.acceptance == PairedAcceptance(confidence=0.95, max_samples=3, margin=0.05)
    assert p.budget == EditBudget("linear", 5, 1, 12)
    assert p.targets == EditTargets(3)
    assert (p.restoration.threshold, p.restoration.window, p.restoration.history) == (0.4, 2, [])
    assert policies_for(config, 0).budget.total_steps == 1


def test_the_trainer_uses_the_policies_it_is_given(tmp_path: Path, seed_dir: Path) -> None:
    run, config, bench, sp, seeds = make_run(tmp_path, seed_dir)
    state = run.load_state()
    state.gate_failure_rates = [0.9]
    run.save(state)
    lm = FakeLM()
    trainer = make_trainer(
        run=RunDir.open(run.path), config=config, benchmark=bench, splits=sp,
        agent_lm=lm, optimizer_lm=lm, seeds=seeds,
    )  # fmt: skip
    steps = config.training.epochs * len(minibatches(config, sp.train, 0))
    assert trainer.editor.budget == policies_for(config, steps).budget
    assert trainer.validator.policy == policies_for(config, steps).acceptance
    assert trainer.skills.targets == EditTargets(config.optimizer.max_targets or config.pool.k)
    assert trainer.gate.restoration.history == [0.9]  # its window resumes from the state
