//! A MUNGE client: asks the host's munged to encode a credential for the calling process
//! (its real uid and gid, as munged learns them from the socket's peer credentials) or to
//! decode one, over munged's Unix socket protocol (`src/libcommon/m_msg.c` of MUNGE:
//! an 11-byte header, then the message's fields, big-endian). No libmunge is linked or
//! loaded: a static build of the commands speaks it too, and a host without munge gets
//! a clear error, not a missing library.
//!
//! Every read is bounded ([`MAX_CREDENTIAL`], [`MAX_PAYLOAD`]) and every exchange has a
//! deadline, so a stuck or hostile munged cannot hold its caller.

pub mod client;
pub mod private;

pub use client::{Code, Credential, DEFAULT_SOCKET, DEFAULT_TIMEOUT, MAX_CREDENTIAL, MAX_PAYLOAD, Munge, MungeError};
