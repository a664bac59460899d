//! The CLI's errors and their exit codes (one place, as the upstream CLI does).

/// Why a command could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The input is malformed: exit 2.
    #[error("{0}")]
    BadInput(String),
    /// Reading or writing failed: exit 2.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        source: std::io::Error,
    },
}

impl CliError {
    /// 2 for bad input and I/O; refusals are results, not errors (exit 1).
    pub fn exit_code(&self) -> u8 {
        2
    }

    pub fn bad(msg: impl std::fmt::Display) -> CliError {
        CliError::BadInput(msg.to_string())
    }
}
