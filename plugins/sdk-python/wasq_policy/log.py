"""Logging through the host's ``log`` import, with a ``logging``-like API.

Lines go to the controller's log (the ``tracing`` target ``wasq::plugin``), tagged with the
plugin's name. The host cuts lines at 4 KiB, keeps at most 1,000 lines per call and escapes
control characters. Messages are formatted as :mod:`logging` does: ``log.info("took %d
victims", n)`` formats only when called.

Do not use :mod:`logging` or ``print`` in a policy: a plugin has no clock (``logging`` reads
it) and no stdout; either traps the plugin. In plain CPython (tests) lines go to stderr, or to
:func:`wasq_policy.testing.capture_logs`.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any, Callable, Optional

from .wit import Level

try:  # Only inside a component build: componentize-py generates `wit_world`.
    from wit_world.imports import host as _host
    from wit_world.imports import types as _host_types
except ImportError:  # Plain CPython.
    _host = None
    _host_types = None

__all__ = [
    "Level",
    "log",
    "trace",
    "debug",
    "info",
    "warning",
    "warn",
    "error",
    "exception",
    "set_sink",
]

Sink = Callable[[Level, str], None]


def _to_host(level: Level, message: str) -> None:
    assert _host is not None and _host_types is not None
    _host.log(_host_types.Level(level.value), message)


def _to_stderr(level: Level, message: str) -> None:
    sys.stderr.write(f"[{level.name.lower()}] {message}\n")


_sink: Sink = _to_host if _host is not None else _to_stderr


def set_sink(sink: Optional[Sink]) -> Sink:
    """Sends lines to ``sink`` instead (``None``: back to the default); returns the previous
    sink. For tests: :func:`wasq_policy.testing.capture_logs` uses it."""
    global _sink
    previous = _sink
    _sink = sink if sink is not None else (_to_host if _host is not None else _to_stderr)
    return previous


def log(level: Level, message: str, *args: Any) -> None:
    """Writes one line at ``level``: ``message % args`` (as :mod:`logging` formats)."""
    if args:
        try:
            message = message % args
        except (TypeError, ValueError) as e:
            message = f"{message} {args!r} (formatting failed: {e})"
    _sink(level, message)


def trace(message: str, *args: Any) -> None:
    """Logs at trace level."""
    log(Level.TRACE, message, *args)


def debug(message: str, *args: Any) -> None:
    """Logs at debug level."""
    log(Level.DEBUG, message, *args)


def info(message: str, *args: Any) -> None:
    """Logs at info level."""
    log(Level.INFO, message, *args)


def warning(message: str, *args: Any) -> None:
    """Logs at warn level."""
    log(Level.WARN, message, *args)


warn = warning


def error(message: str, *args: Any) -> None:
    """Logs at error level."""
    log(Level.ERROR, message, *args)


def exception(message: str, *args: Any) -> None:
    """Logs at error level, followed by the exception being handled and where it was raised
    (as ``logging.exception`` does; call it in an ``except`` block)."""
    info_ = sys.exc_info()
    suffix = describe_exception(info_[1], info_[2]) if info_[1] is not None else ""
    log(Level.ERROR, (message + ": " + suffix) if suffix else message, *args)


def describe_exception(exc: BaseException, tb: Optional[TracebackType] = None) -> str:
    """One line: ``Type: message (at file:line in function <- ...)``, innermost frame first.

    Reads no source files (a plugin has no filesystem: :mod:`traceback` would trap), only
    the frames' names and line numbers."""
    frames = []
    tb = tb if tb is not None else exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        frames.append(f"{code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno} in {code.co_name}")
        tb = tb.tb_next
    where = " <- ".join(reversed(frames[-8:]))
    text = f"{type(exc).__name__}: {exc}"
    return f"{text} (at {where})" if where else text
