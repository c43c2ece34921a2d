//! `ReqError`: a request failure as the client will see it, a PBSE code and the exact text.

use pbs_core::Pbse;

/// A request failure: code plus the message OpenPBS would send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReqError {
    /// PBSE code.
    pub code: Pbse,
    /// Reply text.
    pub message: String,
}

impl ReqError {
    /// The canonical text of `code`.
    pub fn new(code: Pbse) -> ReqError {
        ReqError { code, message: code.to_string() }
    }

    /// `<canonical text> <attribute>`, as OpenPBS's `reply_badattr` composes it.
    pub fn attr(code: Pbse, attribute: &str) -> ReqError {
        ReqError { code, message: format!("{code} {attribute}") }
    }

    /// A composed message.
    pub fn with_message(code: Pbse, message: String) -> ReqError {
        ReqError { code, message }
    }
}
