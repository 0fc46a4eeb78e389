"""Issue 37, item 1: stream mode decides on tasks the proposer never saw. In a world where an
edit only memorises the answers of the tasks it was shown, replaying those tasks accepted 40% of
such edits; replaying held-out tasks accepts none (they gain nothing there)."""

from __future__ import annotations

from pathlib import Path

from moscopt.testing.memorising import memorising_stream


def test_edits_that_only_memorise_what_they_were_shown_are_never_accepted(
    tmp_path: Path, seed_dir: Path
) -> None:
    accepted = decided = 0
    for seed in range(2):
        a, d = memorising_stream(tmp_path / f"s{seed}", seed_dir, n=32, seed=seed)
        accepted, decided = accepted + a, decided + d
    assert decided >= 10  # the edits were proposed and decided
    assert accepted == 0
