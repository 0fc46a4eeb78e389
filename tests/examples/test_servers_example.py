from __future__ import annotations

from collections.abc import Callable

import pytest

from moscopt.config import load_config
from tests.examples.conftest import EXAMPLES, Example

pytestmark = pytest.mark.slow  # runs the example's commands end to end


def test_each_server_config_is_valid() -> None:
    for name in ("vllm.yaml", "llamacpp.yaml", "litellm-proxy.yaml"):
        config = load_config(EXAMPLES / "servers" / name)
        assert config.api_base and config.api_base.startswith("http://localhost")


def test_servers_example(example: Callable[..., Example]) -> None:
    ex = example("servers")
    out = ex.run("bash", "run.sh").stdout
    assert out.count("offline [test] mode=none") == 3
    models = {r.body.get("model") for r in ex.server.log}
    assert models == {"Qwen/Qwen3-8B", "qwen3-8b"}  # hosted_vllm/ and openai/ prefixes dropped
