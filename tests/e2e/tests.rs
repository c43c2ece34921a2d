//! End-to-end tests: each starts a real pbs_server in a temporary PBS_HOME and drives it with
//! the real command binaries or raw protocol frames.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod accounting;
mod admincmds;
mod arrays;
mod audit;
mod authz;
mod bounds;
mod commands;
mod condsel;
mod conns;
mod counts;
mod deferred;
mod depend;
mod durability;
mod eligible;
mod exec;
mod faults;
mod fuzz;
mod hooks;
mod job_values;
mod jobsets;
mod keys;
mod limits;
mod links;
mod mom_answers;
mod mom_hooks;
mod mom_privilege;
mod nodes_cli;
mod orselect;
mod preempt;
mod protocol;
mod runlimits;
mod soft_walltime;
mod torque;
mod update_period;
