"""YAML reading: libyaml's parser under moscopt's strict composition (`yamlio.LOADER`) reads what
the all-Python `StrictLoader` reads, and refuses what it refuses."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from moscopt.core import yamlio

pytestmark = pytest.mark.skipif(
    yamlio.LOADER is yamlio.StrictLoader, reason="PyYAML was built without libyaml"
)

_text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=20)
_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=12,
)


def python_load(text: str) -> Any:
    return yaml.load(text, Loader=yamlio.StrictLoader)  # the strict safe loader


@settings(max_examples=300, deadline=None)
@given(value=_value, flow=st.booleans())
def test_both_loaders_read_what_moscopt_writes_the_same(value: Any, flow: bool) -> None:
    text = yamlio.dump(value, default_flow_style=flow, allow_unicode=True)
    assert yamlio.load(text) == python_load(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "a: &x 1\nb: *x",  # an anchor and an alias
        "base: &b {k: 1}\nother:\n  <<: *b",
        "[" * 150 + "]" * 150,  # past MAX_DEPTH
        "[" * 2000,  # past libyaml's own bound too
        "a: b: c",
        "- a\nb: c",
        "a: 'unclosed",
        "x: \x01",
    ],
)
def test_both_loaders_refuse_the_same_texts(text: str) -> None:
    with pytest.raises(yaml.YAMLError) as fast:
        yamlio.load(text)
    with pytest.raises(yaml.YAMLError) as slow:
        python_load(text)
    assert type(fast.value) is type(slow.value)
    for refusal in (yamlio.ALIASES_REFUSED, yamlio.TOO_DEEP):
        assert (refusal in str(slow.value)) == (refusal in str(fast.value))
