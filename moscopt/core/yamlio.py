"""YAML as moscopt reads and writes it (`moscopt.yaml`, SKILL.md front matter).

`StrictLoader` is `yaml.SafeLoader` that refuses anchors and aliases (`&name`, `*name`, `<<:
*name`): none of moscopt's files needs them, and an alias "bomb" (a few lines of nested aliases
that expand to billions of nodes) would otherwise hang the process. The refusal happens at the
first anchor the parser meets, before anything is built. `NoAliasDumper` never writes them, so
that what moscopt writes it can read back.

Nesting is bounded too: a collection deeper than `MAX_DEPTH` levels (600 `[` in a front-matter
value) is a `yaml.composer.ComposerError` at the level past it, which every reader turns into
one message naming its file, instead of the parser's `RecursionError`.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import AliasEvent, CollectionStartEvent, ScalarEvent

from moscopt.core.jsonio import MAX_DEPTH, TOO_DEEP

ALIASES_REFUSED = "YAML anchors and aliases (&name, *name) are not allowed"


class StrictLoader(yaml.SafeLoader):
    """A safe loader that raises `yaml.composer.ComposerError` at the first anchor or alias, and
    at a collection nested deeper than `MAX_DEPTH`."""

    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        anchored = isinstance(event, ScalarEvent | CollectionStartEvent) and event.anchor
        if isinstance(event, AliasEvent) or anchored:
            raise yaml.composer.ComposerError(None, None, ALIASES_REFUSED, event.start_mark)
        if not isinstance(event, CollectionStartEvent):
            return super().compose_node(parent, index)
        if self.depth >= MAX_DEPTH:
            mark: Any = event.start_mark
            raise yaml.composer.ComposerError(None, None, TOO_DEEP, mark)
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


class NoAliasDumper(yaml.SafeDumper):
    """A safe dumper that writes a repeated object twice instead of as an anchor and alias."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def load(text: str) -> Any:
    """Parse one YAML document with `StrictLoader` (raises `yaml.YAMLError`)."""
    return yaml.load(text, Loader=StrictLoader)  # a SafeLoader subclass


def dump(data: Any, **options: Any) -> str:
    """`yaml.safe_dump` with `NoAliasDumper`."""
    text: str = yaml.dump(data, Dumper=NoAliasDumper, **options)
    return text
