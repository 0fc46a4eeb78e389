"""YAML as moscopt reads and writes it (`moscopt.yaml`, SKILL.md front matter).

`LOADER` is a safe loader that refuses anchors and aliases (`&name`, `*name`, `<<:
*name`): none of moscopt's files needs them, and an alias "bomb" (a few lines of nested aliases
that expand to billions of nodes) would otherwise hang the process. The refusal happens at the
first anchor the parser meets, before anything is built. `NoAliasDumper` never writes them, so
that what moscopt writes it can read back.

Nesting is bounded too: a collection deeper than `MAX_DEPTH` levels (600 `[` in a front-matter
value) is a `yaml.composer.ComposerError` at the level past it, which every reader turns into
one message naming its file, instead of the parser's `RecursionError`.

`LOADER` parses with libyaml where PyYAML has it (`FastStrictLoader`), else in Python
(`StrictLoader`); both compose in Python, with the refusals above.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, CollectionStartEvent, ScalarEvent
from yaml.resolver import Resolver

from moscopt.core.jsonio import MAX_DEPTH, TOO_DEEP

ALIASES_REFUSED = "YAML anchors and aliases (&name, *name) are not allowed"


class _Strict(Composer):
    """Composition that raises `yaml.composer.ComposerError` at the first anchor or alias, and at
    a collection nested deeper than `MAX_DEPTH`."""

    depth = 0
    peek_event: Any  # the parser's (Python's or libyaml's)

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


class StrictLoader(_Strict, yaml.SafeLoader):
    """A safe loader, all in Python, that refuses anchors, aliases and deep nesting (`_Strict`)."""


# libyaml's parser (in C, iterative: no recursion to bound) under the same Python composition,
# so the refusals above still happen before anything is built: the same values and the same
# errors at the same marks, their wording libyaml's. 516 skills' front matter: 0.11 -> 0.02 s.
_CParser: Any
try:
    from yaml.cyaml import CParser as _CParser  # type: ignore[attr-defined]
except ImportError:  # a PyYAML built without libyaml
    _CParser = None
if _CParser is not None:

    class FastStrictLoader(_Strict, _CParser, SafeConstructor, Resolver):
        def __init__(self, stream: str) -> None:
            _CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

    LOADER: type = FastStrictLoader
else:
    LOADER = StrictLoader


class NoAliasDumper(yaml.SafeDumper):
    """A safe dumper that writes a repeated object twice instead of as an anchor and alias."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def load(text: str) -> Any:
    """Parse one YAML document with `LOADER` (raises `yaml.YAMLError`)."""
    try:
        return yaml.load(text, Loader=LOADER)  # a safe constructor (see above)
    except yaml.MarkedYAMLError as e:
        # libyaml's scanner looks ahead and meets its own bound (1,000 levels) before the
        # composer meets MAX_DEPTH: the same refusal, said as moscopt says it
        if e.problem is not None and "maximum nesting depth" in e.problem:
            raise yaml.composer.ComposerError(None, None, TOO_DEEP, e.problem_mark) from None
        raise


def dump(data: Any, **options: Any) -> str:
    """`yaml.safe_dump` with `NoAliasDumper`."""
    text: str = yaml.dump(data, Dumper=NoAliasDumper, **options)
    return text
