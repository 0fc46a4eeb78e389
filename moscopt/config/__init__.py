"""Configuration: `moscopt.yaml` loaded into pydantic models with `extra="forbid"`.

Every hyperparameter of MOSCOPT has the paper's default. Precedence: built-in defaults, then the
file, then command-line flags (`overrides`, dotted keys such as `pool.k`). Secrets are never
configuration: API keys come from the usual environment variables and are never written to disk,
and an `api_base` URL with a user name or password in it is refused.

The sections live in `sections` (the optimizer) and `runtime` (calls, agents, data); `loading`
holds `Config` and `load_config`. YAML is read with `moscopt.core.yamlio.StrictLoader` (anchors and
aliases refused: an alias bomb is one line naming the file, at once) and written without them.
"""

from moscopt.config.loading import (
    CONFIG_FILE,
    DEFAULT_MODEL,
    Config,
    load_config,
    set_dotted,
)
from moscopt.config.runtime import (
    AgentConfig,
    DataConfig,
    DeploymentConfig,
    HaltingConfig,
    LLMConfig,
    MemoryConfig,
    RoutingConfig,
    SamplingConfig,
    SearchToolConfig,
    TracingConfig,
    check_api_base,
)
from moscopt.config.sections import (
    CreditConfig,
    EvolutionConfig,
    GatingConfig,
    LifecycleConfig,
    NichesConfig,
    OptimizerConfig,
    PoolConfig,
    RouterConfig,
    Section,
    TrainingConfig,
)

__all__ = [
    "CONFIG_FILE",
    "DEFAULT_MODEL",
    "AgentConfig",
    "Config",
    "CreditConfig",
    "DataConfig",
    "DeploymentConfig",
    "EvolutionConfig",
    "GatingConfig",
    "HaltingConfig",
    "LLMConfig",
    "LifecycleConfig",
    "MemoryConfig",
    "NichesConfig",
    "OptimizerConfig",
    "PoolConfig",
    "RouterConfig",
    "RoutingConfig",
    "SamplingConfig",
    "SearchToolConfig",
    "Section",
    "TracingConfig",
    "TrainingConfig",
    "check_api_base",
    "load_config",
    "set_dotted",
]
