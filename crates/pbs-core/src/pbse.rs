//! PBSE error numbers and their canonical messages, as OpenPBS's `pbse_to_txt` gives them.
//!
//! Some messages end in a space on purpose: the server appends the attribute or object
//! name, and OpenPBS clients print the result verbatim (hence `...permission  Resource_List.x`).

use std::fmt;

/// A PBS error number (`PBSE_*`); 0 means success.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pbse(pub u32);

impl Pbse {
    /// 15001: "Unknown Job Id"
    pub const UNKJOBID: Pbse = Pbse(15001);
    /// 15002: "Undefined attribute "
    pub const NOATTR: Pbse = Pbse(15002);
    /// 15003: "Cannot set attribute, read only or insufficient permission "
    pub const ATTRRO: Pbse = Pbse(15003);
    /// 15004: "Invalid request"
    pub const IVALREQ: Pbse = Pbse(15004);
    /// 15005: "Unknown request"
    pub const UNKREQ: Pbse = Pbse(15005);
    /// 15006 (no canonical text)
    pub const TOOMANY: Pbse = Pbse(15006);
    /// 15007: "Unauthorized Request "
    pub const PERM: Pbse = Pbse(15007);
    /// 15008: "Access from host not allowed, or unknown host"
    pub const BADHOST: Pbse = Pbse(15008);
    /// 15009: "Job with requested ID already exists"
    pub const JOBEXIST: Pbse = Pbse(15009);
    /// 15010: "System error: "
    pub const SYSTEM: Pbse = Pbse(15010);
    /// 15011: "PBS server internal error"
    pub const INTERNAL: Pbse = Pbse(15011);
    /// 15012: "Dependent parent job currently in routing queue"
    pub const REGROUTE: Pbse = Pbse(15012);
    /// 15013: "Unknown/illegal signal name"
    pub const UNKSIG: Pbse = Pbse(15013);
    /// 15014: "Illegal attribute or resource value"
    pub const BADATVAL: Pbse = Pbse(15014);
    /// 15015: "Cannot modify attribute while job running "
    pub const MODATRRUN: Pbse = Pbse(15015);
    /// 15016: "Request invalid for state of job"
    pub const BADSTATE: Pbse = Pbse(15016);
    /// 15018: "Unknown queue"
    pub const UNKQUE: Pbse = Pbse(15018);
    /// 15019: "Invalid credential"
    pub const BADCRED: Pbse = Pbse(15019);
    /// 15020: "Expired credential"
    pub const EXPIRED: Pbse = Pbse(15020);
    /// 15021: "Queue is not enabled"
    pub const QUNOENB: Pbse = Pbse(15021);
    /// 15022: "Access to queue is denied"
    pub const QACESS: Pbse = Pbse(15022);
    /// 15023: "Bad UID for job execution"
    pub const BADUSER: Pbse = Pbse(15023);
    /// 15024: "Job routing over too many hops"
    pub const HOPCOUNT: Pbse = Pbse(15024);
    /// 15025: "Queue already exists"
    pub const QUEEXIST: Pbse = Pbse(15025);
    /// 15026: "Incompatible type"
    pub const ATTRTYPE: Pbse = Pbse(15026);
    /// 15027: "Cannot delete busy object"
    pub const OBJBUSY: Pbse = Pbse(15027);
    /// 15028: "Queue name too long"
    pub const QUENBIG: Pbse = Pbse(15028);
    /// 15029: "No support for requested service"
    pub const NOSUP: Pbse = Pbse(15029);
    /// 15030: "Cannot enable queue, incomplete definition"
    pub const QUENOEN: Pbse = Pbse(15030);
    /// 15031: "Batch protocol error"
    pub const PROTOCOL: Pbse = Pbse(15031);
    /// 15032 (no canonical text)
    pub const BADATLST: Pbse = Pbse(15032);
    /// 15033: "No free connections"
    pub const NOCONNECTS: Pbse = Pbse(15033);
    /// 15034: "No server specified"
    pub const NOSERVER: Pbse = Pbse(15034);
    /// 15035: "Unknown resource"
    pub const UNKRESC: Pbse = Pbse(15035);
    /// 15036: "Job violates queue and/or server resource limits"
    pub const EXCQRESC: Pbse = Pbse(15036);
    /// 15037: "No default queue specified"
    pub const QUENODFLT: Pbse = Pbse(15037);
    /// 15038: "job is not rerunnable"
    pub const NORERUN: Pbse = Pbse(15038);
    /// 15039: "Job rejected by all possible destinations"
    pub const ROUTEREJ: Pbse = Pbse(15039);
    /// 15040 (no canonical text)
    pub const ROUTEEXPD: Pbse = Pbse(15040);
    /// 15041: "Execution server rejected request"
    pub const MOMREJECT: Pbse = Pbse(15041);
    /// 15042 (no canonical text)
    pub const BADSCRIPT: Pbse = Pbse(15042);
    /// 15043: "Stage In of files failed"
    pub const STAGEIN: Pbse = Pbse(15043);
    /// 15044: "Resource temporarily unavailable"
    pub const RESCUNAV: Pbse = Pbse(15044);
    /// 15045: "Bad GID for job execution"
    pub const BADGRP: Pbse = Pbse(15045);
    /// 15046: "Maximum number of jobs already in queue"
    pub const MAXQUED: Pbse = Pbse(15046);
    /// 15047: "Checkpoint busy, may retry"
    pub const CKPBSY: Pbse = Pbse(15047);
    /// 15048: "Resource limit exceeds allowable"
    pub const EXLIMIT: Pbse = Pbse(15048);
    /// 15049: "Invalid Account"
    pub const BADACCT: Pbse = Pbse(15049);
    /// 15050 (no canonical text)
    pub const ALRDYEXIT: Pbse = Pbse(15050);
    /// 15051 (no canonical text)
    pub const NOCOPYFILE: Pbse = Pbse(15051);
    /// 15052 (no canonical text)
    pub const CLEANEDOUT: Pbse = Pbse(15052);
    /// 15053: "No master found for sync job set"
    pub const NOSYNCMSTR: Pbse = Pbse(15053);
    /// 15054: "Invalid Job Dependency"
    pub const BADDEPEND: Pbse = Pbse(15054);
    /// 15055: "Duplicate entry in list "
    pub const DUPLIST: Pbse = Pbse(15055);
    /// 15056 (no canonical text)
    pub const DISPROTO: Pbse = Pbse(15056);
    /// 15057: "Cannot execute at specified host because of checkpoint or stagein files"
    pub const EXECTHERE: Pbse = Pbse(15057);
    /// 15058 (no canonical text)
    pub const SISREJECT: Pbse = Pbse(15058);
    /// 15059 (no canonical text)
    pub const SISCOMM: Pbse = Pbse(15059);
    /// 15060: "Request not allowed: Server shutting down"
    pub const SVRDOWN: Pbse = Pbse(15060);
    /// 15061 (no canonical text)
    pub const CKPSHORT: Pbse = Pbse(15061);
    /// 15062: "Unknown node "
    pub const UNKNODE: Pbse = Pbse(15062);
    /// 15063: "Unknown node-attribute "
    pub const UNKNODEATR: Pbse = Pbse(15063);
    /// 15064: "Server has no node list"
    pub const NONODES: Pbse = Pbse(15064);
    /// 15065: "Node name is too big"
    pub const NODENBIG: Pbse = Pbse(15065);
    /// 15066: "Node name already exists"
    pub const NODEEXIST: Pbse = Pbse(15066);
    /// 15067: "Illegal value for node"
    pub const BADNDATVAL: Pbse = Pbse(15067);
    /// 15068: "Mutually exclusive values for "
    pub const MUTUALEX: Pbse = Pbse(15068);
    /// 15069: "Modification failed for "
    pub const GMODERR: Pbse = Pbse(15069);
    /// 15070: "Server could not connect to MOM"
    pub const NORELYMOM: Pbse = Pbse(15070);
    /// 15071: "No time-share node available"
    pub const NOTSNODE: Pbse = Pbse(15071);
    /// 15075: "Reservation needs walltime"
    pub const RESV_NO_WALLTIME: Pbse = Pbse(15075);
    /// 15076: "not a reservation job"
    pub const JOBNOTRESV: Pbse = Pbse(15076);
    /// 15077: "too late for reservation"
    pub const TOOLATE: Pbse = Pbse(15077);
    /// 15078: "internal reservation-system error"
    pub const IRESVE: Pbse = Pbse(15078);
    /// 15080: "Reservation with requested ID already exists"
    pub const RESVEXIST: Pbse = Pbse(15080);
    /// 15081: "reservation failure"
    pub const RESVFAIL: Pbse = Pbse(15081);
    /// 15082: "batch request generation failed"
    pub const GENBATCHREQ: Pbse = Pbse(15082);
    /// 15083: "mgr batch request failed"
    pub const MGRBATCHREQ: Pbse = Pbse(15083);
    /// 15084: "Unknown Reservation Id"
    pub const UNKRESVID: Pbse = Pbse(15084);
    /// 15085: "Delete already in progress"
    pub const DELPROGRESS: Pbse = Pbse(15085);
    /// 15086: "Bad time specification(s)"
    pub const BADTSPEC: Pbse = Pbse(15086);
    /// 15087 (no canonical text)
    pub const RESVMSG: Pbse = Pbse(15087);
    /// 15088: "not a reservation"
    pub const NOTRESV: Pbse = Pbse(15088);
    /// 15089: "node(s) specification error"
    pub const BADNODESPEC: Pbse = Pbse(15089);
    /// 15090 (no canonical text)
    pub const UNUSED1: Pbse = Pbse(15090);
    /// 15091: "PBS license is invalid"
    pub const LICENSEINV: Pbse = Pbse(15091);
    /// 15092: "Host machine not authorized to submit reservations"
    pub const RESVAUTH_H: Pbse = Pbse(15092);
    /// 15093: "Requestor's group not authorized to submit reservations"
    pub const RESVAUTH_G: Pbse = Pbse(15093);
    /// 15094: "Requestor not authorized to make reservations"
    pub const RESVAUTH_U: Pbse = Pbse(15094);
    /// 15095: "Bad effective UID for reservation"
    pub const R_UID: Pbse = Pbse(15095);
    /// 15096: "Bad effective GID for reservation"
    pub const R_GID: Pbse = Pbse(15096);
    /// 15097 (no canonical text)
    pub const IBMSPSWITCH: Pbse = Pbse(15097);
    /// 15098 (no canonical text)
    pub const UNUSED2: Pbse = Pbse(15098);
    /// 15099: "Could not contact Scheduler"
    pub const NOSCHEDULER: Pbse = Pbse(15099);
    /// 15100: "Resource is not of type string or array_of_strings"
    pub const RESCNOTSTR: Pbse = Pbse(15100);
    /// 15107: "Array job exceeds server or queue size limit"
    pub const MAXARRAYSIZE: Pbse = Pbse(15107);
    /// 15108: "Resource invalid in "select" specification"
    pub const INVALSELECTRESC: Pbse = Pbse(15108);
    /// 15109: ""-lresource=" cannot be used with "select" or "place", resource is"
    pub const INVALJOBRESC: Pbse = Pbse(15109);
    /// 15110: "Cannot be used with select or place"
    pub const INVALNODEPLACE: Pbse = Pbse(15110);
    /// 15111: "Cannot have "place" without "select""
    pub const PLACENOSELECT: Pbse = Pbse(15111);
    /// 15112: "invalid multi-level indirect reference for resource"
    pub const INDIRECTHOP: Pbse = Pbse(15112);
    /// 15113: "indirect target undefined on node for resource"
    pub const INDIRECTBT: Pbse = Pbse(15113);
    /// 15115: "Cannot change state of stale node"
    pub const NODESTALE: Pbse = Pbse(15115);
    /// 15116: "duplicated resource within a section of a select specification, resource is"
    pub const DUPRESC: Pbse = Pbse(15116);
    /// 15117: "Server connection table full"
    pub const CONNFULL: Pbse = Pbse(15117);
    /// 15118: "pbs_license_min is < 0, or > pbs_license_max"
    pub const LICENSE_MIN_BADVAL: Pbse = Pbse(15118);
    /// 15119: "pbs_license_max is < 0, or < pbs_license_min"
    pub const LICENSE_MAX_BADVAL: Pbse = Pbse(15119);
    /// 15120: "pbs_license_linger_time is <= 0"
    pub const LICENSE_LINGER_BADVAL: Pbse = Pbse(15120);
    /// 15121 (no canonical text)
    pub const UNUSED3: Pbse = Pbse(15121);
    /// 15122 (no canonical text)
    pub const UNUSED4: Pbse = Pbse(15122);
    /// 15123: "Invalid Formula Format"
    pub const BAD_FORMULA: Pbse = Pbse(15123);
    /// 15124: "Formula contains invalid keyword"
    pub const BAD_FORMULA_KW: Pbse = Pbse(15124);
    /// 15125: "Formula contains a resource of an invalid type"
    pub const BAD_FORMULA_TYPE: Pbse = Pbse(15125);
    /// 15126: "YEARLY recurrence duration cannot exceed 1 year"
    pub const BAD_RRULE_YEARLY: Pbse = Pbse(15126);
    /// 15127: "MONTHLY recurrence duration cannot exceed 1 month"
    pub const BAD_RRULE_MONTHLY: Pbse = Pbse(15127);
    /// 15128: "WEEKLY recurrence duration cannot exceed 1 week"
    pub const BAD_RRULE_WEEKLY: Pbse = Pbse(15128);
    /// 15129: "DAILY recurrence duration cannot exceed 24 hours"
    pub const BAD_RRULE_DAILY: Pbse = Pbse(15129);
    /// 15130: "HOURLY recurrence duration cannot exceed 1 hour"
    pub const BAD_RRULE_HOURLY: Pbse = Pbse(15130);
    /// 15131: "MINUTELY recurrence duration cannot exceed 1 minute"
    pub const BAD_RRULE_MINUTELY: Pbse = Pbse(15131);
    /// 15132: "SECONDLY recurrence duration cannot exceed 1 second"
    pub const BAD_RRULE_SECONDLY: Pbse = Pbse(15132);
    /// 15133: "Undefined iCalendar syntax"
    pub const BAD_RRULE_SYNTAX: Pbse = Pbse(15133);
    /// 15134: "Undefined iCalendar syntax. A valid COUNT or UNTIL is required"
    pub const BAD_RRULE_SYNTAX2: Pbse = Pbse(15134);
    /// 15135: "Unrecognized PBS_TZID environment variable"
    pub const BAD_ICAL_TZ: Pbse = Pbse(15135);
    /// 15136: "hook error"
    pub const HOOKERROR: Pbse = Pbse(15136);
    /// 15137: "Queue type must be set"
    pub const NEEDQUET: Pbse = Pbse(15137);
    /// 15138: "Cannot set attribute when eligible_time_enable is OFF"
    pub const ETEERROR: Pbse = Pbse(15138);
    /// 15139: "Job has finished"
    pub const HISTJOBID: Pbse = Pbse(15139);
    /// 15140: "PBS is not configured to maintain job history"
    pub const JOBHISTNOTSET: Pbse = Pbse(15140);
    /// 15141: "Cannot mix old and new style queue/run limit enforcement types"
    pub const MIXENTLIMS: Pbse = Pbse(15141);
    /// 15142 (no canonical text)
    pub const ENTLIMCT: Pbse = Pbse(15142);
    /// 15143 (no canonical text)
    pub const ENTLIMRESC: Pbse = Pbse(15143);
    /// 15144: "attribute value is out of range"
    pub const ATVALERANGE: Pbse = Pbse(15144);
    /// 15145: "Cannot set provisioning attribute on host running PBS server and scheduler"
    pub const PROV_HEADERROR: Pbse = Pbse(15145);
    /// 15146: "Cannot modify attribute while vnode is provisioning"
    pub const NODEPROV_NOACTION: Pbse = Pbse(15146);
    /// 15147: "Cannot change state of provisioning vnode"
    pub const NODEPROV: Pbse = Pbse(15147);
    /// 15148: "Cannot delete vnode if vnode is provisioning"
    pub const NODEPROV_NODEL: Pbse = Pbse(15148);
    /// 15149: "Current AOE does not match with resources_available.aoe"
    pub const NODE_BAD_CURRENT_AOE: Pbse = Pbse(15149);
    /// 15153: "Local host does not have loopback interface configured or pingable."
    pub const NOLOOPBACKIF: Pbse = Pbse(15153);
    /// 15155: "Invalid provisioning request in chunk(s)"
    pub const IVAL_AOECHUNK: Pbse = Pbse(15155);
    /// 15156: "job and reservation have conflicting specification"
    pub const JOBINRESV_CONFLICT: Pbse = Pbse(15156);
    /// 15157: "Cannot run job which was altered/moved during current scheduling cycle."
    pub const NORUNALTEREDJOB: Pbse = Pbse(15157);
    /// 15158 (no canonical text)
    pub const HISTJOBDELETED: Pbse = Pbse(15158);
    /// 15159: "Request invalid for finished array subjob"
    pub const NOHISTARRAYSUBJOB: Pbse = Pbse(15159);
    /// 15160: "force a qsub update"
    pub const FORCE_QSUB_UPDATE: Pbse = Pbse(15160);
    /// 15161: "Failed to save job/resv, refer server logs for details"
    pub const SAVE_ERR: Pbse = Pbse(15161);
    /// 15162: "Cannot have "max_walltime" without "min_walltime""
    pub const MAX_NO_MINWT: Pbse = Pbse(15162);
    /// 15163: ""min_walltime" can not be greater than "max_walltime""
    pub const MIN_GT_MAXWT: Pbse = Pbse(15163);
    /// 15164: ""min_walltime" and "max_walltime" are not valid resources for a reservation"
    pub const NOSTF_RESV: Pbse = Pbse(15164);
    /// 15165: ""min_walltime" and "max_walltime" are not valid resources for a job array"
    pub const NOSTF_JOBARRAY: Pbse = Pbse(15165);
    /// 15166: "Resource limits can not be set for the resource"
    pub const NOLIMIT_RESOURCE: Pbse = Pbse(15166);
    /// 15167: "vnode's parent mom has a pending copy hook or delete hook request"
    pub const MOM_INCOMPLETE_HOOK: Pbse = Pbse(15167);
    /// 15168: "mom not accepting remote hook files or root job scripts"
    pub const MOM_REJECT_ROOT_SCRIPTS: Pbse = Pbse(15168);
    /// 15169: "hook rejected request"
    pub const HOOK_REJECT: Pbse = Pbse(15169);
    /// 15170: "hook rejected request, requiring job to be rerun"
    pub const HOOK_REJECT_RERUNJOB: Pbse = Pbse(15170);
    /// 15171: "hook rejected request, requiring job to be deleted"
    pub const HOOK_REJECT_DELETEJOB: Pbse = Pbse(15171);
    /// 15172: "Invalid object name"
    pub const IVAL_OBJ_NAME: Pbse = Pbse(15172);
    /// 15173: "name is too long"
    pub const JOBNBIG: Pbse = Pbse(15173);
    /// 15174: "Resource busy"
    pub const RESCBUSY: Pbse = Pbse(15174);
    /// 15175: "jobscript size exceeded the jobscript_max_size"
    pub const JOBSCRIPTMAXSIZE: Pbse = Pbse(15175);
    /// 15176: "jobscript max size exceeds 2GB"
    pub const BADJOBSCRIPTMAXSIZE: Pbse = Pbse(15176);
    /// 15177: "Job can not be resumed with the requested resume signal"
    pub const WRONG_RESUME: Pbse = Pbse(15177);
    /// 15178: "Reservation not empty"
    pub const RESV_NOT_EMPTY: Pbse = Pbse(15178);
    /// 15179: "Requested time(s) will interfere with a later occurrence"
    pub const STDG_RESV_OCCR_CONFLICT: Pbse = Pbse(15179);
    /// 15180: "soft_walltime is not supported with Shrink to Fit jobs"
    pub const SOFTWT_STF: Pbse = Pbse(15180);
    /// 15181: "Reservation may not be created from a job already within a reservation"
    pub const RESV_FROM_RESVJOB: Pbse = Pbse(15181);
    /// 15182: "Reservation may not be created from an array job"
    pub const RESV_FROM_ARRJOB: Pbse = Pbse(15182);
    /// 15183: "New select must be made up of a subset of the original chunks"
    pub const SELECT_NOT_SUBSET: Pbse = Pbse(15183);
    /// 15201 (no canonical text)
    pub const RMUNKNOWN: Pbse = Pbse(15201);
    /// 15202 (no canonical text)
    pub const RMBADPARAM: Pbse = Pbse(15202);
    /// 15203 (no canonical text)
    pub const RMNOPARAM: Pbse = Pbse(15203);
    /// 15204 (no canonical text)
    pub const RMEXIST: Pbse = Pbse(15204);
    /// 15205 (no canonical text)
    pub const RMSYSTEM: Pbse = Pbse(15205);
    /// 15206 (no canonical text)
    pub const RMPART: Pbse = Pbse(15206);
    /// 15208 (no canonical text)
    pub const TRYAGAIN: Pbse = Pbse(15208);
    /// 15209 (no canonical text)
    pub const ALPSRELERR: Pbse = Pbse(15209);
    /// 15210: "Job moved to remote server"
    pub const JOB_MOVED: Pbse = Pbse(15210);
    /// 15211: "Scheduler already exists"
    pub const SCHEDEXIST: Pbse = Pbse(15211);
    /// 15212: "Scheduler name is too long"
    pub const SCHED_NAME_BIG: Pbse = Pbse(15212);
    /// 15213: "Unknown Scheduler"
    pub const UNKSCHED: Pbse = Pbse(15213);
    /// 15214: "Can not delete Scheduler"
    pub const SCHED_NO_DEL: Pbse = Pbse(15214);
    /// 15215: "Another scheduler also has same value for its sched_priv directory"
    pub const SCHED_PRIV_EXIST: Pbse = Pbse(15215);
    /// 15216: "Another scheduler also has same value for its sched_log directory"
    pub const SCHED_LOG_EXIST: Pbse = Pbse(15216);
    /// 15217: "Cannot assign a partition to route queue"
    pub const ROUTE_QUE_NO_PARTITION: Pbse = Pbse(15217);
    /// 15218: "Route queues are incompatible with the partition attribute"
    pub const CANNOT_SET_ROUTE_QUE: Pbse = Pbse(15218);
    /// 15219: "Queue %s is not part of partition for node"
    pub const QUE_NOT_IN_PARTITION: Pbse = Pbse(15219);
    /// 15220: "Partition %s is not part of queue for node"
    pub const PARTITION_NOT_IN_QUE: Pbse = Pbse(15220);
    /// 15221: "Invalid partition in queue"
    pub const INVALID_PARTITION_QUE: Pbse = Pbse(15221);
    /// 15222: "Switching ALPS reservation failed"
    pub const ALPS_SWITCH_ERR: Pbse = Pbse(15222);
    /// 15223: "Operation is not permitted on default scheduler"
    pub const SCHED_OP_NOT_PERMITTED: Pbse = Pbse(15223);
    /// 15224: "Partition is already associated with other scheduler"
    pub const SCHED_PARTITION_ALREADY_EXISTS: Pbse = Pbse(15224);
    /// 15225: "Cannot set max_job_sequence_id < 9999999, or > 999999999999"
    pub const INVALID_MAX_JOB_SEQUENCE_ID: Pbse = Pbse(15225);
    /// 15226: "Server's job_sort_formula value is incompatible with sched's"
    pub const SVR_SCHED_JSF_INCOMPAT: Pbse = Pbse(15226);
    /// 15227: "Node is busy"
    pub const NODE_BUSY: Pbse = Pbse(15227);
    /// 15228: "Default partition name is not allowed"
    pub const DEFAULT_PARTITION: Pbse = Pbse(15228);
    /// 15229: "Finished job did not satisfy dependency"
    pub const HISTDEPEND: Pbse = Pbse(15229);
    /// 15230: "Scheduler already connected"
    pub const SCHEDCONNECTED: Pbse = Pbse(15230);
    /// 15231: "Attribute has to be set on an array job"
    pub const NOTARRAY_ATTR: Pbse = Pbse(15231);
    /// 15232: a job of a job set cannot leave this server (this project's code: OpenPBS
    /// never shipped job sets, whose design gave 15211, which OpenPBS later gave
    /// `SCHEDEXIST`).
    pub const MOVE_JOBSET: Pbse = Pbse(15232);
    /// 15233: "a nonexistent job_set specified" (the design's 15212, taken likewise).
    pub const NO_JOBSET: Pbse = Pbse(15233);
    /// 15240: "Consumable resource can only be requested with = operator". Not OpenPBS's:
    /// conditional chunk requests (docs/job-sets.md) gave it a number past OpenPBS's last.
    pub const CONSUMABLE_OP: Pbse = Pbse(15240);
    /// Success.
    pub const NONE: Pbse = Pbse(0);

    /// The canonical message text, if OpenPBS has one for this code.
    pub fn message(self) -> Option<&'static str> {
        let text = match self.0 {
            15001 => "Unknown Job Id",
            15002 => "Undefined attribute ",
            15003 => "Cannot set attribute, read only or insufficient permission ",
            15004 => "Invalid request",
            15005 => "Unknown request",
            15007 => "Unauthorized Request ",
            15008 => "Access from host not allowed, or unknown host",
            15009 => "Job with requested ID already exists",
            15010 => "System error: ",
            15011 => "PBS server internal error",
            15012 => "Dependent parent job currently in routing queue",
            15013 => "Unknown/illegal signal name",
            15014 => "Illegal attribute or resource value",
            15015 => "Cannot modify attribute while job running ",
            15016 => "Request invalid for state of job",
            15018 => "Unknown queue",
            15019 => "Invalid credential",
            15020 => "Expired credential",
            15021 => "Queue is not enabled",
            15022 => "Access to queue is denied",
            15023 => "Bad UID for job execution",
            15024 => "Job routing over too many hops",
            15025 => "Queue already exists",
            15026 => "Incompatible type",
            15027 => "Cannot delete busy object",
            15028 => "Queue name too long",
            15029 => "No support for requested service",
            15030 => "Cannot enable queue, incomplete definition",
            15031 => "Batch protocol error",
            15033 => "No free connections",
            15034 => "No server specified",
            15035 => "Unknown resource",
            15036 => "Job violates queue and/or server resource limits",
            15037 => "No default queue specified",
            15038 => "job is not rerunnable",
            15039 => "Job rejected by all possible destinations",
            15041 => "Execution server rejected request",
            15043 => "Stage In of files failed",
            15044 => "Resource temporarily unavailable",
            15045 => "Bad GID for job execution",
            15046 => "Maximum number of jobs already in queue",
            15047 => "Checkpoint busy, may retry",
            15048 => "Resource limit exceeds allowable",
            15049 => "Invalid Account",
            15053 => "No master found for sync job set",
            15054 => "Invalid Job Dependency",
            15055 => "Duplicate entry in list ",
            15057 => "Cannot execute at specified host because of checkpoint or stagein files",
            15060 => "Request not allowed: Server shutting down",
            15062 => "Unknown node ",
            15063 => "Unknown node-attribute ",
            15064 => "Server has no node list",
            15065 => "Node name is too big",
            15066 => "Node name already exists",
            15067 => "Illegal value for node",
            15068 => "Mutually exclusive values for ",
            15069 => "Modification failed for ",
            15070 => "Server could not connect to MOM",
            15071 => "No time-share node available",
            15075 => "Reservation needs walltime",
            15076 => "not a reservation job",
            15077 => "too late for reservation",
            15078 => "internal reservation-system error",
            15080 => "Reservation with requested ID already exists",
            15081 => "reservation failure",
            15082 => "batch request generation failed",
            15083 => "mgr batch request failed",
            15084 => "Unknown Reservation Id",
            15085 => "Delete already in progress",
            15086 => "Bad time specification(s)",
            15088 => "not a reservation",
            15089 => "node(s) specification error",
            15091 => "PBS license is invalid",
            15092 => "Host machine not authorized to submit reservations",
            15093 => "Requestor's group not authorized to submit reservations",
            15094 => "Requestor not authorized to make reservations",
            15095 => "Bad effective UID for reservation",
            15096 => "Bad effective GID for reservation",
            15099 => "Could not contact Scheduler",
            15100 => "Resource is not of type string or array_of_strings",
            15107 => "Array job exceeds server or queue size limit",
            15108 => r#"Resource invalid in "select" specification"#,
            15109 => r#""-lresource=" cannot be used with "select" or "place", resource is"#,
            15110 => "Cannot be used with select or place",
            15111 => r#"Cannot have "place" without "select""#,
            15112 => "invalid multi-level indirect reference for resource",
            15113 => "indirect target undefined on node for resource",
            15115 => "Cannot change state of stale node",
            15116 => "duplicated resource within a section of a select specification, resource is",
            15117 => "Server connection table full",
            15118 => "pbs_license_min is < 0, or > pbs_license_max",
            15119 => "pbs_license_max is < 0, or < pbs_license_min",
            15120 => "pbs_license_linger_time is <= 0",
            15123 => "Invalid Formula Format",
            15124 => "Formula contains invalid keyword",
            15125 => "Formula contains a resource of an invalid type",
            15126 => "YEARLY recurrence duration cannot exceed 1 year",
            15127 => "MONTHLY recurrence duration cannot exceed 1 month",
            15128 => "WEEKLY recurrence duration cannot exceed 1 week",
            15129 => "DAILY recurrence duration cannot exceed 24 hours",
            15130 => "HOURLY recurrence duration cannot exceed 1 hour",
            15131 => "MINUTELY recurrence duration cannot exceed 1 minute",
            15132 => "SECONDLY recurrence duration cannot exceed 1 second",
            15133 => "Undefined iCalendar syntax",
            15134 => "Undefined iCalendar syntax. A valid COUNT or UNTIL is required",
            15135 => "Unrecognized PBS_TZID environment variable",
            15136 => "hook error",
            15137 => "Queue type must be set",
            15138 => "Cannot set attribute when eligible_time_enable is OFF",
            15139 => "Job has finished",
            15140 => "PBS is not configured to maintain job history",
            15141 => "Cannot mix old and new style queue/run limit enforcement types",
            15144 => "attribute value is out of range",
            15145 => "Cannot set provisioning attribute on host running PBS server and scheduler",
            15146 => "Cannot modify attribute while vnode is provisioning",
            15147 => "Cannot change state of provisioning vnode",
            15148 => "Cannot delete vnode if vnode is provisioning",
            15149 => "Current AOE does not match with resources_available.aoe",
            15153 => "Local host does not have loopback interface configured or pingable.",
            15155 => "Invalid provisioning request in chunk(s)",
            15156 => "job and reservation have conflicting specification",
            15157 => "Cannot run job which was altered/moved during current scheduling cycle.",
            15159 => "Request invalid for finished array subjob",
            15160 => "force a qsub update",
            15161 => "Failed to save job/resv, refer server logs for details",
            15162 => r#"Cannot have "max_walltime" without "min_walltime""#,
            15163 => r#""min_walltime" can not be greater than "max_walltime""#,
            15164 => r#""min_walltime" and "max_walltime" are not valid resources for a reservation"#,
            15165 => r#""min_walltime" and "max_walltime" are not valid resources for a job array"#,
            15166 => "Resource limits can not be set for the resource",
            15167 => "vnode's parent mom has a pending copy hook or delete hook request",
            15168 => "mom not accepting remote hook files or root job scripts",
            15169 => "hook rejected request",
            15170 => "hook rejected request, requiring job to be rerun",
            15171 => "hook rejected request, requiring job to be deleted",
            15172 => "Invalid object name",
            15173 => "name is too long",
            15174 => "Resource busy",
            15175 => "jobscript size exceeded the jobscript_max_size",
            15176 => "jobscript max size exceeds 2GB",
            15177 => "Job can not be resumed with the requested resume signal",
            15178 => "Reservation not empty",
            15179 => "Requested time(s) will interfere with a later occurrence",
            15180 => "soft_walltime is not supported with Shrink to Fit jobs",
            15181 => "Reservation may not be created from a job already within a reservation",
            15182 => "Reservation may not be created from an array job",
            15183 => "New select must be made up of a subset of the original chunks",
            15210 => "Job moved to remote server",
            15211 => "Scheduler already exists",
            15212 => "Scheduler name is too long",
            15213 => "Unknown Scheduler",
            15214 => "Can not delete Scheduler",
            15215 => "Another scheduler also has same value for its sched_priv directory",
            15216 => "Another scheduler also has same value for its sched_log directory",
            15217 => "Cannot assign a partition to route queue",
            15218 => "Route queues are incompatible with the partition attribute",
            15219 => "Queue %s is not part of partition for node",
            15220 => "Partition %s is not part of queue for node",
            15221 => "Invalid partition in queue",
            15222 => "Switching ALPS reservation failed",
            15223 => "Operation is not permitted on default scheduler",
            15224 => "Partition is already associated with other scheduler",
            15225 => "Cannot set max_job_sequence_id < 9999999, or > 999999999999",
            15226 => "Server's job_sort_formula value is incompatible with sched's",
            15227 => "Node is busy",
            15228 => "Default partition name is not allowed",
            15229 => "Finished job did not satisfy dependency",
            15230 => "Scheduler already connected",
            15231 => "Attribute has to be set on an array job",
            15232 => "Job of a job_set can not be moved to another complex",
            15233 => "a nonexistent job_set specified",
            15240 => "Consumable resource can only be requested with = operator",
            _ => return None,
        };
        Some(text)
    }

    /// The low byte of the code: what a command that exits with this error returns.
    pub fn exit_status(self) -> i32 {
        (self.0 & 0xff) as i32
    }

    /// Whether this is the success code.
    pub fn is_ok(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Display for Pbse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.message() {
            Some(text) => f.write_str(text),
            None => write!(f, "Error {}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_exit_status_match_openpbs() {
        assert_eq!(Pbse::UNKJOBID.message(), Some("Unknown Job Id"));
        assert_eq!(Pbse::UNKJOBID.exit_status(), 153);
        assert_eq!(Pbse::ATTRRO.message(), Some("Cannot set attribute, read only or insufficient permission "));
        assert_eq!(Pbse::ATTRRO.exit_status(), 155);
        assert_eq!(Pbse::BADATVAL.exit_status(), 166);
        assert_eq!(Pbse::SOFTWT_STF.exit_status(), 76);
        assert_eq!(Pbse::NOTARRAY_ATTR.exit_status(), 127);
        assert_eq!(Pbse::TOOMANY.message(), None);
        assert_eq!(Pbse::INVALJOBRESC.message().map(|m| m.ends_with("resource is")), Some(true));
    }
}
