//! `qhold`: adds holds to jobs (`-h u|o|s`, default `u`).

fn main() -> std::process::ExitCode {
    pbs_cli::perjob::hold_command("qhold", true)
}
