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


class renamed:
    """A class attribute under its old name: reading (or setting) it warns and uses ``new``.

    >>> class Clone:
    ...     language = renamed("locale")
    """

    def __init__(self, new: str) -> None:
        self.new = new
        self.old = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.old, self.owner = name, owner.__name__

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        warn_renamed(f"{self.owner}.{self.old}", f"{self.owner}.{self.new}")
        return getattr(obj if obj is not None else owner, self.new)

    def __set__(self, obj: Any, value: Any) -> None:
        warn_renamed(f"{self.owner}.{self.old}", f"{self.owner}.{self.new}")
        setattr(obj, self.new, value)


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
