"""Name -> class registries for pluggable components, and the discovery of their modules.

A retriever, a metric, an attribution model, an error sampler or a TTP method is one small
class registered under a name, so adding one is one file plus one config line. The class
carries the facts the workflow needs about it (display label, table order, the config keys it
reads, what its run needs) as class attributes; a registry built with ``required=`` refuses a
class that lacks one, naming the class.

A registry built with ``package=`` finds its plug-in modules itself: every module of that
package whose source has a line starting with ``@<symbol>.register(`` is imported the first
time the registry is listed or asked for an unknown name. Only those modules are imported
(reading a source file is cheap; importing one may pull in numpy or torch), and a plug-in
module keeps heavy imports inside its functions.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: Sort key of an entry without an ``order`` attribute: after every ordered one.
UNORDERED = 1_000_000


class PluginError(TypeError):
    """A registered class lacks a fact the workflow needs (the message names the class)."""


class Registry(Generic[T]):
    """Registered objects by name.

    ``kind``      what an entry is, for error messages ("error sampler").
    ``required``  class attributes every entry must define (checked at registration).
    ``package``   dotted package scanned for plug-in modules; ``symbol`` is the name this
                  registry is bound to in its defining module (``SAMPLERS``).
    """

    def __init__(
        self,
        kind: str,
        *,
        required: Sequence[str] = (),
        package: str | None = None,
        symbol: str | None = None,
    ):
        if (package is None) != (symbol is None):
            raise ValueError("give both package and symbol to discover plug-in modules")
        self.kind = kind
        self.required = tuple(required)
        self.package = package
        self.symbol = symbol
        self._items: dict[str, T] = {}
        self._scanned: set[str] = set()
        self._discovering = False

    # --- registration ---------------------------------------------------------------------
    def register(self, name: str) -> Callable[[T], T]:
        def decorator(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self.validate(name, obj)
            self._items[name] = obj
            return obj

        return decorator

    def validate(self, name: str, obj: Any) -> None:
        missing = [a for a in self.required if not hasattr(obj, a)]
        if missing:
            where = f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', obj)}"
            raise PluginError(
                f"{self.kind} {name!r} ({where}) lacks the class attribute(s) {missing}; "
                f"every {self.kind} defines {list(self.required)}"
            )

    def unregister(self, name: str) -> None:
        """Remove an entry (for tests that register a temporary plug-in)."""
        self._items.pop(name, None)

    # --- discovery ------------------------------------------------------------------------
    def discover(self) -> None:
        """Import the package's modules that register into this registry (once each)."""
        if self.package is None or self._discovering:
            return
        self._discovering = True
        try:
            package = importlib.import_module(self.package)
            marker = re.compile(rf"^@{re.escape(self.symbol)}\.register\(", re.MULTILINE)
            for info in pkgutil.iter_modules(package.__path__, prefix=f"{self.package}."):
                if info.name in self._scanned or info.ispkg:
                    continue
                self._scanned.add(info.name)
                if _source_matches(info, marker):
                    importlib.import_module(info.name)
        finally:
            self._discovering = False

    # --- look-ups -------------------------------------------------------------------------
    def get(self, name: str) -> T:
        if name not in self._items:
            self.discover()
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "(none)"
            raise KeyError(f"unknown {self.kind} {name!r}; registered: {known}") from None

    def names(self) -> list[str]:
        self.discover()
        return sorted(self._items)

    def entries(self) -> list[tuple[str, T]]:
        """``(name, object)`` pairs, sorted by name."""
        return [(name, self._items[name]) for name in self.names()]

    def ordered(self, names: Sequence[str] | None = None) -> list[str]:
        """Names (default: all) in table order: by the ``order`` attribute, then by name."""
        chosen = self.names() if names is None else list(names)
        return sorted(chosen, key=lambda n: (getattr(self.get(n), "order", UNORDERED), n))

    def attribute(self, name: str, attr: str, default: Any = None) -> Any:
        """``attr`` of the entry ``name``; ``default`` for a name that is not registered."""
        if name not in self:
            return default
        return getattr(self.get(name), attr, default)

    def __contains__(self, name: str) -> bool:
        if name not in self._items:
            self.discover()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


def _source_matches(info: pkgutil.ModuleInfo, marker: re.Pattern) -> bool:
    spec = importlib.util.find_spec(info.name)
    origin = getattr(spec, "origin", None)
    if not origin or not origin.endswith(".py"):
        return False
    with open(origin, encoding="utf-8") as fh:
        return marker.search(fh.read()) is not None
