"""The command line's habits: choices in --help and completion, -h, -v/-q and logging,
environment variables, the user's config file and the order of precedence."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.core import choices

runner = CliRunner()


def test_train_help_lists_the_choices_and_h_is_help() -> None:
    shown = runner.invoke(app, ["train", "-h"])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())  # as wrapped at any width
    assert "<strict|paired>" in text
    assert "<llm|random|all|familiarity|hybrid>" in text
    assert "<task|step>" in text
    assert "[env var: MOSCOPT_MODEL]" in text
    assert "[env var: MOSCOPT_API_BASE]" in text
    assert "[env var: MOSCOPT_CONFIG]" in text
    assert runner.invoke(app, ["-h"]).output == runner.invoke(app, ["--help"]).output


def test_a_value_outside_the_choices_is_refused_before_anything_runs(project: Path) -> None:
    result = runner.invoke(app, ["train", "--gate", "oracle"])
    assert result.exit_code == 2
    assert "'oracle' is not one of" in result.output
    assert not (project / "runs").exists()


def test_completion_offers_the_choices() -> None:
    """What bash completion answers for `moscopt export --mode ` and `moscopt eval --split v`."""
    import os

    def complete(words: str) -> list[str]:
        env = dict(
            os.environ,
            _MOSCOPT_COMPLETE="complete_bash",
            COMP_WORDS=words,
            COMP_CWORD=str(len(words.split(" ")) - 1),
        )
        code = "import sys; sys.argv[0] = 'moscopt'; from moscopt.cli import main; main()"
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
        )
        return done.stdout.split()

    assert complete("moscopt export --mode ") == list(get_args(choices.ExportMode))
    assert complete("moscopt eval --split v") == ["val"]


def test_the_choices_are_the_librarys() -> None:
    """Each list is the one the library checks."""
    from moscopt.config.sections import GatingConfig, OptimizerConfig
    from moscopt.exports.manifest import MODES
    from moscopt.study.configurations import COMPARE_WITH

    assert OptimizerConfig.model_fields["acceptance"].annotation == choices.Acceptance
    assert GatingConfig.model_fields["policy"].annotation == choices.GatePolicy
    assert GatingConfig.model_fields["granularity"].annotation == choices.Granularity
    assert get_args(choices.ExportMode) == MODES
    assert tuple(COMPARE_WITH) == get_args(choices.CompareWith)


def test_verbose_shows_moscopts_log_lines_and_quiet_hides_warnings() -> None:
    from moscopt.cli import logs

    root = logging.getLogger()
    before = list(root.handlers), root.level, logging.getLogger("moscopt").level
    try:
        logs.configure(verbose=1)
        assert logging.getLogger("moscopt.lm").isEnabledFor(logging.INFO)
        assert not logging.getLogger("moscopt.lm").isEnabledFor(logging.DEBUG)
        assert not logging.getLogger("litellm").isEnabledFor(logging.INFO)
        logs.configure(verbose=2)
        assert logging.getLogger("moscopt.lm").isEnabledFor(logging.DEBUG)
        assert sum(h.get_name() == logs.HANDLER_NAME for h in root.handlers) == 1
        logs.configure(quiet=True)
        assert not logging.getLogger("moscopt.lm").isEnabledFor(logging.WARNING)
        assert not logging.getLogger("litellm").isEnabledFor(logging.WARNING)
        assert not any(h.get_name() == logs.HANDLER_NAME for h in root.handlers)
        logs.configure()  # no flag: as before any flag
        assert (root.handlers, root.level) == (before[0], before[1])
        assert logging.getLogger("moscopt").level == logging.NOTSET
    finally:
        root.handlers[:] = before[0]
        root.setLevel(before[1])
        logging.getLogger("moscopt").setLevel(before[2])


def test_v_shows_an_info_line_on_stderr(tmp_path: Path) -> None:
    """A real process: an informational line of moscopt's appears with -v, not without."""
    code = (
        "import logging, sys\n"
        "from moscopt.cli.app import app\n"
        "@app.command('hello-log')\n"
        "def hello() -> None:\n"
        "    logging.getLogger('moscopt.test').info('the info line')\n"
        "sys.argv = ['moscopt', *sys.argv[1:]]\n"
        "app()\n"
    )
    quiet = subprocess.run(
        [sys.executable, "-c", code, "hello-log"], capture_output=True, text=True
    )
    loud = subprocess.run(
        [sys.executable, "-c", code, "-v", "hello-log"], capture_output=True, text=True
    )
    assert quiet.returncode == 0 and loud.returncode == 0, (quiet.stderr, loud.stderr)
    assert "the info line" not in quiet.stderr
    assert "INFO moscopt.test: the info line" in loud.stderr


def settings(project: Path, *args: str) -> dict[str, object]:
    """The config `plan --no-pilot --json` resolves (it makes no call)."""
    result = runner.invoke(app, ["plan", "--no-pilot", "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_precedence_flag_env_project_user_default(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from moscopt.config import load_config

    user = tmp_path / "user.yaml"
    monkeypatch.setenv("MOSCOPT_USER_CONFIG", str(user))
    assert load_config().model == "local/smollm2"  # no user file: moscopt's default
    user.write_text("model: openai/from-user\nseed: 7\n")
    assert load_config().model == "openai/from-user"
    (project / "p.yaml").write_text("model: openai/from-project\n")
    config = load_config(project / "p.yaml")
    assert (config.model, config.seed) == ("openai/from-project", 7)
    from moscopt.cli.options import Shared

    env_opts = Shared(model="openai/from-env")  # what click fills from MOSCOPT_MODEL
    assert load_config(project / "p.yaml", env_opts.overrides()).model == "openai/from-env"


def test_env_vars_reach_the_options(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MOSCOPT_MODEL stands for --model, which still wins over it; MOSCOPT_CONFIG for
    --config."""
    seen: list[object] = []
    import moscopt.cli.options as options

    real = options.Shared.overrides

    def spy(self: options.Shared, **extra: object) -> dict[str, object]:
        seen.append((self.model, self.api_base, self.config))
        return real(self, **extra)

    monkeypatch.setattr(options.Shared, "overrides", spy)
    monkeypatch.setenv("MOSCOPT_MODEL", "openai/env-model")
    monkeypatch.setenv("MOSCOPT_API_BASE", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MOSCOPT_CONFIG", "moscopt.yaml")
    runner.invoke(app, ["plan", "--no-pilot", "--json"])
    runner.invoke(app, ["plan", "--no-pilot", "--json", "--model", "openai/flag-model"])
    assert seen[0] == ("openai/env-model", "http://127.0.0.1:9/v1", Path("moscopt.yaml"))
    assert seen[1][0] == "openai/flag-model"


def test_a_bad_user_config_names_its_file_and_line(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    user = tmp_path / "user.yaml"
    user.write_text("model: x\noptimizer:\n  acceptance: sometimes\n")
    monkeypatch.setenv("MOSCOPT_USER_CONFIG", str(user))
    result = runner.invoke(app, ["plan", "--no-pilot"])
    assert result.exit_code == 2
    assert str(user) in result.output and "optimizer.acceptance" in result.output
    assert "Traceback" not in result.output


def test_the_user_config_file_is_in_the_platforms_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from moscopt.config.loading import user_config_path

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert user_config_path() == tmp_path / "xdg" / "moscopt" / "config.yaml"
    monkeypatch.setenv("MOSCOPT_USER_CONFIG", str(tmp_path / "mine.yaml"))
    assert user_config_path() == tmp_path / "mine.yaml"
