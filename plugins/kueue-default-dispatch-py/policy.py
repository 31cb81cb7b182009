"""kueue-default-dispatch-py: Kueue's MultiKueue dispatchers as a plugin, in Python.

The Python port of ``plugins/kueue-default-dispatch``: the same answers as wasq's built-in
``AllAtOnce`` and ``Incremental`` (``tests/all/languages.rs`` compares them on random
requests).

Settings (``pluginSettings.kueue-default-dispatch-py``):

- ``dispatcher``: ``all-at-once`` (the default: every connected cluster, by name) or
  ``incremental`` (``stepSize`` more connected clusters, in the MultiKueueConfig's order,
  every five-minute round; earlier nominees are never taken back);
- ``stepSize``: the incremental dispatcher's clusters per round (default 3, Kueue's).

A setting it cannot read is logged and its default kept.
"""

import wasq_policy
from wasq_policy import log
from wasq_policy.dispatch import (
    DEFAULT_STEP,
    DispatchPolicy,
    all_at_once,
    incremental,
    parse_step,
)


class KueueDispatch(DispatchPolicy):
    """Which of Kueue's dispatchers: ``step`` is ``None`` for all-at-once, else the
    incremental dispatcher's step."""

    def __init__(self):
        self.step = None

    def settings_changed(self, settings):
        raw = settings.get("stepSize")
        step = DEFAULT_STEP if raw is None else parse_step(raw)
        if step is None:
            log.warning('stepSize "%s" is not a positive integer; using %d', raw, DEFAULT_STEP)
            step = DEFAULT_STEP
        dispatcher = settings.get("dispatcher")
        if dispatcher in (None, "all-at-once"):
            self.step = None
        elif dispatcher == "incremental":
            self.step = step
        else:
            log.warning('dispatcher "%s" is neither all-at-once nor incremental; using all-at-once',
                        dispatcher)
            self.step = None

    def dispatch(self, settings, request):
        if self.step is None:
            return all_at_once(request)
        return incremental(request, request, self.step)


Dispatch = wasq_policy.dispatch.export(KueueDispatch)
