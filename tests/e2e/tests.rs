//! End-to-end tests: each starts a real pbs_server in a temporary PBS_HOME and drives it with
//! the real command binaries or raw protocol frames.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod arrays;
mod commands;
mod durability;
mod exec;
mod fuzz;
mod nodes_cli;
mod protocol;
mod soft_walltime;
