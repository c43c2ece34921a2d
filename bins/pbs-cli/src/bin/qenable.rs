//! `qenable`: a queue accepts jobs again (`enabled = True`).
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

#[path = "qenable/switch.rs"]
mod switch;

pbs_cli::command_main!(command);

fn command() -> std::process::ExitCode {
    switch::main("qenable", "enabled", "True")
}
