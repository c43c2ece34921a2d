//! Placeholder crate: filled in by the execution and scheduling issue.
