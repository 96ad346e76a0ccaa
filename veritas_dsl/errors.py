"""The two kinds of error that stop `ver` with exit code 2, whatever layer raises them.

A :class:`UserError` means the input is wrong (the spec, a model, an engine choice, an output
path): its message says what and where, and the command line shows it without a traceback. A
:class:`SoundnessError` means an answer failed its own check (a witness that does not reproduce,
exact engines that disagree): a bug in veritas-dsl, never the user's. Anything else reaching the
command line is an internal error.
"""

from __future__ import annotations


class UserError(Exception):
    """Wrong input; :meth:`render` is everything the user needs to read."""

    def render(self) -> str:
        return f"error: {self}"


class SoundnessError(Exception):
    """An engine's answer failed a check that it must pass: please report it."""
