//! Links the commands with the static unwinder (`libgcc_eh.a`) instead of `libgcc_s.so.1`
//! where the C toolchain has it.
//!
//! Why: a q-command lives for about a millisecond, and loading one more shared library
//! (open, map, relocate, and its constructor's CPUID probes, which trap to the hypervisor
//! on a VM) was a tenth of what `qsub -- /bin/true` cost. The unwinder is only used by a
//! panic, which still unwinds and prints its backtrace as before. The library is named
//! ahead of the standard library's `-lgcc_s`, so the linker takes the `_Unwind_*` symbols
//! from it and `--as-needed` drops `libgcc_s`; where the toolchain has no `libgcc_eh.a` (or a
//! linker resolves in strict command-line order) the commands stay linked as before.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CC");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let static_crt =
        std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default().split(',').any(|f| f == "crt-static");
    // A fully static build links libgcc_eh already; other platforms have other unwinders.
    if target_os != "linux" || target_env != "gnu" || static_crt {
        return;
    }
    // Cross builds link with another toolchain, which `cc` here says nothing about.
    if std::env::var("HOST").ok() != std::env::var("TARGET").ok() {
        return;
    }
    if let Some(dir) = libgcc_eh_dir() {
        println!("cargo:rustc-link-search=native={}", dir.display());
        // `-bundle`: linked into the commands, not copied into the pbs_cli rlib.
        println!("cargo:rustc-link-lib=static:-bundle=gcc_eh");
    }
}

/// The directory of the C compiler's `libgcc_eh.a`, if it has one.
fn libgcc_eh_dir() -> Option<PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(cc).arg("-print-file-name=libgcc_eh.a").output().ok()?;
    if !out.status.success() {
        return None;
    }
    // The compiler echoes the bare name back when it does not have the file.
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    if !path.is_absolute() || !path.is_file() {
        return None;
    }
    path.parent().map(PathBuf::from)
}
