//! `qrls`: removes holds from jobs (`-h u|o|s`, default `u`).

fn main() -> std::process::ExitCode {
    pbs_cli::perjob::hold_command("qrls", false)
}
