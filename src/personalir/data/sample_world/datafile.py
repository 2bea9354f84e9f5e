"""Strict reading of the sample world's YAML data files: each value is typed by where it stands.

The domain files and the shared tables are written by hand, and PyYAML reads YAML 1.1, where
an unquoted ``No`` is a boolean, ``1e-3`` a string, ``010`` an octal number and a repeated
mapping key silently replaces the first. So the files are read through YAML's node tree
(:func:`yaml.compose`) rather than its constructed values: where the generator expects text,
a scalar's text is taken as written (``Seating Capacity: [1, 2]`` gives the texts "1" and
"2"); where it expects a number, the scalar must be unquoted and parse as a Python ``float``
(so ``89.0`` in a file is exactly the literal ``89.0``); where it expects a flag, only
``true`` or ``false``. A repeated key, a missing or unknown key, an empty list where one
value is needed, or a value of the wrong shape raises :class:`DataFileError` naming the file
and line.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import NoReturn

import yaml

_KIND = {
    yaml.ScalarNode: "a single value",
    yaml.SequenceNode: "a list",
    yaml.MappingNode: "a mapping",
}


class DataFileError(ValueError):
    """A sample-world data file that does not say what the generator needs (file:line: why)."""


@dataclass(frozen=True)
class Value:
    """One node of a data file with its place (``types[2].price``) for error messages."""

    node: yaml.Node
    file: str
    where: str

    def fail(self, message: str) -> NoReturn:
        line = self.node.start_mark.line + 1
        at = f"{self.where}: " if self.where else ""
        raise DataFileError(f"{self.file}:{line}: {at}{message}")

    def _expect(self, kind: type) -> None:
        if not isinstance(self.node, kind):
            self.fail(f"expected {_KIND[kind]}, found {_KIND[type(self.node)]}")

    @property
    def is_mapping(self) -> bool:
        return isinstance(self.node, yaml.MappingNode)

    @property
    def is_list(self) -> bool:
        return isinstance(self.node, yaml.SequenceNode)

    def child(self, node: yaml.Node, where: str) -> Value:
        return Value(node, self.file, where)

    # ------------------------------------------------------------------- scalars
    def text(self) -> str:
        """The scalar's text as written (quoted or not); an empty unquoted value is an error."""
        self._expect(yaml.ScalarNode)
        if self.node.value == "" and self.node.style is None:
            self.fail("a value is missing")
        return self.node.value

    def number(self) -> float:
        self._expect(yaml.ScalarNode)
        if self.node.style is not None:
            self.fail(f"expected a number, found the quoted text {self.node.value!r}")
        try:
            value = float(self.node.value)
        except ValueError:
            self.fail(f"expected a number, found {self.node.value!r}")
        if not math.isfinite(value):
            self.fail(f"expected a finite number, found {self.node.value!r}")
        return value

    def flag(self) -> bool:
        self._expect(yaml.ScalarNode)
        if self.node.style is None and self.node.value in ("true", "false"):
            return self.node.value == "true"
        self.fail(f"expected true or false, found {self.node.value!r}")

    # ----------------------------------------------------------------- containers
    def items(self, *, nonempty: bool = False) -> list[Value]:
        self._expect(yaml.SequenceNode)
        if nonempty and not self.node.value:
            self.fail("the list is empty; at least one value is needed")
        return [self.child(n, f"{self.where}[{i}]") for i, n in enumerate(self.node.value)]

    def texts(self, *, nonempty: bool = False) -> tuple[str, ...]:
        return tuple(v.text() for v in self.items(nonempty=nonempty))

    def numbers(self, count: int) -> tuple[float, ...]:
        values = self.items()
        if len(values) != count:
            self.fail(f"expected {count} numbers, found {len(values)}")
        return tuple(v.number() for v in values)

    def mapping(self) -> dict[str, Value]:
        """Key -> value in the file's order; a repeated key is an error."""
        self._expect(yaml.MappingNode)
        out: dict[str, Value] = {}
        for key_node, value_node in self.node.value:
            key = self.child(key_node, self.where).text()
            if key in out:
                self.child(key_node, self.where).fail(f"key {key!r} appears twice")
            out[key] = self.child(value_node, f"{self.where}.{key}" if self.where else key)
        return out

    def fields(self, required: Iterable[str], optional: Iterable[str] = ()) -> dict[str, Value]:
        """The mapping's entries, checked against the keys this place knows."""
        required, optional = tuple(required), tuple(optional)
        found = self.mapping()
        missing = [k for k in required if k not in found]
        if missing:
            self.fail(f"missing key(s) {missing}")
        unknown = [k for k in found if k not in required and k not in optional]
        if unknown:
            self.fail(f"unknown key(s) {unknown}; known: {sorted([*required, *optional])}")
        return found

    def text_lists(self, *, nonempty: bool = False) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """A mapping of text -> list of texts, as ordered pairs."""
        return tuple((key, value.texts(nonempty=nonempty)) for key, value in self.mapping().items())


def read_data_file(source: str | Path | Traversable) -> Value:
    """The root of a YAML data file (a path, or a package resource from importlib.resources)."""
    name = str(source)
    text = (Path(source) if isinstance(source, str) else source).read_text(encoding="utf-8")
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise DataFileError(f"{name}: not valid YAML: {exc}") from None
    if root is None:
        raise DataFileError(f"{name}:1: the file is empty")
    return Value(root, name, "")
