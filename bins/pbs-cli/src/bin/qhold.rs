//! `qhold`: placeholder until the command is written.

fn main() -> std::process::ExitCode {
    eprintln!("qhold: not implemented yet");
    std::process::ExitCode::from(1)
}
