//! `qalter`: placeholder until the command is written.

fn main() -> std::process::ExitCode {
    eprintln!("qalter: not implemented yet");
    std::process::ExitCode::from(1)
}
