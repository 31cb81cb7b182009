"""What every exported policy keeps between calls: the policy (built on the first call), the
latest catalog and the string table; and how a policy's exception becomes a trap."""

from __future__ import annotations

from typing import Any, Callable, Generic, Optional, TypeVar

from . import log
from .catalog import Catalog
from .tables import StringTable

P = TypeVar("P")
R = TypeVar("R")

#: The s64 range of the WIT's integers.
S64_MIN, S64_MAX = -(2**63), 2**63 - 1
#: The u32 no index reaches: what an answer names for a position the policy gave that is none
#: (the host refuses it).
NO_INDEX = 2**32 - 1


class Runtime(Generic[P]):
    """The state of one plugin instance: the policy, the latest catalog, the string table.

    ``factory`` builds the policy (called with no arguments, on the first call into the
    plugin, so that importing the plugin at build time runs no policy code)."""

    #: The extension point, for messages.
    kind = "policy"

    def __init__(self, factory: Callable[[], P]) -> None:
        self._factory = factory
        self._policy: Optional[P] = None
        self.strings = StringTable()
        self.catalog = Catalog(None, self.strings)

    @property
    def policy(self) -> P:
        """The policy, built on first use."""
        if self._policy is None:
            self._policy = self.guard("__init__", self._factory)
        return self._policy

    def install_catalog(self, raw: Any) -> Catalog:
        """Stores a new catalog (the string table outlives it)."""
        self.catalog = Catalog(raw, self.strings)
        return self.catalog

    def add_strings(self, strings: Any) -> None:
        """Adds a call's ``new-strings`` (``None``: the call adds none)."""
        if strings is not None:
            self.strings.add(strings)

    def guard(self, method: str, call: Callable[[], R]) -> R:
        """Runs a policy method; an exception is logged at error level (with where it was
        raised) and raised again, which traps the instance: the host then decides with its
        built-in policy, counts the failure and starts a new instance."""
        try:
            return call()
        except BaseException as e:
            log.error(
                "%s policy %s.%s raised %s",
                self.kind,
                type(self._policy).__name__ if self._policy is not None else "?",
                method,
                log.describe_exception(e),
            )
            raise


def check_s64(value: Any, what: str) -> int:
    """``value`` as an ``s64``; a value out of range (or not an integer) raises."""
    number = int(value)
    if not S64_MIN <= number <= S64_MAX or number != value:
        raise ValueError(f"{what} {value!r} is not a 64-bit integer")
    return number
