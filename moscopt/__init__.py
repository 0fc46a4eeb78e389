"""moscopt: Mixture-of-Skills Collective Optimization for LLM agents.

Importing this package is cheap: heavy libraries (litellm, torch, sentence-transformers,
xllamacpp, datasets) are imported only inside the functions that need them.
"""

from __future__ import annotations

__version__ = "0.1.0"
