"""The base of every IR node: fields, ``replace`` and printing derived from dataclass fields."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, ClassVar, TypeVar

T = TypeVar("T")
# ``Self`` is in ``typing`` only from 3.11; a bound TypeVar types ``replace`` on 3.10 too.
_N = TypeVar("_N", bound="Node")


class Node:
    """Base class of IR nodes.

    Every node is a frozen, slotted dataclass compared by identity (``==`` is ``is``);
    ``tilewright.ir.structural_equal`` compares structure. Traversal is derived from the
    dataclass fields, so visitors and mutators need no per-node table.
    """

    __slots__ = ()
    if TYPE_CHECKING:
        # Set by ``@node`` on every concrete subclass; declared so that ``dataclasses``
        # functions accept any node.
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[object]]]

    def field_names(self) -> tuple[str, ...]:
        return _field_names(type(self))

    def field_items(self) -> Iterator[tuple[str, object]]:
        for name in _field_names(type(self)):
            yield name, getattr(self, name)

    def children(self) -> Iterator[Node]:
        """The nodes directly held by this node's fields, tuples flattened, in field order."""
        for _, value in self.field_items():
            yield from _nodes_in(value)

    def replace(self: _N, **changes: object) -> _N:
        """A copy with the given fields changed; ``self`` when every change is identical."""
        if all(getattr(self, key) is value for key, value in changes.items()):
            return self
        return dataclasses.replace(self, **changes)

    def same_as(self, other: object) -> bool:
        """True when ``other`` is this very node (TVM's ``Object.same_as``: identity, not
        structure; see ``structural_equal``).

        Example::

            >>> x = Var("x", int32)
            >>> x.same_as(x), x.same_as(Var("x", int32))
            (True, False)
        """
        return self is other

    def script(self) -> str:
        """This node as TVMScript-style text."""
        # The printer lives in a later package of the pipeline; import on use.
        from tilewright.ir.printer import script

        return script(self)

    def show(self) -> None:
        """Print ``script()``, highlighted on a terminal; in Jupyter, display it as HTML."""
        from tilewright.ir.printer.highlight import show

        show(self.script())

    def _repr_html_(self) -> str:
        """Jupyter's rich display: the highlighted script."""
        from tilewright.ir.printer.highlight import to_html

        return to_html(self.script())

    def __repr__(self) -> str:
        try:
            return self.script()
        except Exception:
            return f"<{type(self).__name__} at {id(self):#x}>"

    def __str__(self) -> str:
        return self.__repr__()

    def __bool__(self) -> bool:
        return True


def _nodes_in(value: object) -> Iterator[Node]:
    if isinstance(value, Node):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from _nodes_in(item)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: object) -> Callable[[T], T]:
        return lambda decorated: decorated


@dataclass_transform(frozen_default=True, eq_default=False)
def node(cls: type[T]) -> type[T]:
    """The one dataclass idiom for IR nodes: immutable, slotted, identity equality, printer repr."""
    return dataclasses.dataclass(frozen=True, slots=True, eq=False, repr=False)(cls)
