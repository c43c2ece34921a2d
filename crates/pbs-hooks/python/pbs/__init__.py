"""The `pbs` module of hooks, as OpenPBS's hook writers use it.

    import pbs
    e = pbs.event()
    if e.type == pbs.QUEUEJOB and e.job.Job_Name == "bad":
        e.reject("jobs named bad are not welcome")
    e.job.Resource_List["soft_walltime"] = pbs.duration("300")
    pbs.logmsg(pbs.EVENT_DEBUG, "set")

What this module lacks raises a clear error: an unknown module name raises AttributeError
naming it; server attributes, queues and vnodes outside an event's own raise
NotImplementedError. Constants have OpenPBS's values.
"""

from ._exc import (
    BadAttributeValueError,
    BadAttributeValueTypeError,
    BadResourceValueError,
    BadResourceValueTypeError,
    EventIncompatibleError,
    UnsetAttributeNameError,
    UnsetResourceNameError,
)
from ._types import JOB_STATES as _JOB_STATES
from ._types import duration, job_state, pbs_env, place, range, select, size, size_to_kbytes
from . import _hook

# Event types (src/include/hook.h).
QUEUEJOB = 0x01
MODIFYJOB = 0x02
RESVSUB = 0x04
MOVEJOB = 0x08
RUNJOB = 0x10
PROVISION = 0x20
EXECJOB_BEGIN = 0x40
EXECJOB_PROLOGUE = 0x80
EXECJOB_EPILOGUE = 0x100
EXECJOB_END = 0x200
EXECJOB_PRETERM = 0x400
EXECJOB_LAUNCH = 0x800
EXECHOST_PERIODIC = 0x1000
EXECHOST_STARTUP = 0x2000
EXECJOB_ATTACH = 0x4000
PERIODIC = 0x8000
RESV_END = 0x10000
EXECJOB_RESIZE = 0x20000
EXECJOB_ABORT = 0x40000
EXECJOB_POSTSUSPEND = 0x80000
EXECJOB_PRERESUME = 0x100000
MANAGEMENT = 0x200000
MODIFYVNODE = 0x400000
JOBOBIT = 0x800000
RESV_BEGIN = 0x1000000
RESV_CONFIRM = 0x2000000
MODIFYRESV = 0x4000000
POSTQUEUEJOB = 0x8000000
for _name, _value in list(globals().items()):
    if _name.isupper() and isinstance(_value, int) and _value in _hook.EVENT_TYPES.values():
        globals()["HOOK_EVENT_" + _name] = _value

# Log event masks (src/include/log.h).
EVENT_ERROR = 0x0001
EVENT_SYSTEM = 0x0002
EVENT_ADMIN = 0x0004
EVENT_JOB = 0x0008
EVENT_JOB_USAGE = 0x0010
EVENT_SECURITY = 0x0020
EVENT_SCHED = 0x0040
EVENT_DEBUG = 0x0080
EVENT_DEBUG2 = 0x0100
EVENT_RESV = 0x0200
EVENT_DEBUG3 = 0x0400
EVENT_DEBUG4 = 0x0800
EVENT_FORCE = 0x8000

# The older syslog-like levels (src/include/hook.h); logged with the mask
# EVENT_SYSTEM | EVENT_ADMIN (0006), as OpenPBS's pbs.logmsg does.
LOG_DEBUG = 5
LOG_WARNING = 6
LOG_ERROR = 7

_SEVERITIES = frozenset((LOG_DEBUG, LOG_WARNING, LOG_ERROR))
_EVENT_MASKS = frozenset(
    (
        EVENT_ERROR,
        EVENT_SYSTEM,
        EVENT_ADMIN,
        EVENT_JOB,
        EVENT_JOB_USAGE,
        EVENT_SECURITY,
        EVENT_SCHED,
        EVENT_DEBUG,
        EVENT_DEBUG2,
        EVENT_RESV,
        EVENT_DEBUG3,
        EVENT_DEBUG4,
        EVENT_FORCE,
    )
)

# Job states (src/include/job.h; SUSPEND values from module_pbs_v1.c).
JOB_STATE_TRANSIT = _JOB_STATES["T"]
JOB_STATE_QUEUED = _JOB_STATES["Q"]
JOB_STATE_HELD = _JOB_STATES["H"]
JOB_STATE_WAITING = _JOB_STATES["W"]
JOB_STATE_RUNNING = _JOB_STATES["R"]
JOB_STATE_EXITING = _JOB_STATES["E"]
JOB_STATE_EXPIRED = _JOB_STATES["X"]
JOB_STATE_BEGUN = _JOB_STATES["B"]
JOB_STATE_MOVED = _JOB_STATES["M"]
JOB_STATE_FINISHED = _JOB_STATES["F"]
JOB_STATE_SUSPEND = _JOB_STATES["S"]
JOB_STATE_SUSPEND_USERACTIVE = _JOB_STATES["U"]

# Job substates (src/include/job.h).
JOB_SUBSTATE_UNKNOWN = -1
JOB_SUBSTATE_TRANSIN = 0
JOB_SUBSTATE_TRANSICM = 1
JOB_SUBSTATE_TRNOUT = 2
JOB_SUBSTATE_TRNOUTCM = 3
JOB_SUBSTATE_QUEUED = 10
JOB_SUBSTATE_PRESTAGEIN = 11
JOB_SUBSTATE_SYNCRES = 13
JOB_SUBSTATE_STAGEIN = 14
JOB_SUBSTATE_STAGEGO = 15
JOB_SUBSTATE_STAGECMP = 16
JOB_SUBSTATE_HELD = 20
JOB_SUBSTATE_SYNCHOLD = 21
JOB_SUBSTATE_DEPNHOLD = 22
JOB_SUBSTATE_WAITING = 30
JOB_SUBSTATE_STAGEFAIL = 37
JOB_SUBSTATE_PRERUN = 41
JOB_SUBSTATE_RUNNING = 42
JOB_SUBSTATE_SUSPEND = 43
JOB_SUBSTATE_SCHSUSP = 45
JOB_SUBSTATE_EXITING = 50
JOB_SUBSTATE_STAGEOUT = 51
JOB_SUBSTATE_STAGEDEL = 52
JOB_SUBSTATE_EXITED = 53
JOB_SUBSTATE_ABORT = 54
JOB_SUBSTATE_KILLSIS = 56
JOB_SUBSTATE_RUNEPILOG = 57
JOB_SUBSTATE_OBIT = 58
JOB_SUBSTATE_TERM = 59
JOB_SUBSTATE_DELJOB = 153
JOB_SUBSTATE_RERUN = 60
JOB_SUBSTATE_RERUN1 = 61
JOB_SUBSTATE_RERUN2 = 62
JOB_SUBSTATE_RERUN3 = 63
JOB_SUBSTATE_EXPIRED = 69
JOB_SUBSTATE_BEGUN = 70
JOB_SUBSTATE_PROVISION = 71
JOB_SUBSTATE_WAITING_JOIN_JOB = 72
JOB_SUBSTATE_TERMINATED = 91
JOB_SUBSTATE_FINISHED = 92
JOB_SUBSTATE_FAILED = 93
JOB_SUBSTATE_MOVED = 94


def event():
    """The event the running hook responds to."""
    ev = _hook.current.event
    if ev is None:
        raise RuntimeError("pbs.event() is only available while a hook runs")
    return ev


def server():
    """The server: its name; in periodic hooks, .job(id) and .jobs()."""
    return event()._server


def logmsg(loglevel, message):
    """Write `message` to the daemon's log.

    loglevel is one of pbs.EVENT_* (the log event mask written) or pbs.LOG_DEBUG,
    pbs.LOG_WARNING, pbs.LOG_ERROR (written with the mask 0006, as OpenPBS does).
    """
    if not isinstance(loglevel, int) or isinstance(loglevel, bool):
        raise TypeError("logmsg() loglevel must be an int, not %s" % type(loglevel).__name__)
    if not isinstance(message, str):
        raise TypeError("logmsg() message must be str, not %s" % type(message).__name__)
    if loglevel in _EVENT_MASKS:
        mask = loglevel
    elif loglevel in _SEVERITIES:
        mask = EVENT_SYSTEM | EVENT_ADMIN
    else:
        raise TypeError("Invalid severity or eventtype value <%d>" % loglevel)
    event()  # only inside a hook
    _hook.current.log.append({"level": mask, "job": None, "msg": message})


def logjobmsg(jobid, message):
    """Write `message` to the daemon's log as a message about job `jobid`."""
    if not isinstance(jobid, str):
        raise TypeError("logjobmsg() jobid must be str, not %s" % type(jobid).__name__)
    if not isinstance(message, str):
        raise TypeError("logjobmsg() message must be str, not %s" % type(message).__name__)
    if not jobid:
        raise ValueError("no jobid given!")
    event()
    _hook.current.log.append({"level": EVENT_JOB, "job": jobid, "msg": message})


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        "module 'pbs' has no attribute '%s': this PBS's hook module does not provide it" % (name,)
    )


del _name, _value
