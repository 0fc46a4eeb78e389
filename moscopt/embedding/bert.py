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

The bytes of a vector are a function of its text alone. The texts of a call are laid end to end
in passes of at most `PASS_TOKENS` tokens (no padding: each text keeps its positions 0 to its
length, attends to its own tokens only), so that the linear layers, nearly all the work, run on
real tokens; a row of a matrix product gets the same bits whatever rows share it and at any
thread count here from two rows up (a pass has at least `MIN_ROWS`: OpenBLAS takes another
kernel for one row), and each text's attention is computed on its own rows.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Array = npt.NDArray[np.float32]

PASS_TOKENS = 1024  # the most tokens in one pass
MIN_ROWS = 8  # a pass is padded with filler rows up to this (they attend to nothing)
_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"


@dataclass(frozen=True)
class Run:
    """`count` texts of `length` tokens each, laid end to end from row `start`."""

    start: int
    count: int
    length: int


def passes(lengths: Sequence[int]) -> list[list[int]]:
    """The texts (indices) of each pass: by length, then index, at most `PASS_TOKENS` tokens."""
    out: list[list[int]] = [[]]
    used = 0
    for i in sorted(range(len(lengths)), key=lambda i: (lengths[i], i)):
        if out[-1] and used + lengths[i] > PASS_TOKENS:
            out.append([])
            used = 0
        out[-1].append(i)
        used += lengths[i]
    return out if out[0] else []


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
    ) -> None:
        """`weights` by their transformers names, `config` the model's config.json, `tokenizer`
        a tokenizers `Tokenizer` that truncates and does not pad; `lower`: lowercase the texts
        first (sentence-transformers' `do_lower_case`)."""
        import numpy as np

        def w(name: str) -> Array:
            return np.ascontiguousarray(weights[name], dtype=np.float32)

        def t(name: str) -> Array:  # a linear layer's weight, transposed: x @ t = x W^T
            return np.ascontiguousarray(weights[name].T, dtype=np.float32)

        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.tokenizer = tokenizer
        self.pooling = pooling
        self.lower = lower
        self.words = w("embeddings.word_embeddings.weight")
        self.positions = w("embeddings.position_embeddings.weight")
        self.type0 = w("embeddings.token_type_embeddings.weight")[0]
        self.norm0 = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self.layers: list[Layer] = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            parts = [f"{p}attention.self.{x}" for x in ("query", "key", "value")]
            self.layers.append(
                Layer(
                    qkv=np.concatenate([t(f"{x}.weight") for x in parts], axis=1),
                    qkv_bias=np.concatenate([w(f"{x}.bias") for x in parts]),
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
        """The unit-norm vector of each text (see the module docstring for why the bytes depend
        on the text alone)."""
        import numpy as np

        texts = [t.strip().lower() if self.lower else t.strip() for t in texts]
        ids = [e.ids for e in self.tokenizer.encode_batch(texts)]
        out: list[Array | None] = [None] * len(ids)
        for members in passes([len(row) for row in ids]):
            runs: list[Run] = []
            tokens: list[int] = []
            positions: list[int] = []
            for length, same in itertools.groupby(members, key=lambda i: len(ids[i])):
                of_length = list(same)
                runs.append(Run(len(tokens), len(of_length), length))
                for i in of_length:
                    tokens += ids[i]
                    positions += range(length)
            filler = [0] * max(0, MIN_ROWS - len(tokens))
            hidden = self._forward(np.array(tokens + filler), np.array(positions + filler), runs)
            at = 0
            for run in runs:
                per_text = hidden[run.start : run.start + run.count * run.length]
                per_text = per_text.reshape(run.count, run.length, -1)
                pooled = per_text.mean(axis=1) if self.pooling == "mean" else per_text[:, 0]
                norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
                for row in pooled / norms:
                    out[members[at]] = np.ascontiguousarray(row, dtype=np.float32)
                    at += 1
        return [v for v in out if v is not None]

    def _forward(self, tokens: Any, positions: Any, runs: Sequence[Run]) -> Array:
        x = self.words[tokens] + self.positions[positions] + self.type0
        x = _layer_norm(x, *self.norm0, self.eps)
        for layer in self.layers:
            qkv = x @ layer.qkv + layer.qkv_bias
            x = _layer_norm(
                self._attend(qkv, runs) @ layer.out + layer.out_bias + x, *layer.norm1, self.eps
            )
            up = _gelu(x @ layer.up + layer.up_bias)
            x = _layer_norm(up @ layer.down + layer.down_bias + x, *layer.norm2, self.eps)
        return x

    def _attend(self, qkv: Array, runs: Sequence[Run]) -> Array:
        """Each text's scaled dot-product attention over its own tokens; filler rows zero."""
        import numpy as np

        rows, hidden = qkv.shape[0], qkv.shape[1] // 3
        size = hidden // self.heads
        out = np.zeros((rows, hidden), dtype=np.float32)
        for run in runs:
            stop = run.start + run.count * run.length
            q, k, v = (
                qkv[run.start : stop, j * hidden : (j + 1) * hidden]
                .reshape(run.count, run.length, self.heads, size)
                .transpose(0, 2, 1, 3)
                for j in range(3)
            )
            scores = (q @ k.transpose(0, 1, 3, 2)) * np.float32(size**-0.5)
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            found = (scores @ v).transpose(0, 2, 1, 3).reshape(-1, hidden)
            out[run.start : stop] = found
        return out


def _layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    import numpy as np

    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=-1, keepdims=True)
    return (centered / np.sqrt(var + np.float32(eps))) * weight + bias


def _gelu(x: Array) -> Array:
    """BERT's exact GELU, x Phi(x)."""
    import numpy as np

    from moscopt.embedding.erf import erf

    return (np.float32(0.5) * x * (np.float32(1.0) + erf(x * np.float32(0.5**0.5)))).astype(
        np.float32, copy=False
    )


def load(path: str | Path) -> BertEncoder | None:
    """The BERT encoder in the sentence-transformers folder `path`, None when the folder is not
    one this module runs (another architecture or pooling, a missing file)."""
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
    return BertEncoder(weights, config, tokenizer, pooling, lower=lower)


def _pooling(config: dict[str, Any]) -> str | None:
    """'mean' or 'cls' when `1_Pooling/config.json` asks for that pooling alone, else None."""
    mode = config.get("pooling_mode")
    if isinstance(mode, str):
        return mode if mode in ("mean", "cls") else None
    modes = {k for k, v in config.items() if k.startswith("pooling_mode_") and v is True}
    return {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}.get(
        modes.pop() if len(modes) == 1 else ""
    )
