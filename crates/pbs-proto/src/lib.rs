//! The wire protocol between commands, pbs_server, pbs_sched and pbs_mom.
//!
//! A frame is a 4-byte big-endian length followed by one serde_json message. A connection
//! starts with a handshake ([`Hello`] / [`HelloReply::Welcome`], on TCP an authenticated link: [`link`]), then
//! carries [`RequestFrame`]s answered by [`Reply`] frames. See `docs/protocol.md`.

pub mod admission;
pub mod auth;
pub mod budget;
pub mod codec;
pub mod keys;
pub mod link;
pub mod messages;
pub mod mom;
pub mod sched;

pub use codec::{FrameError, MAX_REPLY_FRAME_LEN, MAX_REQUEST_FRAME_LEN, read_frame, write_frame};
pub use messages::*;
