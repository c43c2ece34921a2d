//! `qstop`: a queue no longer has its jobs scheduled (they stay queued) (`started = False`).
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

#[path = "qenable/switch.rs"]
mod switch;

pbs_cli::command_main!(command);

fn command() -> std::process::ExitCode {
    switch::main("qstop", "started", "False")
}
