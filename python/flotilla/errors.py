"""Exceptions raised by Flotilla's C++ core, with the core's messages.

Every error is a :class:`Error` (a ``RuntimeError``). Errors about bad
arguments — a feed of the wrong shape or dtype, an unknown flag or field —
are also ``ValueError``, so code written for Paddle's checks keeps working.
Ctrl-C during a run or a collective raises ``KeyboardInterrupt``.
"""


class Error(RuntimeError):
    """Base of every error the C++ core raises."""


class InvalidArgumentError(Error, ValueError):
    """An argument, feed, attribute or configuration value is not acceptable."""


class NotFoundError(Error, LookupError):
    """A variable, file, feed or fetch name does not exist."""


class AlreadyExistsError(Error):
    """Something that must be unique exists already."""


class UnavailableError(Error):
    """A peer, server or store cannot be reached or has gone away."""


class DeadlineExceededError(Error):
    """A wait for peers timed out; the message names the missing ranks."""


class CorruptionError(Error):
    """A file or message failed its checksum or could not be parsed."""


class UnimplementedError(Error, NotImplementedError):
    """The operation is not supported (yet) by Flotilla."""


class InternalError(Error):
    """A broken invariant inside Flotilla (please report it)."""


class CancelledError(Error):
    """A blocking call was stopped by its host (a signal), not by a failure."""


class EOFException(Error):
    """A non-iterable DataLoader has no more batches (Paddle's core.EOFException)."""


__all__ = [
    "Error", "InvalidArgumentError", "NotFoundError", "AlreadyExistsError",
    "UnavailableError", "DeadlineExceededError", "CorruptionError",
    "UnimplementedError", "InternalError", "CancelledError", "EOFException",
]
