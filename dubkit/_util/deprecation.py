"""Names kept for one version after a rename: using one warns and names its successor."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    warnings.warn(
        f"{old} is now {new}; {old} still works in this version and will be removed",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def warn_internal(old: str, *, stacklevel: int = 3) -> None:
    warnings.warn(
        f"{old} is internal to dubkit: it still works in this version and will be removed",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


class renamed:
    """A class attribute under its old name: reading (or setting) it warns and uses ``new``.
    A new name that starts with ``_`` made the old one internal: the warning says so.

    >>> class Clone:
    ...     language = renamed("locale")
    """

    def __init__(self, new: str) -> None:
        self.new = new
        self.old = self.owner = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.old, self.owner = name, owner.__name__

    def _warn(self) -> None:
        old = f"{self.owner}.{self.old}"
        if self.new.startswith("_"):
            warn_internal(old, stacklevel=4)
        else:
            warn_renamed(old, f"{self.owner}.{self.new}", stacklevel=4)

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:  # the class itself: introspection (help, dir, traitlets), not a use
            return self
        self._warn()
        return getattr(obj, self.new)

    def __set__(self, obj: Any, value: Any) -> None:
        self._warn()
        setattr(obj, self.new, value)


def module_renames(module: str, renames: dict[str, tuple[str, Any]]) -> Callable[[str], Any]:
    """A module's ``__getattr__`` for names it had: ``{old: (new, value)}``.

    >>> __getattr__ = module_renames(__name__, {"parse": ("parse_event", parse_event)})
    """

    def __getattr__(name: str) -> Any:
        if name in renames:
            new, value = renames[name]
            warn_renamed(f"{module}.{name}", f"{module}.{new}")
            return value
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def renamed_keywords(**renames: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Keyword arguments under their old names (``old="new"``): passing one warns and passes
    it on under the new name; passing both is a TypeError, as a repeated keyword is."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{function.__qualname__}() got both {old}= and {new}=")
                    warn_renamed(f"{function.__qualname__}({old}=)", f"{new}=")
                    kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return wrapper

    return decorate
