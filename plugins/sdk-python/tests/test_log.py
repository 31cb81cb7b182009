"""Logging: formatting, levels, exceptions described without reading source files."""

import builtins

import pytest

from wasq_policy import Level, log
from wasq_policy.testing import capture_logs


def test_lines_are_formatted_like_logging_at_their_level():
    with capture_logs() as lines:
        log.info("took %d victims of %s", 2, "cq")
        log.warning("plain %s")
        log.debug("%d", "not a number")
        log.trace("t")
        log.error("e")
    assert lines[0] == (Level.INFO, "took 2 victims of cq")
    assert lines[1] == (Level.WARN, "plain %s"), "no args: no formatting"
    assert lines[2][0] == Level.DEBUG and "formatting failed" in lines[2][1]
    assert [level for level, _ in lines[3:]] == [Level.TRACE, Level.ERROR]


def test_exception_describes_where_without_opening_files(monkeypatch):
    def no_files(*args, **kwargs):
        raise AssertionError("a plugin has no filesystem")

    def fail():
        raise KeyError("nope")

    with capture_logs() as lines:
        monkeypatch.setattr(builtins, "open", no_files)
        try:
            fail()
        except KeyError:
            log.exception("while %s", "choosing")
        monkeypatch.undo()
    ((level, message),) = lines
    assert level == Level.ERROR
    assert message.startswith("while choosing: KeyError: 'nope' (at test_log.py:")
    assert "in fail <- test_log.py:" in message


def test_the_sink_is_restored_after_capture():
    outer = log.set_sink(None)
    with capture_logs():
        pass
    assert log.set_sink(outer) is not None
    with pytest.raises(ZeroDivisionError), capture_logs() as lines:
        log.info("x")
        1 / 0
    assert lines == [(Level.INFO, "x")]
