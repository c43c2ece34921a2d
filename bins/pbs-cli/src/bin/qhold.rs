//! `qhold`: adds holds to jobs (`-h u|o|s` in any combination, default `u`).
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

#[path = "qhold/hold.rs"]
mod hold;

pbs_cli::command_main!(command);

fn command() -> std::process::ExitCode {
    hold::main("qhold", true)
}
