//! `qdisable`: a queue no longer accepts jobs (`enabled = False`).
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

#[path = "qenable/switch.rs"]
mod switch;

pbs_cli::command_main!(command);

fn command() -> std::process::ExitCode {
    switch::main("qdisable", "enabled", "False")
}
