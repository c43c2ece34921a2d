//! `qhold`: adds holds to jobs (`-h u|o|s` in any combination, default `u`).

#[path = "qhold/hold.rs"]
mod hold;

fn main() -> std::process::ExitCode {
    hold::main("qhold", true)
}
