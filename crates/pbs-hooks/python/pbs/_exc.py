"""The exceptions OpenPBS's `pbs` module defines, which hook writers catch.

The two "unset name" errors are also `AttributeError`s here: reading a name that does not
exist raises them, so `hasattr()` and `getattr(x, name, default)` behave as Python expects,
while `except pbs.UnsetAttributeNameError` still catches a bad assignment as in OpenPBS.
"""

__all__ = [
    "EventIncompatibleError",
    "UnsetAttributeNameError",
    "BadAttributeValueTypeError",
    "BadAttributeValueError",
    "UnsetResourceNameError",
    "BadResourceValueTypeError",
    "BadResourceValueError",
]


class EventIncompatibleError(AttributeError):
    """The event has no such parameter (`e.job_o` outside `modifyjob`, ...)."""


class UnsetAttributeNameError(AttributeError):
    """No such attribute on this kind of object."""


class BadAttributeValueTypeError(Exception):
    """A value of a type an attribute cannot take."""


class BadAttributeValueError(Exception):
    """A value an attribute cannot take, or an attribute that cannot be set."""


class UnsetResourceNameError(AttributeError):
    """No such resource is defined."""


class BadResourceValueTypeError(Exception):
    """A value of a type a resource cannot take."""


class BadResourceValueError(Exception):
    """A value a resource cannot take."""


# Tracebacks name them as hook writers spell them: `pbs.BadAttributeValueError: ...`.
for _cls in (
    EventIncompatibleError,
    UnsetAttributeNameError,
    BadAttributeValueTypeError,
    BadAttributeValueError,
    UnsetResourceNameError,
    BadResourceValueTypeError,
    BadResourceValueError,
):
    _cls.__module__ = "pbs"
del _cls
