"""Value types of the `pbs` module: duration, size, select, place, range, pbs_env, job_state.

Their behaviour follows OpenPBS's (src/modules/python/pbs/v1/_base_types.py and the C
size type); this is an independent implementation.
"""

import re

from ._exc import BadAttributeValueError, BadResourceValueError

__all__ = ["duration", "size", "select", "place", "range", "pbs_env", "job_state", "parse_duration"]

# The largest duration OpenPBS's decode_time accepts (PBS_MAX_TIME, LONG_MAX - 1 on 64 bits).
_MAX_TIME = 2**63 - 2
# OpenPBS multiplies word sizes by the C word (8 bytes on the 64-bit hosts it runs on).
_WORD = 8


def _bad_resource(value, name):
    return BadResourceValueError("input value %s not of the right format for '%s'" % (value, name))


def parse_duration(text, name="walltime"):
    """Seconds in `[[HH:]MM:]SS[.fff]`, as OpenPBS's decode_time reads it.

    Fractions of 500 ms or more round up; "" is 0. Anything else raises
    BadResourceValueError naming `name`.
    """
    if text == "":
        return 0
    fields = text.split(":")
    if len(fields) > 3:
        raise _bad_resource(text, name)
    *leading, last = fields
    whole, dot, fraction = last.partition(".")
    if dot and (not whole or (fraction and not (fraction.isascii() and fraction.isdigit()))):
        raise _bad_resource(text, name)
    secs = 0
    for field in leading:
        if not field or not (field.isascii() and field.isdigit()):
            raise _bad_resource(text, name)
        secs = secs * 60 + int(field)
    if whole == "":
        # "5:" reads as 5 minutes in OpenPBS; a bare "" was handled above.
        if not leading:
            raise _bad_resource(text, name)
        seconds = 0
    elif whole.isascii() and whole.isdigit():
        seconds = int(whole)
    else:
        raise _bad_resource(text, name)
    secs = secs * 60 + seconds
    if fraction and int(fraction[:3].ljust(3, "0")) >= 500:
        secs += 1
    if secs > _MAX_TIME:
        raise _bad_resource(text, name)
    return secs


class duration(int):
    """An interval in seconds, an int.

    pbs.duration(300), pbs.duration("300"), pbs.duration("1:00:00"), pbs.duration("1:30")
    (90 s). `str()` is the text it was made from, as in OpenPBS: str(pbs.duration("300"))
    is "300" and str(pbs.duration("01:00:00")) is "01:00:00".
    """

    def __new__(cls, value):
        text = str(value)
        self = int.__new__(cls, parse_duration(text))
        self._text = text
        return self

    def __str__(self):
        return self._text

    def __reduce__(self):
        return (duration, (self._text,))


_SIZE_SHIFT = {"": 0, "k": 10, "m": 20, "g": 30, "t": 40, "p": 50}
_SIZE_UNIT = {0: "", 10: "k", 20: "m", 30: "g", 40: "t", 50: "p"}
_SIZE_RE = re.compile(r"([0-9]+)([kmgtp]?)([bw]?)", re.IGNORECASE)


class _BadSize(BadResourceValueError, TypeError):
    """A bad pbs.size value: OpenPBS raises TypeError; BadResourceValueError also catches it."""


_BadSize.__name__ = _BadSize.__qualname__ = "BadResourceValueError"
_BadSize.__module__ = "pbs"


def _normalize(a, b):
    """OpenPBS's normalize_size: both in bytes if either is, bytes rounded up to kilobytes,
    then both in the smaller unit. Returns (num_a, num_b, shift, words)."""
    an, ash, aw = a._num, a._shift, a._words
    bn, bsh, bw = b._num, b._shift, b._words
    if aw and not bw:
        an, aw = an * _WORD, False
    elif bw and not aw:
        bn, bw = bn * _WORD, False
    if ash == 0:
        an, ash = (an + 1023) >> 10, 10
    if bsh == 0:
        bn, bsh = (bn + 1023) >> 10, 10
    if ash > bsh:
        an, ash = an << (ash - bsh), bsh
    elif bsh > ash:
        bn = bn << (bsh - ash)
    return an, bn, ash, aw


class size:
    """A PBS size: pbs.size(1024), pbs.size("1gb"), pbs.size("512mb"), pbs.size("10kw").

    `str()` is OpenPBS's form ("1gb", "1024b"). Sizes compare with sizes, ints (bytes) and
    size strings by their number of bytes; `+` and `-` work as OpenPBS's do (the result
    is in the smaller unit of the two, bytes rounded up to kilobytes).
    """

    __slots__ = ("_num", "_shift", "_words")

    def __init__(self, value):
        if isinstance(value, size):
            self._num, self._shift, self._words = value._num, value._shift, value._words
        elif isinstance(value, str):
            m = _SIZE_RE.fullmatch(value)
            if m is None:
                raise _BadSize("%s: bad value for _size" % (value,))
            self._num = int(m.group(1))
            self._shift = _SIZE_SHIFT[m.group(2).lower()]
            self._words = m.group(3).lower() == "w"
        elif isinstance(value, int):
            if value < 0:
                raise _BadSize("_size instance cannot be negative")
            self._num, self._shift, self._words = int(value), 0, False
        else:
            raise _BadSize("Bad _size value: %r" % (value,))

    @classmethod
    def _make(cls, num, shift, words):
        self = object.__new__(cls)
        self._num, self._shift, self._words = num, shift, words
        return self

    def _bytes(self):
        return (self._num << self._shift) * (_WORD if self._words else 1)

    def __str__(self):
        return "%d%s%s" % (self._num, _SIZE_UNIT[self._shift], "w" if self._words else "b")

    __repr__ = __str__

    @staticmethod
    def _coerce(other):
        if isinstance(other, size):
            return other
        if isinstance(other, (int, str)) and not isinstance(other, bool):
            try:
                return size(other)
            except _BadSize:
                return None
        return None

    def _cmp(self, other):
        o = self._coerce(other)
        if o is None:
            return None
        a, b = self._bytes(), o._bytes()
        return (a > b) - (a < b)

    def __eq__(self, other):
        c = self._cmp(other)
        return False if c is None else c == 0

    def __ne__(self, other):
        c = self._cmp(other)
        return True if c is None else c != 0

    def __lt__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c < 0

    def __le__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c <= 0

    def __gt__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c > 0

    def __ge__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c >= 0

    def __hash__(self):
        return hash(self._bytes())

    def __add__(self, other):
        o = self._coerce(other)
        if o is None:
            return NotImplemented
        a, b, shift, words = _normalize(self, o)
        return size._make(a + b, shift, words)

    __radd__ = __add__

    def __sub__(self, other):
        o = self._coerce(other)
        if o is None:
            return NotImplemented
        a, b, shift, words = _normalize(self, o)
        if b > a:
            raise ArithmeticError("expression evaluates to negative _size value")
        return size._make(a - b, shift, words)

    def __rsub__(self, other):
        o = self._coerce(other)
        if o is None:
            return NotImplemented
        return o.__sub__(self)

    def __deepcopy__(self, memo):
        return size(self)

    def __copy__(self):
        return size(self)


def size_to_kbytes(sz):
    """Kilobytes in a pbs.size (bytes rounded up), as OpenPBS's pbs.size_to_kbytes."""
    sz = size(sz)
    n = sz._num * (_WORD if sz._words else 1)
    if sz._shift == 0:
        return (n + 1023) >> 10
    return n << (sz._shift - 10)


# One chunk of a select: [N:]res=val[:res=val...]
_RES_NAME = r"[A-Za-z_][A-Za-z0-9_.-]*"
_SELECT_CHUNK = re.compile(r"(?:[0-9]+|%s=[^:+=]+)(?::%s=[^:+=]+)*" % (_RES_NAME, _RES_NAME))


class select(str):
    """A select specification, "[N:]res=val[:res=val][+[N:]res=val...]" (a str)."""

    def __new__(cls, value):
        text = str(value)
        if not text or not all(_SELECT_CHUNK.fullmatch(c) for c in text.split("+")):
            raise _bad_resource(text, "select")
        return str.__new__(cls, text)


_PLACE_WORDS = {"free", "pack", "scatter", "vscatter", "shared", "excl", "exclhost"}
_PLACE_GROUP = re.compile(r"group=%s" % _RES_NAME)


class place(str):
    """A place specification, "[arrangement][:sharing][:group=res]" (a str)."""

    def __new__(cls, value):
        text = str(value)
        words = text.split(":")
        if not text or not all(w in _PLACE_WORDS or _PLACE_GROUP.fullmatch(w) for w in words):
            raise _bad_resource(text, "place")
        return str.__new__(cls, text)


_RANGE = re.compile(r"[0-9]+(?:-[0-9]+(?::[0-9]+)?)?")


class range(str):
    """An array range, "start[-stop[:step]]" (a str), as array_indices_submitted."""

    def __new__(cls, value):
        text = str(value)
        if not _RANGE.fullmatch(text):
            raise BadAttributeValueError(
                "input value %s not of the right format for 'array_indices_submitted'" % (text,)
            )
        return str.__new__(cls, text)


def _split_env(text):
    """Split "A=1,B=x\\,y" on the commas that are not escaped."""
    out = []
    cur = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            cur.append(text[i : i + 2])
            i += 2
            continue
        if c == ",":
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    out.append("".join(cur))
    return out


class pbs_env(dict):
    """A job's Variable_List: a dict of variable to value; `str()` gives "A=1,B=2".

    Values keep their escapes ("MPI\\,LAPI") as OpenPBS keeps them. In a hook, the
    PBS-set variables (PBS_O_HOME, ...) cannot be changed, as in OpenPBS.
    """

    _readonly_names = frozenset(
        (
            "PBS_ENVIRONMENT",
            "PBS_JOBDIR",
            "PBS_JOBID",
            "PBS_JOBNAME",
            "PBS_NODEFILE",
            "TMPDIR",
            "PBS_O_HOME",
            "PBS_O_HOST",
            "PBS_O_LANG",
            "PBS_O_LOGNAME",
            "PBS_O_MAIL",
            "PBS_O_PATH",
            "PBS_O_QUEUE",
            "PBS_O_SHELL",
            "PBS_O_SYSTEM",
            "PBS_O_TZ",
            "PBS_O_WORKDIR",
            "PBS_QUEUE",
        )
    )

    def __init__(self, value=None, generic=False):
        self._generic = generic
        if value is None:
            super().__init__()
        elif isinstance(value, str):
            items = {}
            if value:
                for entry in _split_env(value):
                    name, eq, val = entry.partition("=")
                    if eq:
                        items[name] = val
            super().__init__(items)
        else:
            super().__init__(value)

    def __setitem__(self, name, value):
        if name in pbs_env._readonly_names and not self._generic:
            raise BadAttributeValueError("env variable '%s' is readonly" % (name,))
        super().__setitem__(name, value)

    def __str__(self):
        return ",".join("%s=%s" % (k, v) for k, v in self.items() if v is not None)


# OpenPBS's job state numbers (src/include/job.h, module_pbs_v1.c).
JOB_STATES = {
    "T": 0,
    "Q": 1,
    "H": 2,
    "W": 3,
    "R": 4,
    "E": 5,
    "X": 6,
    "B": 7,
    "M": 8,
    "F": 9,
    "S": 400,
    "U": 410,
}
_STATE_LETTERS = {v: k for k, v in JOB_STATES.items()}


class job_state(int):
    """A job's state as OpenPBS gives it to hooks: an int to compare with
    pbs.JOB_STATE_RUNNING and the others, made from the state letter."""

    def __new__(cls, value):
        if isinstance(value, str):
            v = JOB_STATES.get(value)
            if v is None:
                if value.lstrip("-").isdigit():
                    v = int(value)
                else:
                    raise BadAttributeValueError("input value %s not of the right format for 'job_state'" % value)
        else:
            v = int(value)
        return int.__new__(cls, v)

    def letter(self):
        return _STATE_LETTERS.get(int(self), str(int(self)))
