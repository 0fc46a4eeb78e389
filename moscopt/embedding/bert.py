"""A BERT sentence encoder in numpy: MiniLM's vectors without importing torch or transformers.

The embedding process used to load MiniLM through sentence-transformers, which imports torch,
transformers and scikit-learn: about 4.6 s before the first vector on this 2-core machine, while
a short training run reaches its diversity check in 2 to 3 s and waits. A BERT encoder is six
(MiniLM) standard layers; run on numpy with the model's own weights (`model.safetensors`, read
by safetensors) and tokenizer (`tokenizer.json`, run by tokenizers), the first vector is ready
about 0.3 s after the process starts, and the vectors agree with sentence-transformers' to
float rounding (`tests/embedding/test_bert.py` compares them on the real model).

`load(path)` takes a sentence-transformers folder whose modules are a BERT `Transformer`, a
mean or CLS `Pooling` and optionally `Normalize`, with absolute positions; anything else (None)
is left to sentence-transformers (`moscopt.embedding.model`).

The bytes of a vector are a function of its text alone. OpenBLAS does not promise that: on
this machine (AMD EPYC, OpenBLAS 0.3.31's Haswell kernels) a row of a matrix product gets other
bits when the product has another number of rows (rows in an edge tile are summed in another
order) or runs on another number of threads, so texts laid end to end in shared passes got
vectors that depended on their companions. Each text therefore runs through the encoder alone:
every product's shape is the text's own, and OpenBLAS runs on one thread (the embedding process
sets it; `workers` threads encode texts side by side instead). On 180 texts (9,828 tokens) one
worker took 7.2-7.8 s where shared 1,024-token passes took 6.6 s; two workers 5.1 s where
passes on two OpenBLAS threads took 6.0 s (the offline benchmark's prompts and the README in
3,000-character pieces, measured at load about 1). With attention worked in place and the GELU
one float32 polynomial (`moscopt.embedding.gelu`), the attention's scale in the query's weights,
and sums and layer norms worked in place, a skill body of 256 tokens takes 107 ms of CPU on one
thread, where it took 191 ms (`scripts/bench_scale.py`'s project; the dense products are about
90 ms of it, near this core's peak).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    import numpy.typing as npt

    Array = npt.NDArray[np.float32]

_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"


@dataclass(frozen=True)
class Layer:
    qkv: Array  # (hidden, 3 hidden): query, key and value side by side, transposed
    qkv_bias: Array
    out: Array
    out_bias: Array
    norm1: tuple[Array, Array]
    up: Array
    up_bias: Array
    down: Array
    down_bias: Array
    norm2: tuple[Array, Array]


class BertEncoder:
    """A loaded BERT sentence encoder: `encode(texts)` gives unit-norm float32 vectors."""

    def __init__(
        self,
        weights: dict[str, Any],
        config: dict[str, Any],
        tokenizer: Any,
        pooling: str,
        *,
        lower: bool = False,
        workers: int = 1,
    ) -> None:
        """`weights` by their transformers names, `config` the model's config.json, `tokenizer`
        a tokenizers `Tokenizer` that truncates and does not pad; `lower`: lowercase the texts
        first (sentence-transformers' `do_lower_case`); `workers`: threads encoding texts side
        by side."""
        import numpy as np

        def w(name: str) -> Array:
            return np.ascontiguousarray(weights[name], dtype=np.float32)

        def t(name: str) -> Array:  # a linear layer's weight, transposed: x @ t = x W^T
            return np.ascontiguousarray(weights[name].T, dtype=np.float32)

        self.heads = int(config["num_attention_heads"])
        hidden = int(weights["embeddings.word_embeddings.weight"].shape[1])
        scale = np.float32((hidden // self.heads) ** -0.5)
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.tokenizer = tokenizer
        self.pooling = pooling
        self.lower = lower
        self.workers = workers
        self._pool: ThreadPoolExecutor | None = None
        self.words = w("embeddings.word_embeddings.weight")
        self.positions = w("embeddings.position_embeddings.weight")
        self.type0 = w("embeddings.token_type_embeddings.weight")[0]
        self.norm0 = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self.layers: list[Layer] = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            parts = [f"{p}attention.self.{x}" for x in ("query", "key", "value")]
            qkv = np.concatenate([t(f"{x}.weight") for x in parts], axis=1)
            qkv_bias = np.concatenate([w(f"{x}.bias") for x in parts])
            qkv[:, :hidden] *= scale  # the attention's 1 / sqrt(head size), on the query
            qkv_bias[:hidden] *= scale
            self.layers.append(
                Layer(
                    qkv=qkv,
                    qkv_bias=qkv_bias,
                    out=t(f"{p}attention.output.dense.weight"),
                    out_bias=w(f"{p}attention.output.dense.bias"),
                    norm1=(
                        w(f"{p}attention.output.LayerNorm.weight"),
                        w(f"{p}attention.output.LayerNorm.bias"),
                    ),
                    up=t(f"{p}intermediate.dense.weight"),
                    up_bias=w(f"{p}intermediate.dense.bias"),
                    down=t(f"{p}output.dense.weight"),
                    down_bias=w(f"{p}output.dense.bias"),
                    norm2=(w(f"{p}output.LayerNorm.weight"), w(f"{p}output.LayerNorm.bias")),
                )
            )

    def encode(self, texts: Sequence[str]) -> list[Array]:
        """The unit-norm vector of each text, each computed alone (see the module docstring)."""
        texts = [t.strip().lower() if self.lower else t.strip() for t in texts]
        ids = [e.ids for e in self.tokenizer.encode_batch(texts)]
        if self.workers < 2 or len(ids) < 2:
            return [self._embed(row) for row in ids]
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="moscopt-bert")
        return list(self._pool.map(self._embed, ids))

    def _embed(self, ids: Sequence[int]) -> Array:
        import numpy as np

        from moscopt.embedding.gelu import gelu

        x = self.words[ids] + self.positions[: len(ids)] + self.type0
        x = _layer_norm(x, *self.norm0, self.eps)
        for layer in self.layers:  # sums in place: the same order, the same bytes, no copies
            qkv = x @ layer.qkv
            qkv += layer.qkv_bias
            attended = self._attend(qkv) @ layer.out
            attended += layer.out_bias
            attended += x
            x = _layer_norm(attended, *layer.norm1, self.eps)
            up = x @ layer.up
            up += layer.up_bias
            down = gelu(up) @ layer.down
            down += layer.down_bias
            down += x
            x = _layer_norm(down, *layer.norm2, self.eps)
        pooled = x.mean(axis=0) if self.pooling == "mean" else x[0]
        pooled = pooled / max(float(np.linalg.norm(pooled)), 1e-12)
        return np.ascontiguousarray(pooled, dtype=np.float32)

    def _attend(self, qkv: Array) -> Array:
        """Scaled dot-product attention of one text's tokens, all heads at once."""
        import numpy as np

        rows, hidden = qkv.shape[0], qkv.shape[1] // 3
        size = hidden // self.heads
        q, k, v = (
            qkv[:, j * hidden : (j + 1) * hidden].reshape(rows, self.heads, size).transpose(1, 0, 2)
            for j in range(3)
        )
        # in place: on 256 tokens the 12 x 256 x 256 scores are 3 MiB, and each new array of
        # them cost more than its arithmetic (11.3 ms a layer with four such arrays, 4.0 ms
        # in place, the same bytes)
        # the query already carries the 1 / sqrt(size) scale (its weights, from `__init__`), and
        # the softmax's division waits for the product with v, whose rows are 8 times fewer
        # (256 tokens: 4.9 -> 3.4 ms a layer, vectors within float rounding)
        scores: Array = q @ k.transpose(0, 2, 1)
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        total = scores.sum(axis=-1, keepdims=True)
        out: Array = scores @ v
        out /= total
        return out.transpose(1, 0, 2).reshape(rows, hidden)


def _layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    """Layer normalisation of each row, worked in `x` (which it returns)."""
    import numpy as np

    x -= x.mean(axis=-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x)[:, None]
    var /= np.float32(x.shape[-1])
    var += np.float32(eps)
    np.sqrt(var, out=var)
    x /= var
    x *= weight
    x += bias
    return x


def load(path: str | Path, workers: int = 1) -> BertEncoder | None:
    """The BERT encoder in the sentence-transformers folder `path` (encoding on `workers`
    threads), None when the folder is not one this module runs (another architecture or
    pooling, a missing file)."""
    folder = Path(path)
    try:
        modules = json.loads((folder / "modules.json").read_text())
        config = json.loads((folder / "config.json").read_text())
        types = [m["type"] for m in modules]
        if types not in ([_TRANSFORMER, _POOLING], [_TRANSFORMER, _POOLING, _NORMALIZE]):
            return None
        if modules[0]["path"] not in ("", "0_Transformer"):
            return None
        base = folder / modules[0]["path"]
        st_config = json.loads((base / "sentence_bert_config.json").read_text())
        pooling = _pooling(json.loads((folder / modules[1]["path"] / "config.json").read_text()))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    weights_file, tokenizer_file = base / "model.safetensors", base / "tokenizer.json"
    if (
        config.get("model_type") != "bert"
        or config.get("position_embedding_type", "absolute") != "absolute"
        or config.get("hidden_act") != "gelu"
        or config.get("is_decoder", False)
        or pooling is None
        or not weights_file.is_file()
        or not tokenizer_file.is_file()
    ):
        return None
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    weights = load_file(str(weights_file))
    weights = {k.removeprefix("bert."): v for k, v in weights.items()}
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=int(st_config.get("max_seq_length") or 512))
    lower = bool(st_config.get("do_lower_case"))
    return BertEncoder(weights, config, tokenizer, pooling, lower=lower, workers=workers)


def _pooling(config: dict[str, Any]) -> str | None:
    """'mean' or 'cls' when `1_Pooling/config.json` asks for that pooling alone, else None."""
    mode = config.get("pooling_mode")
    if isinstance(mode, str):
        return mode if mode in ("mean", "cls") else None
    modes = {k for k, v in config.items() if k.startswith("pooling_mode_") and v is True}
    return {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}.get(
        modes.pop() if len(modes) == 1 else ""
    )
