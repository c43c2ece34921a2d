"""Events, jobs, resource lists, vnodes and the server as hooks see them, and the state of
the event being run (docs/hooks.md, "The runner protocol").

Values arrive as the server's text and are turned into Python values by the types of the
last `defs` request, lazily, on first read. What a hook sets is recorded so the answer can
carry only what changed, as text.
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
from ._types import duration, job_state, pbs_env, place, select, size

# OpenPBS's hook event numbers (src/include/hook.h).
EVENT_TYPES = {
    "queuejob": 0x01,
    "modifyjob": 0x02,
    "resvsub": 0x04,
    "movejob": 0x08,
    "runjob": 0x10,
    "provision": 0x20,
    "execjob_begin": 0x40,
    "execjob_prologue": 0x80,
    "execjob_epilogue": 0x100,
    "execjob_end": 0x200,
    "execjob_preterm": 0x400,
    "execjob_launch": 0x800,
    "exechost_periodic": 0x1000,
    "exechost_startup": 0x2000,
    "execjob_attach": 0x4000,
    "periodic": 0x8000,
    "resv_end": 0x10000,
    "execjob_resize": 0x20000,
    "execjob_abort": 0x40000,
    "execjob_postsuspend": 0x80000,
    "execjob_preresume": 0x100000,
    "management": 0x200000,
    "modifyvnode": 0x400000,
    "jobobit": 0x800000,
    "resv_begin": 0x1000000,
    "resv_confirm": 0x2000000,
    "modifyresv": 0x4000000,
    "postqueuejob": 0x8000000,
}


class _Defs:
    """Types from the last `defs` request."""

    __slots__ = ("server_name", "job_attrs", "resources", "res_lower", "loaded")

    def __init__(self):
        self.server_name = ""
        self.job_attrs = {}
        self.resources = {}
        self.res_lower = {}
        self.loaded = False


defs = _Defs()


def set_defs(req):
    job_attrs = req.get("job_attrs") or {}
    resources = req.get("resources") or {}
    if not isinstance(job_attrs, dict) or not isinstance(resources, dict):
        raise ValueError("job_attrs and resources must be objects")
    defs.server_name = str(req.get("server_name") or "")
    defs.job_attrs = {str(k): str(v) for k, v in job_attrs.items()}
    defs.resources = {str(k): str(v) for k, v in resources.items()}
    defs.res_lower = {k.lower(): k for k in defs.resources}
    defs.loaded = True


# ---------------------------------------------------------------------------------------
# Conversions


def to_text(value):
    """A value as the text the server reads: bools as True/False, durations as seconds."""
    if value is None:
        return None
    if value is True:
        return "True"
    if value is False:
        return "False"
    if isinstance(value, job_state):
        return value.letter()
    if isinstance(value, duration):
        # Seconds parse to the same value on every reader, whatever form it was made from.
        return str(int(value))
    return str(value)


_TRUE = frozenset(("true", "t", "y", "1"))
_FALSE = frozenset(("false", "f", "n", "0"))


def _to_bool(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if value in (0, 1):
            return bool(value)
        raise ValueError(value)
    if isinstance(value, str):
        v = value.lower()
        if v in _TRUE:
            return True
        if v in _FALSE:
            return False
    raise ValueError(value)


def _to_int(value):
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        return int(value.strip())
    raise TypeError(value)


def _convert(typ, value):
    """A value (text from the server or a hook's value) as the Python value of type `typ`.
    Raises ValueError/TypeError (or the pbs type's own error) when it does not fit."""
    if typ in ("long", "time"):
        return _to_int(value)
    if typ == "float":
        if isinstance(value, (int, float, str)):
            return float(value)
        raise TypeError(value)
    if typ == "boolean":
        return _to_bool(value)
    if typ == "duration":
        if isinstance(value, (int, float, str)):
            return duration(value)
        raise TypeError(value)
    if typ == "size":
        return size(value)
    if typ == "env":
        if isinstance(value, (str, dict)):
            return pbs_env(value)
        raise TypeError(value)
    # string, char, list, string_array, and any type this module does not know: text.
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, size)):
        return str(value)
    raise TypeError(value)


def _attr_value(name, typ, value):
    """A job attribute's value from text or from a hook."""
    if name == "job_state":
        return job_state(value)
    return _convert(typ, value)


def _resource_value(name, typ, value):
    if name == "select":
        return select(value)
    if name == "place":
        return place(value)
    return _convert(typ, value)


def _set_attr_value(name, typ, value):
    try:
        return _attr_value(name, typ, value)
    except (BadAttributeValueError, BadAttributeValueTypeError):
        raise
    except TypeError:
        raise BadAttributeValueTypeError(
            "job attribute '%s' (type %s) cannot take a value of type %s" % (name, typ, type(value).__name__)
        ) from None
    except Exception:
        raise BadAttributeValueError("input value %s not of the right format for '%s'" % (value, name)) from None


def _set_resource_value(name, typ, value):
    try:
        return _resource_value(name, typ, value)
    except (BadResourceValueError, BadResourceValueTypeError):
        raise
    except TypeError:
        raise BadResourceValueTypeError(
            "resource '%s' (type %s) cannot take a value of type %s" % (name, typ, type(value).__name__)
        ) from None
    except Exception:
        raise BadResourceValueError("input value %s not of the right format for '%s'" % (value, name)) from None


def _bad_text(kind, name, text):
    # The daemon sent text its own types say is wrong: a protocol fault, said plainly.
    return BadAttributeValueError("%s '%s' has value %r from the server, not of its type" % (kind, name, text))


# ---------------------------------------------------------------------------------------
# Resource lists


class ResourceList:
    """A resource list attribute (Resource_List, resources_used, resources_available...).

    rl["ncpus"] and rl.ncpus read a resource (None when unset) and set it (None unsets).
    Names are matched without regard to case, as OpenPBS does. A name that is not a
    defined resource raises pbs.UnsetResourceNameError. As in OpenPBS, `"mem" in rl` is
    true for every defined resource, set or not; test the value against None instead.
    """

    __slots__ = ("_attr", "_text", "_cache", "_set", "_ro")

    def __init__(self, attr, text, readonly):
        s = object.__setattr__
        s(self, "_attr", attr)
        canon = {}
        if isinstance(text, dict):
            lower = defs.res_lower
            for k, v in text.items():
                canon[lower.get(k.lower(), k)] = None if v is None else str(v)
        s(self, "_text", canon)
        s(self, "_cache", {})
        s(self, "_set", {})
        s(self, "_ro", readonly)

    def _canon(self, name, setting):
        if not isinstance(name, str):
            raise TypeError("resource names are strings, not %s" % type(name).__name__)
        c = defs.res_lower.get(name.lower())
        if c is not None:
            return c
        if not setting and name in self._text:
            return name
        raise UnsetResourceNameError("resource attribute '%s' not found" % (name,))

    def _get(self, name):
        c = self._canon(name, False)
        cache = self._cache
        if c in cache:
            return cache[c]
        text = self._text.get(c)
        if text is None:
            value = None
        else:
            try:
                value = _resource_value(c, defs.resources.get(c, "string"), text)
            except Exception:
                raise _bad_text("resource", "%s.%s" % (self._attr, c), text) from None
        cache[c] = value
        return value

    def _put(self, name, value):
        if self._ro:
            raise BadResourceValueError("%s is read-only here: cannot set '%s'" % (self._attr, name))
        c = self._canon(name, True)
        if value is not None:
            value = _set_resource_value(c, defs.resources[c], value)
        self._cache[c] = value
        self._set[c] = value

    def __getitem__(self, name):
        return self._get(name)

    def __setitem__(self, name, value):
        self._put(name, value)

    def __delitem__(self, name):
        self._put(name, None)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError("'pbs_resource' object has no attribute '%s'" % (name,))
        return self._get(name)

    def __setattr__(self, name, value):
        self._put(name, value)

    def __delattr__(self, name):
        self._put(name, None)

    def __contains__(self, name):
        try:
            self._canon(name, False)
        except (UnsetResourceNameError, TypeError):
            return False
        return True

    def __iter__(self):
        raise TypeError("a resource list is not iterable: use .keys()")

    def keys(self):
        """The names of the resources that have a value."""
        names = list(self._text)
        names.extend(n for n in self._set if n not in self._text)
        return [n for n in names if self._get(n) is not None]

    def __str__(self):
        out = []
        for n in self.keys():
            v = str(self._get(n))
            if "," in v and '"' not in v:
                out.append('%s="%s"' % (n, v))
            else:
                out.append("%s=%s" % (n, v))
        return ",".join(out)

    __repr__ = __str__

    def _changes(self):
        out = {}
        orig = self._text
        for c, v in self._set.items():
            t = to_text(v)
            if t != orig.get(c):
                out[c] = t
        return out


# ---------------------------------------------------------------------------------------
# Jobs


def _unsupported(what):
    def method(self, *args, **kwargs):
        raise NotImplementedError("job.%s() is not supported by this PBS's hooks" % (what,))

    method.__name__ = what
    return method


class Job:
    """A job as a hook sees it: attributes by their OpenPBS names, typed.

    An attribute without a value reads as None; a name that is not a job attribute raises
    pbs.UnsetAttributeNameError, on reading and on setting. Setting None unsets.
    """

    __slots__ = ("_id", "_text", "_cache", "_set", "_ro", "_what")

    def __init__(self, data, readonly=False, what="job"):
        s = object.__setattr__
        if not isinstance(data, dict):
            raise ValueError("a job must be an object")
        jid = data.get("id")
        attrs = data.get("attrs") or {}
        if not isinstance(attrs, dict):
            raise ValueError("a job's attrs must be an object")
        s(self, "_id", None if jid is None else str(jid))
        s(self, "_text", attrs)
        s(self, "_cache", {})
        s(self, "_set", {})
        s(self, "_ro", readonly)
        s(self, "_what", what)

    @property
    def id(self):
        return self._id

    def __str__(self):
        return str(self._id)

    def __repr__(self):
        return "<pbs job %s>" % (self._id,)

    def __getattr__(self, name):
        typ = defs.job_attrs.get(name)
        if typ is None:
            if name.startswith("__"):
                raise AttributeError(name)
            text = self._text.get(name)
            if isinstance(text, str):
                # Sent by the daemon but not in its defs: readable as text.
                return text
            raise UnsetAttributeNameError("job attribute '%s' not found" % (name,))
        cache = self._cache
        if name in cache:
            return cache[name]
        text = self._text.get(name)
        if typ == "resources":
            value = ResourceList(name, text, self._ro)
        elif text is None:
            value = None
        else:
            try:
                value = _attr_value(name, typ, text)
            except Exception:
                raise _bad_text("job attribute", name, text) from None
        cache[name] = value
        return value

    def __setattr__(self, name, value):
        if self._ro:
            raise BadAttributeValueError("%s is read-only: cannot set '%s'" % (self._what, name))
        if name == "id":
            raise BadAttributeValueError("job attribute 'id' is readonly")
        typ = defs.job_attrs.get(name)
        if typ is None:
            raise UnsetAttributeNameError("job attribute '%s' not found" % (name,))
        if typ == "resources":
            raise BadAttributeValueTypeError(
                "job attribute '%s' is a resource list: set its resources one by one, "
                "job.%s['name'] = value" % (name, name)
            )
        if value is not None:
            value = _set_attr_value(name, typ, value)
        self._cache[name] = value
        self._set[name] = value

    def __delattr__(self, name):
        self.__setattr__(name, None)

    rerun = _unsupported("rerun")
    delete = _unsupported("delete")
    is_checkpointed = _unsupported("is_checkpointed")
    in_ms_mom = _unsupported("in_ms_mom")
    stdout_file = _unsupported("stdout_file")
    stderr_file = _unsupported("stderr_file")
    release_nodes = _unsupported("release_nodes")

    def _changes(self):
        """What the hook changed: attribute to text (None = unset); a resource list to its
        changed resources."""
        out = {}
        orig = self._text
        for name, v in self._set.items():
            t = to_text(v)
            if t != orig.get(name):
                out[name] = t
        for name, v in self._cache.items():
            if isinstance(v, ResourceList):
                ch = v._changes()
                if ch:
                    out[name] = ch
            elif isinstance(v, pbs_env) and name not in self._set:
                # Changed in place: e.job.Variable_List["X"] = "1".
                t = str(v)
                if t != orig.get(name):
                    out[name] = t
        return out


# ---------------------------------------------------------------------------------------
# Vnodes (read-only here: the protocol carries no vnode changes back)

# OpenPBS's vnode attribute names, which read as None when the daemon sent no value.
_VNODE_ATTRS = frozenset(
    (
        "Mom",
        "Port",
        "pbs_version",
        "ntype",
        "state",
        "pcpus",
        "jobs",
        "resources_available",
        "resources_assigned",
        "comment",
        "resv_enable",
        "sharing",
        "queue",
        "priority",
        "last_state_change_time",
        "last_used_time",
        "resv",
        "no_multinode_jobs",
        "partition",
        "current_aoe",
        "current_eoe",
        "in_multivnode_host",
        "maintenance_jobs",
        "provision_enable",
        "power_provisioning",
        "poweroff_eligible",
        "topology_info",
        "vnode_pool",
        "license",
        "lictype",
        "pnames",
    )
)


class Vnode:
    """A vnode of a mom event's vnode_list: name and attributes as the daemon's text;
    resource lists (resources_available, resources_assigned) typed like a job's."""

    __slots__ = ("_name", "_text", "_cache")

    def __init__(self, name, attrs):
        s = object.__setattr__
        s(self, "_name", str(name))
        text = {}
        for key, value in (attrs if isinstance(attrs, dict) else {}).items():
            attr, dot, resource = key.partition(".")
            if dot:
                # "resources_available.ncpus": "2", as a resource list.
                text.setdefault(attr, {})[resource] = value
            else:
                text[key] = value
        s(self, "_text", text)
        s(self, "_cache", {})

    @property
    def name(self):
        return self._name

    def __str__(self):
        return self._name

    def __getattr__(self, name):
        if name in self._cache:
            return self._cache[name]
        text = self._text.get(name)
        if isinstance(text, dict) or (text is None and name.startswith("resources_") and name in _VNODE_ATTRS):
            value = ResourceList(name, text, True)
        elif text is not None:
            value = str(text)
        elif name in _VNODE_ATTRS:
            value = None
        else:
            if name.startswith("__"):
                raise AttributeError(name)
            raise UnsetAttributeNameError("vnode attribute '%s' not found" % (name,))
        self._cache[name] = value
        return value

    def __setattr__(self, name, value):
        raise BadAttributeValueError(
            "vnode '%s': changing vnode attributes ('%s') is not supported by this PBS's hooks" % (self._name, name)
        )


# ---------------------------------------------------------------------------------------
# The server


def query(request):
    """Asks the daemon something while a hook runs (set by the runner): a dict in, the
    daemon's reply (a dict) out."""
    raise RuntimeError("no daemon to ask: pbs.server() queries need the hook runner")


def _periodic_only(what):
    return NotImplementedError(
        "pbs.server().%s is available in periodic hooks only (this PBS gives other hooks no access to other jobs)"
        % (what,)
    )


class Server:
    """pbs.server(): its name; in a periodic hook, the jobs it may read and change.

    The jobs come with the event (its `jobs`), or, when the event carries none, are asked
    of the daemon while the hook runs: `.job(id)` one job, `.jobs()` page by page.
    """

    __slots__ = ("_jobs", "_live", "_attrs")

    def __init__(self, jobs, live):
        object.__setattr__(self, "_jobs", jobs)
        object.__setattr__(self, "_live", live)
        object.__setattr__(self, "_attrs", None)

    @property
    def name(self):
        return defs.server_name

    def __str__(self):
        return defs.server_name

    def _known(self, data):
        """The Job of `data` from a query, the same object when the hook has it already."""
        j = Job(data)
        if j._id is None:
            raise RuntimeError("the daemon answered a query with a job without an id")
        return self._jobs.setdefault(j._id, j)

    def job(self, jobid):
        """The job `jobid` ("12" or "12.server"), None when there is no such job."""
        if self._jobs is None:
            raise _periodic_only("job()")
        jobid = str(jobid)
        if "." not in jobid and defs.server_name:
            jobid = jobid + "." + defs.server_name
        j = self._jobs.get(jobid)
        if j is not None or not self._live:
            return j
        found = query({"what": "job", "job_id": jobid}).get("jobs") or []
        return self._known(found[0]) if found else None

    def jobs(self):
        """An iterator over the server's jobs."""
        if self._jobs is None:
            raise _periodic_only("jobs()")
        if not self._live:
            return iter(list(self._jobs.values()))
        return self._pages()

    def _pages(self):
        after = None
        while True:
            reply = query({"what": "jobs", "after": after})
            page = reply.get("jobs") or []
            for data in page:
                j = self._known(data)
                after = j._id
                yield j
            if not page or not reply.get("more"):
                return

    def scheduler_restart_cycle(self):
        """Ask the scheduler for a new cycle once this hook has run (unless it raised or
        ran past its alarm), as OpenPBS's does."""
        ev = current.event
        if ev is not None:
            object.__setattr__(ev, "_restart_cycle", True)

    def queue(self, name):
        """The queue `name` (its attributes, read-only), None when there is no such queue."""
        found = query({"what": "queue", "name": str(name)}).get("object")
        return ServerObject(found.get("name", name), found.get("attrs")) if isinstance(found, dict) else None

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in ("vnode", "vnodes", "resv", "resvs", "queues"):
            raise NotImplementedError(
                "pbs.server().%s: vnodes, reservations and queue lists are not available to hooks in this PBS"
                % (name,)
            )
        if self._attrs is None:
            found = query({"what": "server"}).get("object")
            attrs = ServerObject(defs.server_name, found.get("attrs") if isinstance(found, dict) else {})
            object.__setattr__(self, "_attrs", attrs)
        return getattr(self._attrs, name)

    def __setattr__(self, name, value):
        raise BadAttributeValueError("server attribute '%s' cannot be set from a hook" % (name,))


class ServerObject(Vnode):
    """The server's or a queue's attributes as a hook reads them: text, resource lists
    (resources_max, resources_default...) typed like a job's; unset ones read as None."""

    __slots__ = ()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self._cache:
            return self._cache[name]
        text = self._text.get(name)
        if isinstance(text, dict):
            value = ResourceList(name, text, True)
        else:
            value = None if text is None else str(text)
        self._cache[name] = value
        return value

    def __setattr__(self, name, value):
        raise BadAttributeValueError("'%s': server and queue attributes cannot be set from a hook" % (name,))


# ---------------------------------------------------------------------------------------
# Events

_EVENT_FIELDS = frozenset(("type", "hook_name", "hook_type", "requestor", "requestor_host", "freq", "alarm"))


class Event:
    """pbs.event(): the event the hook runs for."""

    __slots__ = (
        "type",
        "hook_name",
        "hook_type",
        "requestor",
        "requestor_host",
        "freq",
        "alarm",
        "_type_name",
        "_params",
        "_rejected",
        "_reject_msg",
        "_server",
        "_restart_cycle",
    )

    def __init__(self, req, type_name):
        s = object.__setattr__
        s(self, "type", EVENT_TYPES[type_name])
        s(self, "_type_name", type_name)
        s(self, "hook_name", str(req.get("hook") or ""))
        s(self, "hook_type", "site")
        s(self, "requestor", req.get("requestor"))
        s(self, "requestor_host", req.get("requestor_host"))
        s(self, "freq", req.get("freq"))
        s(self, "alarm", req.get("alarm"))
        s(self, "_rejected", False)
        s(self, "_reject_msg", None)
        s(self, "_restart_cycle", False)
        params = {}
        job = req.get("job")
        if job is not None:
            params["job"] = Job(job)
        job_o = req.get("job_o")
        if job_o is not None:
            params["job_o"] = Job(job_o, readonly=True, what="job_o")
        vnodes = req.get("vnodes")
        if vnodes is not None:
            if not isinstance(vnodes, dict):
                raise ValueError("vnodes must be an object")
            params["vnode_list"] = {str(n): Vnode(n, a) for n, a in vnodes.items()}
        s(self, "_params", params)
        jobs = req.get("jobs")
        if jobs is not None:
            if not isinstance(jobs, list):
                raise ValueError("jobs must be a list")
            by_id = {}
            for data in jobs:
                j = Job(data)
                if j._id is None:
                    raise ValueError("a job of 'jobs' has no id")
                by_id[j._id] = j
            s(self, "_server", Server(by_id, False))
        elif type_name == "periodic":
            s(self, "_server", Server({}, True))
        else:
            s(self, "_server", Server(None, False))

    def accept(self, ecode=0):
        """End the hook; the request goes ahead."""
        object.__setattr__(self, "_rejected", False)
        raise SystemExit(str(ecode))

    def reject(self, emsg="", ecode=255):
        """End the hook; the request is refused with `emsg` as its message."""
        object.__setattr__(self, "_rejected", True)
        object.__setattr__(self, "_reject_msg", str(emsg) if emsg else None)
        raise SystemExit(str(ecode))

    def __getattr__(self, name):
        try:
            return self._params[name]
        except KeyError:
            pass
        if name.startswith("__"):
            raise AttributeError(name)
        raise EventIncompatibleError(
            'event attribute "%s" is not available in a %s event' % (name, self._type_name)
        ) from None

    def __setattr__(self, name, value):
        if name in _EVENT_FIELDS or name in self._params:
            raise BadAttributeValueError("event attribute '%s' is readonly" % (name,))
        raise UnsetAttributeNameError("event attribute '%s' not found" % (name,))

    def _changes(self):
        """(job changes or None, jobs changes) for the answer."""
        job = self._params.get("job")
        job_changes = None if job is None else job._changes()
        jobs = {}
        if self._server._jobs is not None:
            for jid, j in self._server._jobs.items():
                ch = j._changes()
                if ch:
                    jobs[jid] = ch
        return job_changes, jobs


# ---------------------------------------------------------------------------------------
# The event being run


class _Current:
    __slots__ = ("event", "log")

    def __init__(self):
        self.event = None
        self.log = []


current = _Current()


def begin(req, type_name):
    """Make the event of an `event` request current; returns it."""
    ev = Event(req, type_name)
    current.event = ev
    current.log = []
    return ev


def end():
    """Forget the current event; returns (event, log)."""
    ev, log = current.event, current.log
    current.event = None
    current.log = []
    return ev, log
