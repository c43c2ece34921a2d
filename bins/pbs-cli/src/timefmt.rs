//! Time text as OpenPBS commands print it: ctime(3) form for time attributes, and the short
//! forms used in job comments.

use chrono::{Local, TimeZone};

/// ctime(3) form without the newline: `Sun Nov 22 17:35:29 2026`.
pub fn ctime(epoch_secs: i64) -> String {
    match Local.timestamp_opt(epoch_secs, 0).single() {
        Some(t) => t.format("%a %b %e %H:%M:%S %Y").to_string(),
        None => epoch_secs.to_string(),
    }
}

/// The attributes OpenPBS's qstat shows in ctime form.
pub fn is_time_attribute(name: &str) -> bool {
    matches!(
        name,
        "ctime"
            | "etime"
            | "stime"
            | "obittime"
            | "mtime"
            | "qtime"
            | "Execution_Time"
            | "reserve_start"
            | "reserve_end"
            | "credential_validity"
            | "estimated.start_time"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_shape() {
        let text = ctime(0);
        assert_eq!(text.len(), 24, "{text}");
    }
}
