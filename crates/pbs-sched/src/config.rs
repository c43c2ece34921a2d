//! Policy settings that OpenPBS keeps in `PBS_HOME/sched_priv/sched_config` rather than in
//! server attributes: `strict_ordering`, `backfill` and the `resources` line.
//!
//! Only these keys are read; every other line of a real sched_config is accepted and
//! ignored, so an OpenPBS file can be dropped in unchanged.

/// The scheduler's policy switches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedConfig {
    /// `strict_ordering`: a job that cannot run keeps every later job from running
    /// (OpenPBS default False).
    pub strict_ordering: bool,
    /// `backfill`: lower jobs may run around the top jobs when strict ordering is on
    /// (OpenPBS default True). Needs the calendar, which is not built yet: until then a
    /// blocked strict order blocks everything after it.
    pub backfill: bool,
    /// `resources`: the resources matched against nodes. `None` means every resource a
    /// chunk asks for (booleans are always matched, as in OpenPBS).
    pub resources: Option<Vec<String>>,
}

impl Default for SchedConfig {
    fn default() -> SchedConfig {
        SchedConfig { strict_ordering: false, backfill: true, resources: None }
    }
}

fn truth(value: &str) -> Option<bool> {
    // `strict_ordering: true ALL`: the prime-time qualifier is ignored (no prime time yet).
    let word = value.split_whitespace().next()?;
    match word.to_ascii_lowercase().as_str() {
        "true" | "t" | "yes" | "y" | "1" => Some(true),
        "false" | "f" | "no" | "n" | "0" => Some(false),
        _ => None,
    }
}

impl SchedConfig {
    /// Reads the text of a sched_config file; unknown keys and malformed lines are ignored.
    pub fn parse(text: &str) -> SchedConfig {
        let mut config = SchedConfig::default();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((key, value)) = line.split_once(':') else { continue };
            let value = value.trim();
            match key.trim() {
                "strict_ordering" => config.strict_ordering = truth(value).unwrap_or(config.strict_ordering),
                "backfill" => config.backfill = truth(value).unwrap_or(config.backfill),
                "resources" => {
                    let list = value.trim_matches('"');
                    config.resources =
                        Some(list.split(',').map(|r| r.trim().to_string()).filter(|r| !r.is_empty()).collect());
                }
                _ => {}
            }
        }
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_keys_it_knows() {
        let text = "# comment\nround_robin: False all\nstrict_ordering: true ALL\nbackfill: false\n\
                    resources: \"ncpus, mem, arch, host, vnode, aoe, eoe\"\n";
        let config = SchedConfig::parse(text);
        assert!(config.strict_ordering);
        assert!(!config.backfill);
        assert_eq!(config.resources.as_ref().map(Vec::len), Some(7));
        assert_eq!(SchedConfig::parse(""), SchedConfig::default());
    }
}
