"""Many texts in one forward pass of a BERT encoder, with no padding: the embedder's fast path.

A padded batch spends most of its work on padding when texts are short and of mixed lengths,
and the bytes of a vector then depend on what it was padded to. Here the texts' tokens are laid
end to end in one sequence (each text keeps its own positions, 0 to its length), so every linear
layer, which is nearly all the work, runs on real tokens only. Attention must not cross from one
text into the next: transformers' attention interface lets a model take a registered attention
function, and `segment_attention` attends within each text, one call per run of texts of one
length (so a run needs no mask either).

Why the bytes do not depend on the companions: a linear layer gives each row the same bits
whatever the other rows are and however many there are (from 4 rows up; a pass has at least 8:
checked on this machine's MKL at 1 and 2 threads), and a text's attention is computed from its
own rows only, in a call of its own shape. `tests/embedding/test_model.py` checks the
whole: a text's vector alone, among other texts and at another thread count, bit for bit.

Only BERT-family encoders with mean or CLS pooling take this path (`packable`); the embedder
runs any other model one text per pass (`moscopt.embedding.model`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import torch

    Vector = npt.NDArray[np.float32]

ATTENTION = "moscopt_segments"  # the name the attention function is registered under
PASS_TOKENS = 1024  # the most tokens in one pass (its rows: a multiple of 8, at least 8)
_MIN_ROWS = 8


@dataclass(frozen=True)
class Run:
    """`count` texts of `length` tokens each, laid end to end from row `start`."""

    start: int
    count: int
    length: int


def packable(model: Any) -> bool:
    """Whether the sentence-transformers `model` is a BERT encoder with mean or CLS pooling, then
    (optionally) normalization: the shapes `encode_packed` knows."""
    modules = list(model)
    if len(modules) not in (2, 3):
        return False
    names = [type(m).__name__ for m in modules]
    if names[:2] != ["Transformer", "Pooling"] or names[2:] not in ([], ["Normalize"]):
        return False
    config = getattr(getattr(modules[0], "auto_model", None), "config", None)
    return (
        getattr(config, "model_type", None) == "bert"
        and getattr(config, "position_embedding_type", "absolute") == "absolute"
        and not getattr(config, "is_decoder", False)
        and _pooling(modules[1]) in ("mean", "cls")
    )


def _pooling(pooling: Any) -> str | None:
    mode = getattr(pooling, "pooling_mode", None)  # sentence-transformers 6
    if isinstance(mode, str):
        return mode
    if getattr(pooling, "pooling_mode_mean_tokens", False):  # 5.x and before
        return "mean"
    return "cls" if getattr(pooling, "pooling_mode_cls_token", False) else None


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


def segment_attention(
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    runs: Sequence[Run] = (),
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' attention-function signature: `query`, `key`, `value` of shape (1, heads,
    rows, head size); each text attends to its own tokens only. Returns (1, rows, heads, head
    size), the rows after the last run (filler) zero. Called without `runs` (the model used as
    usual, a padded batch), it is transformers' SDPA attention."""
    import torch.nn.functional as F

    if not runs:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(
            module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs
        )
    heads, rows, size = query.shape[1], query.shape[2], query.shape[3]

    def texts(x: torch.Tensor, run: Run) -> torch.Tensor:  # (count, heads, length, size)
        cut = x[0, :, run.start : run.start + run.count * run.length]
        return cut.reshape(heads, run.count, run.length, size).transpose(0, 1)

    out = query.new_zeros(rows, heads, size)
    for run in runs:
        found = F.scaled_dot_product_attention(
            texts(query, run), texts(key, run), texts(value, run), scale=scaling
        )
        stop = run.start + run.count * run.length
        out[run.start : stop] = found.permute(0, 2, 1, 3).reshape(-1, heads, size)
    return out.unsqueeze(0), None


def _register() -> None:
    """`segment_attention` under `ATTENTION`, with SDPA's masks (a packed pass has none)."""
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    AttentionInterface.register(ATTENTION, segment_attention)
    AttentionMaskInterface.register(ATTENTION, sdpa_mask)


def encode_packed(model: Any, texts: Sequence[str]) -> list[Vector]:
    """The unit-norm sentence vector of each text (`packable(model)` must hold); call it under
    `torch.inference_mode()`."""
    import torch
    import torch.nn.functional as F

    transformer, pooling = model[0], _pooling(model[1])
    encoder = transformer.auto_model
    if encoder.config._attn_implementation != ATTENTION:
        _register()
        encoder.set_attn_implementation(ATTENTION)
    ids: list[list[int]] = transformer.tokenizer(
        list(texts), truncation=True, max_length=transformer.max_seq_length
    )["input_ids"]
    out: list[Vector | None] = [None] * len(ids)
    for members in passes([len(row) for row in ids]):
        runs: list[Run] = []
        tokens: list[int] = []
        positions: list[int] = []
        for length, same in itertools.groupby(members, key=lambda i: len(ids[i])):
            texts_of_length = list(same)
            runs.append(Run(len(tokens), len(texts_of_length), length))
            for i in texts_of_length:
                tokens += ids[i]
                positions += range(length)
        rows = max(_MIN_ROWS, -(-len(tokens) // _MIN_ROWS) * _MIN_ROWS)
        filler = [0] * (rows - len(tokens))
        hidden = encoder(
            input_ids=torch.tensor([tokens + filler]),
            position_ids=torch.tensor([positions + filler]),
            token_type_ids=torch.zeros(1, rows, dtype=torch.long),
            runs=runs,
        ).last_hidden_state[0]
        at = 0
        for run in runs:
            per_text = hidden[run.start : run.start + run.count * run.length]
            per_text = per_text.view(run.count, run.length, -1)
            pooled = per_text.mean(dim=1) if pooling == "mean" else per_text[:, 0]
            pooled = F.normalize(pooled, p=2, dim=1).numpy()
            for row in pooled:
                out[members[at]] = row.astype("float32", copy=True)
                at += 1
    return [v for v in out if v is not None]
