//! `qstart`: a queue has its jobs scheduled again (`started = True`).
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

#[path = "qenable/switch.rs"]
mod switch;

pbs_cli::command_main!(command);

fn command() -> std::process::ExitCode {
    switch::main("qstart", "started", "True")
}
