"""Runs hooks for a PBS daemon: one JSON request a line on stdin, one JSON answer a line
on the stdout it was started with (docs/hooks.md, "The runner protocol").

Started as `python3 -I -u pbs_hook_runner.py`. What hooks print goes to stderr.
"""

import os
import sys


def _setup_fds():
    """Keep the protocol's pipes to ourselves: stdout becomes stderr, stdin /dev/null, so
    nothing a hook prints or reads touches the protocol. Returns (input file, output fd)."""
    here = os.path.dirname(os.path.abspath(__file__))
    if not sys.path or sys.path[0] != here:
        sys.path.insert(0, here)
    out_fd = os.dup(1)  # non-inheritable: a hook's children do not get it
    in_fd = os.dup(0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(os.devnull, "r")
    return os.fdopen(in_fd, "rb", buffering=1 << 16), out_fd


_input, _out_fd = _setup_fds()

import _signal  # noqa: E402
import builtins  # noqa: E402
import collections  # noqa: E402
import json  # noqa: E402
import linecache  # noqa: E402
import signal  # noqa: E402
import traceback  # noqa: E402

import pbs  # noqa: E402
from pbs import _hook  # noqa: E402


class HookAlarm(BaseException):
    """Raised into a hook whose alarm went off (a BaseException: `except Exception` in a
    hook does not swallow it)."""


class _State:
    in_hook = False  # an alarm now stops the hook
    pending = False  # an alarm came while the hook waited for the daemon


_state = _State()


def _on_alarm(signum, frame):
    # The timer repeats (see _event): a hook that swallows one HookAlarm gets another.
    if _state.in_hook:
        raise HookAlarm()
    _state.pending = True


_SIGALRM = int(signal.SIGALRM)
signal.signal(signal.SIGALRM, _on_alarm)

# hook name -> [script, code or None]: a warm interpreter compiles a hook once per version
# of it. The daemon sends a hook's body once and then events without it (docs/hooks.md), so
# the body is kept even when it does not compile (each event then fails as the first did).
_compiled = {}


def _code_for(hook, script):
    hit = _compiled.get(hook)
    if script is None:
        if hit is None:
            raise LookupError("no body was sent for hook '%s'" % (hook,))
        script = hit[0]
    elif hit is None or hit[0] != script:
        hit = _compiled[hook] = [script, None]
    if hit[1] is not None:
        return hit[1]
    filename = "%s.PY" % (hook,)
    # Tracebacks show the hook's source lines.
    lines = script.splitlines(True)
    linecache.cache[filename] = (len(script), None, lines, filename)
    hit[1] = compile(script, filename, "exec", dont_inherit=True)
    return hit[1]


_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class _Forked:
    child = False  # set in a child a hook forked


os.register_at_fork(after_in_child=lambda: setattr(_Forked, "child", True))


def _write(answer):
    if _Forked.child:
        # A child a hook forked (and did not exec) must not answer for the runner.
        os._exit(0)
    if type(answer) is str:
        data = answer.encode("utf-8", "surrogatepass")
    else:
        data = (_dumps(answer) + "\n").encode("utf-8", "surrogatepass")
    view = memoryview(data)
    while view:
        n = os.write(_out_fd, view)
        view = view[n:]


_ACCEPTED = '{"id":%d,"accepted":true,"reject_message":null,"exception":null,"alarm":false,"job":%s,"jobs":{},"log":[]}\n'


def _answer(rid, accepted=True, reject_message=None, exception=None, alarm=False, job=None, jobs=None, log=None,
            restart_cycle=False):
    answer = {
        "id": rid,
        "accepted": accepted,
        "reject_message": reject_message,
        "exception": exception,
        "alarm": alarm,
        "job": job,
        "jobs": {} if jobs is None else jobs,
        "log": [] if log is None else log,
    }
    if restart_cycle:
        answer["restart_cycle"] = True
    return answer


# Requests the daemon wrote behind the one being run (it writes events that arrive
# together at once), read while a hook waited for a reply: taken before the pipe.
_behind = collections.deque()


def _query(request):
    """A hook's question to the daemon (pbs.server().jobs() in a periodic hook): write
    {"op": "query", ...}, read {"op": "reply", ...}; requests met before the reply wait
    their turn in `_behind`. An alarm waits until the reply is read, so no half-read reply
    is left in the pipe."""
    was_in_hook = _state.in_hook
    _state.in_hook = False
    try:
        line = dict(request)
        line["op"] = "query"
        _write(line)
        while True:
            text = _input.readline()
            if not text:
                os._exit(0)  # the daemon is gone: nobody to answer
            if b'"reply"' not in text:
                _behind.append(text)
                continue
            reply = json.loads(text)
            if isinstance(reply, dict) and reply.get("op") == "reply":
                return reply
            if isinstance(reply, dict) and reply.get("op") in ("event", "defs"):
                _behind.append(text)
                continue
            raise RuntimeError("the daemon answered a query with %r" % (text[:200],))
    finally:
        _state.in_hook = was_in_hook
        if was_in_hook and _state.pending:
            _state.pending = False
            raise HookAlarm()


_hook.query = _query


def _exception_line(exc):
    return traceback.format_exception_only(type(exc), exc)[-1].strip()


def _report(hook, exc):
    """The whole traceback to stderr, without the runner's own frame."""
    tb = exc.__traceback__
    if tb is not None and tb.tb_frame.f_code is _run_hook.__code__:
        tb = tb.tb_next
    sys.stderr.write("hook '%s' raised an exception:\n" % (hook,))
    traceback.print_exception(type(exc), exc, tb, file=sys.stderr)
    sys.stderr.flush()


def _run_hook(code, hook):
    """exec the hook; returns (exception line or None, alarm)."""
    glob = {"__name__": "__main__", "__builtins__": builtins, "__file__": "%s.PY" % (hook,)}
    try:
        try:
            exec(code, glob)
        finally:
            _state.in_hook = False
    except HookAlarm:
        return None, True
    except SystemExit:
        return None, False
    except BaseException as exc:  # noqa: BLE001 - every failure of a hook is reported
        _report(hook, exc)
        return _exception_line(exc), False
    return None, False


def _event(req, rid):
    hook = req.get("hook")
    script = req.get("script")
    type_name = req.get("type")
    if not isinstance(hook, str) or not hook:
        return _answer(rid, False, exception="bad request: 'hook' must be a non-empty string")
    if script is not None and not isinstance(script, str):
        return _answer(rid, False, exception="bad request: 'script' must be a string")
    if type_name not in _hook.EVENT_TYPES:
        return _answer(rid, False, exception="bad request: unknown event type %r" % (type_name,))
    if not _hook.defs.loaded:
        return _answer(rid, False, exception="bad request: no 'defs' request before this event")
    alarm = req.get("alarm")
    if alarm is not None and (not isinstance(alarm, (int, float)) or isinstance(alarm, bool)):
        return _answer(rid, False, exception="bad request: 'alarm' must be a number")
    try:
        code = _code_for(hook, script)
    except LookupError as exc:
        return _answer(rid, False, exception="bad request: %s" % (exc,))
    except Exception as exc:  # noqa: BLE001 - a SyntaxError is the hook's exception
        sys.stderr.write("hook '%s' does not compile:\n" % (hook,))
        traceback.print_exception(type(exc), exc, None, file=sys.stderr)
        return _answer(rid, False, exception=_exception_line(exc), job=None if req.get("job") is None else {})
    try:
        ev = _hook.begin(req, type_name)
    except Exception as exc:  # noqa: BLE001
        _hook.end()
        return _answer(rid, False, exception="bad request: %s" % (exc,))

    # A hook may have pointed these elsewhere; the next one starts as the first did.
    sys.stdout = sys.stderr
    if alarm and alarm > 0:
        # The C function: signal.signal's enum conversions cost more than the hook.
        if _signal.getsignal(_SIGALRM) is not _on_alarm:
            _signal.signal(_SIGALRM, _on_alarm)
        _state.pending = False
        _state.in_hook = True
        signal.setitimer(signal.ITIMER_REAL, alarm, 0.5)
        try:
            exc_line, alarmed = _run_hook(code, hook)
        except HookAlarm:
            # The alarm went off between the hook's end and the flag's reset.
            exc_line, alarmed = None, True
        signal.setitimer(signal.ITIMER_REAL, 0)
        _state.in_hook = False
    else:
        exc_line, alarmed = _run_hook(code, hook)
    if alarmed:
        sys.stderr.write("hook '%s' stopped by its alarm after %s s\n" % (hook, alarm))

    ev, log = _hook.end()
    accepted = not (ev._rejected or exc_line is not None or alarmed)
    # As OpenPBS's: a hook that raised or ran past its alarm asks for nothing.
    restart_cycle = ev._restart_cycle and exc_line is None and not alarmed
    job = jobs = None
    if accepted:
        job, jobs = ev._changes()
        if not job and not jobs and not log and not restart_cycle and type(rid) is int:
            # The common answer, written without the encoder.
            return _ACCEPTED % (rid, "null" if job is None else "{}")
    elif ev._params.get("job") is not None:
        job = {}
    return _answer(
        rid,
        accepted,
        reject_message=ev._reject_msg if ev._rejected else None,
        exception=exc_line,
        alarm=alarmed,
        job=job,
        jobs=jobs,
        log=log,
        restart_cycle=restart_cycle,
    )


_decode = json.JSONDecoder().decode


def _handle(line):
    try:
        req = _decode(line.decode("utf-8", "surrogatepass"))
    except Exception as exc:  # noqa: BLE001 - not JSON, bad UTF-8, too deep
        return _answer(None, False, exception="bad request: %s" % (exc,))
    if not isinstance(req, dict):
        return _answer(None, False, exception="bad request: not a JSON object")
    rid = req.get("id")
    op = req.get("op")
    if op == "event":
        try:
            return _event(req, rid)
        except Exception as exc:  # noqa: BLE001 - the runner must answer every event
            signal.setitimer(signal.ITIMER_REAL, 0)
            _state.in_hook = False
            _hook.end()
            traceback.print_exc(file=sys.stderr)
            return _answer(rid, False, exception="runner error: %s" % (_exception_line(exc),))
    if op == "ready":
        # The pool's first request: answered once this runner is up and reading.
        return _answer(rid)
    if op == "reply":
        # A reply to a query of a hook its alarm stopped first: nobody waits for it.
        sys.stderr.write("pbs_hook_runner: a reply to no query, dropped\n")
        return None
    if op == "defs":
        try:
            _hook.set_defs(req)
        except Exception as exc:  # noqa: BLE001
            if "id" in req:
                return _answer(rid, False, exception="bad request: %s" % (exc,))
            sys.stderr.write("pbs_hook_runner: bad defs request: %s\n" % (exc,))
            return None
        # defs is not answered (it has no id); one that carries an id gets an answer.
        return _answer(rid) if "id" in req else None
    return _answer(rid, False, exception="bad request: unknown op %r" % (op,))


def main():
    readline = _input.readline
    while True:
        line = _behind.popleft() if _behind else readline()
        if not line:
            return 0
        if not line.strip():
            continue
        try:
            answer = _handle(line)
        except Exception as exc:  # noqa: BLE001 - the runner must answer every event
            traceback.print_exc(file=sys.stderr)
            answer = _answer(None, False, exception="runner error: %s" % (_exception_line(exc),))
        if answer is not None:
            _write(answer)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BrokenPipeError, KeyboardInterrupt):
        sys.exit(0)
