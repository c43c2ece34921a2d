//! Errors that stop a mom from starting (configuration, directories, sockets).

/// Why the mom cannot run.
#[derive(Debug, thiserror::Error)]
pub enum MomError {
    /// A file or socket operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
    /// A pbs.conf value is unusable.
    #[error("{0}")]
    Config(String),
}

impl MomError {
    /// An I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> MomError {
        MomError::Io { context: context.into(), source }
    }
}
