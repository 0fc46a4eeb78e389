"""Issue 42 item 6: the reference pages are generated from the code (scripts/docs_hooks.py, the
MkDocs hook), every page is in the site's navigation, and the README stays a front page."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import typer
import yaml

from moscopt.cli import app
from moscopt.cli.lazy import COMMANDS
from moscopt.config import Config

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "scripts" / "docs_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_has_every_command_and_every_parameter(hooks: ModuleType) -> None:
    page = hooks.on_page_markdown("# CLI\n\n<!-- generated: cli -->\n")
    assert "<!-- generated" not in page
    root: Any = typer.main.get_command(app)  # a group (typer types it as a command)
    ctx = root.make_context("moscopt", ["--help"], resilient_parsing=True)
    for name in COMMANDS:
        assert page.count(f"### `moscopt {name}`\n") == 1, name
        command = root.get_command(ctx, name)
        sub = command.make_context(name, [], parent=ctx, resilient_parsing=True)
        for param in command.params:
            record = param.get_help_record(sub)
            if record is not None:
                assert f"| `{record[0]}` |" in page, (name, record[0])
    assert "| `--acceptance <strict|paired>` |" in page  # a code span's pipe splits no cell
    assert "\\[env var: MOSCOPT\\_MODEL\\]" in page
    assert "| `-v, --verbose` |" in page  # the root's own options


def config_keys(model: Any, prefix: str = "") -> list[str]:
    keys = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        inner = getattr(annotation, "__args__", ())
        if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
            keys += config_keys(annotation, f"{prefix}{name}.")
            continue
        keys.append(prefix + name)
        if inner and hasattr(inner[0], "model_fields"):  # list[DeploymentConfig]
            keys += config_keys(inner[0], f"{prefix}{name}[].")
    return keys


def test_the_configuration_reference_has_every_key_once(hooks: ModuleType) -> None:
    page = hooks.on_page_markdown("<!-- generated: config -->")
    rows = re.findall(r"^\| `([\w.\[\]]+)` \|", page, re.M)
    keys = config_keys(Config)
    assert len(keys) > 150
    assert sorted(rows) == sorted(keys)
    assert "| `optimizer.acceptance` | `strict` \\| `paired` | `paired` |" in page
    assert "| `pool.k` | integer (≥ 1) | `3` | skills activated per task K |" in page
    assert "| `llm.deployments[].model` | string | required |" in page
    # a key without a Field description is described by its comment in the template
    assert re.search(r"^\| `llm\.concurrency` .*\| requests in flight \|$", page, re.M)


def test_template_comments_follow_nesting_and_continuation_lines(hooks: ModuleType) -> None:
    text = (
        "model: x          # the agent's model,\n"
        "                  # any litellm string\n"
        "llm:\n"
        "  routing:        # how calls spread\n"
        "    retries: 2    # retries elsewhere\n"
        "  concurrency: 16\n"
    )
    assert hooks.template_comments(text) == {
        "model": "the agent's model, any litellm string",
        "llm.routing": "how calls spread",
        "llm.routing.retries": "retries elsewhere",
    }


def test_help_text_is_escaped_outside_code_spans(hooks: ModuleType) -> None:
    assert hooks.escape("runs/<name>/ and `<run>/x|y` a*b_c|d") == (
        "runs/&lt;name&gt;/ and `<run>/x|y` a\\*b\\_c\\|d"
    )


def nav_pages(nav: list[Any]) -> list[str]:
    pages: list[str] = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        pages += nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_every_docs_page_is_in_the_navigation() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    listed = nav_pages(config["nav"])
    found = sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md"))
    assert sorted(listed) == found
    assert config["hooks"] == ["scripts/docs_hooks.py"]
    assert config["strict"] is True


def test_the_readme_is_a_front_page_with_the_two_set_up_commands() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    setup = text[
        text.index("## Set up on a fresh machine") : text.index(
            "\n## ", text.index("## Set up") + 1
        )
    ]
    blocks = re.findall(r"^```bash\n(.*?)\n```$", setup, re.M | re.S)
    assert len(blocks) == 2
    assert blocks[0].startswith("python3 -m venv .venv") and "moscopt train" in blocks[0]
    assert blocks[1] == ". .venv/bin/activate && python -m pytest"
    for page in re.findall(r"\]\((docs/[\w/-]+\.md)", text):
        assert (ROOT / page).is_file(), page
