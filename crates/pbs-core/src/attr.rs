//! Attribute tables of every object (job, queue, server, node, scheduler, resource, hook):
//! names, value types, display order and who may read and write each one.
//!
//! The order of each table is the order OpenPBS reports attributes in (`qstat -f`,
//! `qmgr list`), so status replies simply walk the table.

use std::fmt;
use std::sync::OnceLock;

/// The three privilege levels of OpenPBS, ordered so `>=` means "at least".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Privilege {
    /// An ordinary user: owns their jobs.
    User,
    /// Listed in the server's `operators`.
    Operator,
    /// root on the server host, or listed in `managers`.
    Manager,
}

/// Which kind of object an attribute belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObjectKind {
    /// A job.
    Job,
    /// A queue.
    Queue,
    /// The server.
    Server,
    /// An execution node (vnode).
    Node,
    /// A scheduler object.
    Sched,
    /// A resource definition.
    Resource,
    /// A hook.
    Hook,
}

impl ObjectKind {
    /// The word qmgr uses for the object (`server`, `queue`, ...).
    pub fn qmgr_name(self) -> &'static str {
        match self {
            ObjectKind::Job => "job",
            ObjectKind::Queue => "queue",
            ObjectKind::Server => "server",
            ObjectKind::Node => "node",
            ObjectKind::Sched => "sched",
            ObjectKind::Resource => "resource",
            ObjectKind::Hook => "hook",
        }
    }

    /// The attribute table of this kind of object.
    pub const fn attributes(self) -> &'static [AttrDef] {
        match self {
            ObjectKind::Job => JOB_ATTRS,
            ObjectKind::Queue => QUEUE_ATTRS,
            ObjectKind::Server => SERVER_ATTRS,
            ObjectKind::Node => NODE_ATTRS,
            ObjectKind::Sched => SCHED_ATTRS,
            ObjectKind::Resource => RESOURCE_ATTRS,
            ObjectKind::Hook => HOOK_ATTRS,
        }
    }

    /// The table index of an attribute spelled exactly as the table spells it, for names
    /// fixed in the code: `const { ObjectKind::Job.index_of("Job_Name") }` costs nothing at
    /// run time, and a misspelt name does not compile.
    pub const fn index_of(self, name: &str) -> u8 {
        let table = self.attributes();
        let mut index = 0;
        while index < table.len() {
            if const_str_eq(table[index].name, name) {
                assert!(index <= u8::MAX as usize, "attribute index beyond a byte");
                return index as u8;
            }
            index += 1;
        }
        panic!("no such attribute in this table");
    }

    /// Looks an attribute up by name; names are case-insensitive as in OpenPBS.
    pub fn find(self, name: &str) -> Option<(usize, &'static AttrDef)> {
        let table = self.attributes();
        // Exactly spelled names (nearly all of them) by hash; other spellings by scan.
        if let Some(&index) = self.index().get(name) {
            return Some((index, &table[index]));
        }
        table.iter().enumerate().find(|(_, def)| def.name.eq_ignore_ascii_case(name))
    }

    /// `name` (`base` or `base.resource`) with its base in the table's spelling, as every
    /// reader of a request takes it (names match in any case); a name the table does not
    /// know is given back as it is.
    pub fn canonical_name(self, name: &str) -> std::borrow::Cow<'_, str> {
        use std::borrow::Cow;
        let (base, resource) = split_name(name);
        match self.find(base) {
            Some((_, def)) if def.name != base => match resource {
                Some(resource) => Cow::Owned(format!("{}.{resource}", def.name)),
                None => Cow::Borrowed(def.name),
            },
            _ => Cow::Borrowed(name),
        }
    }

    /// Hashed with foldhash, not SipHash: every attribute name a client sends is looked up
    /// here, and the keys are the fixed table, so there is nothing to flood.
    fn index(self) -> &'static foldhash::HashMap<&'static str, usize> {
        static INDEXES: [OnceLock<foldhash::HashMap<&'static str, usize>>; 8] = [const { OnceLock::new() }; 8];
        INDEXES[self as usize]
            .get_or_init(|| self.attributes().iter().enumerate().map(|(i, def)| (def.name, i)).collect())
    }
}

const fn const_str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.qmgr_name())
    }
}

/// How an attribute's value is encoded and validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrType {
    /// Free text.
    Str,
    /// A signed integer.
    Long,
    /// A floating point number.
    Float,
    /// `True`/`False`.
    Bool,
    /// A point in time: seconds since the epoch on the wire, shown in ctime(3) form by qstat.
    Time,
    /// A duration, `HH:MM:SS`.
    Duration,
    /// A size such as `4gb`.
    Size,
    /// One letter, such as `job_state`.
    Char,
    /// A list of `resource=value` entries (`Resource_List.ncpus`); each resource is its own
    /// name on the wire (`Resource_List.ncpus`).
    Resources,
    /// A comma-separated list (ACLs, `managers`, `group_list`).
    List,
    /// Environment variables (`Variable_List`).
    Env,
}

/// Who may write an attribute, beyond the read-only ones the server alone sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Write {
    /// Only the server (or daemons) set it.
    ReadOnly,
    /// Anyone at or above this privilege may set it.
    AtLeast(Privilege),
}

/// One attribute definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttrDef {
    /// The attribute name as OpenPBS spells it.
    pub name: &'static str,
    /// Value type.
    pub atype: AttrType,
    /// The lowest privilege that may see it.
    pub read: Privilege,
    /// Who may set it.
    pub write: Write,
    /// May be altered while the job runs (jobs only).
    pub alter_running: bool,
}

impl AttrDef {
    /// Whether a client at `level` may set this attribute.
    pub fn writable_by(&self, level: Privilege) -> bool {
        matches!(self.write, Write::AtLeast(min) if level >= min)
    }

    /// Whether only a submission may set it: OpenPBS's `ATR_DFLAG_Creat` job attributes
    /// that have no write flag (`array_indices_submitted`, `array`, `interactive`,
    /// `block`), refused to every qalter, a manager's too.
    pub fn create_only(&self) -> bool {
        matches!(self.name, "array_indices_submitted" | "array" | "interactive" | "block")
    }

    /// Whether a client at `level` may see this attribute.
    pub fn readable_by(&self, level: Privilege) -> bool {
        level >= self.read
    }
}

use AttrType as T;
use Privilege::{Manager as M, Operator as O, User as U};
use Write::{AtLeast, ReadOnly as RO};

const fn def(name: &'static str, atype: AttrType, read: Privilege, write: Write) -> AttrDef {
    AttrDef { name, atype, read, write, alter_running: false }
}

const fn run(name: &'static str, atype: AttrType, read: Privilege, write: Write) -> AttrDef {
    AttrDef { name, atype, read, write, alter_running: true }
}

const UW: Write = AtLeast(U);
const OW: Write = AtLeast(O);
const MW: Write = AtLeast(M);

/// Job attributes in OpenPBS's report order (`master_job_attr_def.xml`).
pub static JOB_ATTRS: &[AttrDef] = &[
    run("Job_Name", T::Str, U, UW),
    def("Job_Owner", T::Str, U, RO),
    def("resources_used", T::Resources, U, RO),
    def("job_state", T::Char, U, RO),
    def("queue", T::Str, U, RO),
    def("server", T::Str, U, RO),
    def("Account_Name", T::Str, U, UW),
    def("Checkpoint", T::Str, U, UW),
    def("ctime", T::Time, U, RO),
    def("depend", T::Str, U, UW),
    def("Error_Path", T::Str, U, UW),
    def("exec_host", T::Str, U, RO),
    def("exec_vnode", T::Str, U, RO),
    def("Execution_Time", T::Time, U, UW),
    def("group_list", T::List, U, UW),
    def("Hold_Types", T::Str, U, UW),
    def("interactive", T::Bool, U, UW),
    def("Join_Path", T::Str, U, UW),
    def("Keep_Files", T::Str, U, UW),
    def("Mail_Points", T::Str, U, UW),
    def("Mail_Users", T::List, U, UW),
    def("mtime", T::Time, U, RO),
    def("no_stdio_sockets", T::Bool, U, UW),
    def("Output_Path", T::Str, U, UW),
    run("Priority", T::Long, U, UW),
    def("qtime", T::Time, U, RO),
    def("Remove_Files", T::Str, U, UW),
    run("Rerunable", T::Bool, U, UW),
    run("Resource_List", T::Resources, U, UW),
    def("schedselect", T::Str, M, RO),
    def("stime", T::Time, U, RO),
    def("obittime", T::Time, U, RO),
    def("session_id", T::Long, U, RO),
    def("Shell_Path_List", T::List, U, UW),
    def("sandbox", T::Str, U, UW),
    def("jobdir", T::Str, U, RO),
    def("stagein", T::List, U, UW),
    def("stageout", T::List, U, UW),
    def("substate", T::Long, U, RO),
    def("User_List", T::List, U, UW),
    def("Variable_List", T::Env, U, UW),
    def("euser", T::Str, M, RO),
    def("egroup", T::Str, M, RO),
    def("hashname", T::Str, M, RO),
    def("hop_count", T::Long, M, RO),
    def("queue_rank", T::Long, M, RO),
    def("queue_type", T::Char, M, RO),
    run("comment", T::Str, U, OW),
    def("alt_id", T::Str, U, RO),
    def("etime", T::Time, U, RO),
    def("reserve_ID", T::Str, U, RO),
    def("umask", T::Long, U, UW),
    def("block", T::Bool, U, UW),
    def("run_count", T::Long, U, UW),
    def("accounting_id", T::Str, U, RO),
    // Managers alone set it (OpenPBS lets operators too; see docs/architecture.md).
    run("eligible_time", T::Duration, U, MW),
    def("accrue_type", T::Long, M, RO),
    def("Stageout_status", T::Long, U, RO),
    def("Exit_status", T::Long, U, RO),
    def("Submit_arguments", T::Str, U, UW),
    def("executable", T::Str, U, UW),
    def("argument_list", T::Str, U, UW),
    def("array", T::Bool, U, UW),
    def("array_id", T::Str, U, RO),
    def("array_index", T::Str, U, RO),
    def("array_state_count", T::Str, U, RO),
    def("array_indices_submitted", T::Str, U, UW),
    def("array_indices_remaining", T::Str, U, RO),
    // Written by the scheduler only (estimated.soft_walltime is read-only for everyone).
    run("estimated", T::Resources, U, RO),
    def("history_timestamp", T::Long, U, RO),
    def("project", T::Str, U, UW),
    def("run_version", T::Long, M, RO),
    run("topjob", T::Bool, U, MW),
    def("resources_released", T::Str, U, RO),
    def("resource_released_list", T::Resources, U, RO),
    def("release_nodes_on_stageout", T::Bool, U, UW),
    def("tolerate_node_failures", T::Str, U, UW),
    def("Submit_Host", T::Str, U, RO),
    def("credential_id", T::Str, U, RO),
    def("credential_validity", T::Time, U, RO),
    def("create_resv_from_job", T::Bool, U, UW),
    run("max_run_subjobs", T::Long, U, UW),
    // Job sets (`qsub -L`, `-W job_set`): the id of the set's leader (docs/job-sets.md).
    def("job_set", T::Str, U, UW),
    // OR-ed resource requests (docs/job-sets.md): job_wide merged with defaults, the
    // largest and smallest amounts over the alternatives, and the OR-ed request a run keeps.
    def("sched_job_wide", T::Str, M, RO),
    def("max_resc_req", T::Resources, O, RO),
    def("min_resc_req", T::Resources, O, RO),
    def("ORed_Resource_List", T::Resources, M, RO),
];

/// Server attributes in OpenPBS's report order.
pub static SERVER_ATTRS: &[AttrDef] = &[
    def("server_state", T::Str, U, RO),
    def("server_host", T::Str, U, RO),
    def("scheduling", T::Bool, U, MW),
    def("max_running", T::Long, U, MW),
    def("max_queued", T::List, U, MW),
    def("max_queued_res", T::Resources, U, MW),
    def("max_run", T::List, U, MW),
    def("max_run_res", T::Resources, U, MW),
    def("max_run_soft", T::List, U, MW),
    def("max_run_res_soft", T::Resources, U, MW),
    def("max_user_run", T::Long, U, MW),
    def("max_group_run", T::Long, U, MW),
    def("total_jobs", T::Long, U, RO),
    def("state_count", T::Str, U, RO),
    def("acl_host_enable", T::Bool, U, MW),
    def("acl_hosts", T::List, U, MW),
    def("acl_user_enable", T::Bool, U, MW),
    def("acl_users", T::List, U, MW),
    def("acl_roots", T::List, U, MW),
    def("managers", T::List, U, MW),
    def("operators", T::List, U, MW),
    def("default_queue", T::Str, U, MW),
    def("log_events", T::Long, U, MW),
    def("mailer", T::Str, U, MW),
    def("mail_from", T::Str, U, MW),
    def("query_other_jobs", T::Bool, U, MW),
    def("resources_available", T::Resources, U, MW),
    def("resources_default", T::Resources, U, MW),
    def("default_chunk", T::Resources, U, MW),
    def("resources_max", T::Resources, U, MW),
    def("resources_assigned", T::Resources, U, RO),
    def("scheduler_iteration", T::Long, U, MW),
    def("comment", T::Str, U, MW),
    def("default_node", T::Str, U, MW),
    def("node_pack", T::Bool, U, MW),
    def("flatuid", T::Bool, U, MW),
    def("resv_enable", T::Bool, U, MW),
    def("node_fail_requeue", T::Long, U, MW),
    def("max_array_size", T::Long, U, MW),
    def("resend_term_delay", T::Long, U, MW),
    def("kill_delay", T::Long, U, MW),
    def("node_group_enable", T::Bool, U, MW),
    def("node_group_key", T::List, U, MW),
    def("backfill_depth", T::Long, U, MW),
    def("job_sort_formula", T::Str, U, MW),
    def("pbs_license_min", T::Long, U, MW),
    def("pbs_license_max", T::Long, U, MW),
    def("pbs_license_linger_time", T::Long, U, MW),
    def("license_count", T::Str, U, RO),
    def("pbs_version", T::Str, U, RO),
    def("eligible_time_enable", T::Bool, U, MW),
    def("job_history_enable", T::Bool, U, MW),
    def("job_history_duration", T::Duration, U, MW),
    def("max_concurrent_provision", T::Long, U, MW),
    def("clear_topjob_estimates_enable", T::Bool, U, MW),
    def("queued_jobs_threshold", T::List, U, MW),
    def("queued_jobs_threshold_res", T::Resources, U, MW),
    def("power_provisioning", T::Bool, M, RO),
    def("max_job_sequence_id", T::Long, U, MW),
    // The resources a suspended job gives back (`job::released`); unset, all of them.
    def("restrict_res_to_release_on_suspend", T::List, U, MW),
    // A job set's other members finish when one starts, instead of being held.
    def("job_set_finish_others", T::Bool, U, MW),
];

/// Queue attributes in OpenPBS's report order.
pub static QUEUE_ATTRS: &[AttrDef] = &[
    def("queue_type", T::Str, U, MW),
    def("Priority", T::Long, U, MW),
    def("max_queued", T::List, U, MW),
    def("max_queued_res", T::Resources, U, MW),
    def("total_jobs", T::Long, U, RO),
    def("state_count", T::Str, U, RO),
    def("max_running", T::Long, U, MW),
    def("acl_host_enable", T::Bool, U, OW),
    def("acl_hosts", T::List, U, OW),
    def("acl_user_enable", T::Bool, U, OW),
    def("acl_users", T::List, U, OW),
    def("acl_group_enable", T::Bool, U, OW),
    def("acl_groups", T::List, U, OW),
    def("from_route_only", T::Bool, U, MW),
    def("resources_max", T::Resources, U, MW),
    def("resources_min", T::Resources, U, MW),
    def("resources_default", T::Resources, U, MW),
    def("default_chunk", T::Resources, U, MW),
    def("resources_available", T::Resources, U, MW),
    def("resources_assigned", T::Resources, U, RO),
    def("max_user_run", T::Long, U, MW),
    def("max_group_run", T::Long, U, MW),
    def("max_run", T::List, U, MW),
    def("max_run_res", T::Resources, U, MW),
    def("max_run_soft", T::List, U, MW),
    def("max_run_res_soft", T::Resources, U, MW),
    def("max_array_size", T::Long, U, MW),
    def("kill_delay", T::Long, U, MW),
    def("backfill_depth", T::Long, U, MW),
    def("comment", T::Str, U, MW),
    def("route_destinations", T::List, U, MW),
    def("alt_router", T::Bool, U, MW),
    def("route_held_jobs", T::Bool, U, MW),
    def("route_waiting_jobs", T::Bool, U, MW),
    def("route_retry_time", T::Long, U, MW),
    def("route_lifetime", T::Long, U, MW),
    def("enabled", T::Bool, U, MW),
    def("started", T::Bool, U, MW),
    def("queued_jobs_threshold", T::List, U, MW),
    def("queued_jobs_threshold_res", T::Resources, U, MW),
];

/// Node attributes in the order pbsnodes shows them.
pub static NODE_ATTRS: &[AttrDef] = &[
    def("Mom", T::Str, U, MW),
    def("Port", T::Long, U, MW),
    def("pbs_version", T::Str, U, RO),
    def("ntype", T::Str, U, RO),
    def("state", T::Str, U, OW),
    def("pcpus", T::Long, U, RO),
    def("jobs", T::List, U, RO),
    def("resources_available", T::Resources, U, MW),
    def("resources_assigned", T::Resources, U, RO),
    def("comment", T::Str, U, OW),
    def("resv_enable", T::Bool, U, MW),
    def("sharing", T::Str, U, MW),
    def("queue", T::Str, U, MW),
    def("priority", T::Long, U, MW),
    def("last_state_change_time", T::Long, U, RO),
    def("last_used_time", T::Long, U, RO),
];

/// Scheduler attributes in the order `qmgr list sched` shows them.
pub static SCHED_ATTRS: &[AttrDef] = &[
    def("sched_host", T::Str, U, MW),
    def("sched_cycle_length", T::Duration, U, OW),
    def("throughput_mode", T::Bool, U, MW),
    def("job_run_wait", T::Str, U, MW),
    def("partition", T::Str, U, MW),
    def("sched_priv", T::Str, U, MW),
    def("sched_log", T::Str, U, MW),
    def("scheduling", T::Bool, U, MW),
    def("scheduler_iteration", T::Long, U, MW),
    def("state", T::Str, U, RO),
    def("preempt_queue_prio", T::Long, U, MW),
    def("preempt_prio", T::Str, U, MW),
    def("preempt_order", T::Str, U, MW),
    def("preempt_sort", T::Str, U, MW),
    def("log_events", T::Long, U, OW),
    def("server_dyn_res_alarm", T::Long, U, MW),
    def("attr_update_period", T::Long, U, MW),
    def("sched_preempt_enforce_resumption", T::Bool, U, MW),
    def("preempt_targets_enable", T::Bool, U, MW),
    def("do_not_span_psets", T::Bool, U, OW),
    def("only_explicit_psets", T::Bool, U, OW),
    def("job_sort_formula_threshold", T::Float, U, MW),
    def("opt_backfill_fuzzy", T::Str, U, MW),
    def("sched_user", T::Str, U, MW),
    def("comment", T::Str, U, MW),
];

/// Resource definition attributes (`qmgr list resource`).
pub static RESOURCE_ATTRS: &[AttrDef] = &[def("type", T::Str, U, MW), def("flag", T::Str, U, MW)];

/// Hook attributes (`qmgr list hook`).
pub static HOOK_ATTRS: &[AttrDef] = &[
    def("type", T::Str, U, MW),
    def("enabled", T::Bool, U, MW),
    def("event", T::List, U, MW),
    def("user", T::Str, U, MW),
    def("alarm", T::Long, U, MW),
    def("freq", T::Long, U, MW),
    def("order", T::Long, U, MW),
    def("debug", T::Bool, U, MW),
    def("fail_action", T::List, U, MW),
];

/// Splits a wire attribute name `Resource_List.ncpus` into (`Resource_List`, `Some("ncpus")`).
pub fn split_name(full: &str) -> (&str, Option<&str>) {
    match full.split_once('.') {
        Some((name, resource)) => (name, Some(resource)),
        None => (full, None),
    }
}

/// Normalises a boolean the way OpenPBS's decode_b does (`true t y 1`, `false f n 0`).
pub fn parse_bool(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "t" | "y" | "1" => Some(true),
        "false" | "f" | "n" | "0" => Some(false),
        _ => None,
    }
}

/// The text OpenPBS shows for a boolean.
pub fn bool_text(value: bool) -> &'static str {
    if value { "True" } else { "False" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_fits_a_byte_index() {
        let kinds = [
            ObjectKind::Job,
            ObjectKind::Queue,
            ObjectKind::Server,
            ObjectKind::Node,
            ObjectKind::Sched,
            ObjectKind::Resource,
            ObjectKind::Hook,
        ];
        for kind in kinds {
            assert!(kind.attributes().len() < 256, "{kind}");
        }
    }

    #[test]
    fn index_of_agrees_with_find() {
        const OWNER: u8 = ObjectKind::Job.index_of("Job_Owner");
        assert_eq!(ObjectKind::Job.find("Job_Owner").map(|(i, _)| i), Some(usize::from(OWNER)));
        assert_eq!(
            ObjectKind::Queue.find("enabled").map(|(i, _)| i),
            Some(usize::from(ObjectKind::Queue.index_of("enabled")))
        );
    }

    #[test]
    fn find_is_case_insensitive_and_ordered() {
        let (pos, def) = ObjectKind::Job.find("job_name").unwrap();
        assert_eq!(pos, 0);
        assert_eq!(def.name, "Job_Name");
        assert!(ObjectKind::Server.find("nosuchattr").is_none());
    }

    #[test]
    fn permissions_follow_openpbs() {
        let (_, comment) = ObjectKind::Job.find("comment").unwrap();
        assert!(!comment.writable_by(Privilege::User));
        assert!(comment.writable_by(Privilege::Operator));
        let (_, scheduling) = ObjectKind::Server.find("scheduling").unwrap();
        assert!(!scheduling.writable_by(Privilege::Operator));
        assert!(scheduling.writable_by(Privilege::Manager));
        let (_, euser) = ObjectKind::Job.find("euser").unwrap();
        assert!(!euser.readable_by(Privilege::User));
        assert!(!euser.writable_by(Privilege::Manager));
        let (_, estimated) = ObjectKind::Job.find("estimated").unwrap();
        assert!(estimated.readable_by(Privilege::User));
        assert!(!estimated.writable_by(Privilege::Manager));
    }

    #[test]
    fn tables_have_unique_names() {
        for kind in [
            ObjectKind::Job,
            ObjectKind::Server,
            ObjectKind::Queue,
            ObjectKind::Node,
            ObjectKind::Sched,
            ObjectKind::Hook,
        ] {
            let attrs = kind.attributes();
            for (i, a) in attrs.iter().enumerate() {
                assert!(
                    attrs[i + 1..].iter().all(|b| !b.name.eq_ignore_ascii_case(a.name)),
                    "{kind}: duplicate {}",
                    a.name
                );
            }
        }
    }

    #[test]
    fn bools() {
        assert_eq!(parse_bool("TRUE"), Some(true));
        assert_eq!(parse_bool("n"), Some(false));
        assert_eq!(parse_bool("maybe"), None);
    }
}
