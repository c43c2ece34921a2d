//! Frame encoding: a 4-byte big-endian length, then that many bytes of JSON.
//!
//! Blocking helpers serve the commands (one request, one reply, no runtime to start); the
//! async side uses tokio-util's `LengthDelimitedCodec` configured to the same layout.

use std::io::{self, Read, Write};

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::codec::LengthDelimitedCodec;

/// Largest frame a server accepts from a peer: big enough for a job script of several MiB.
pub const MAX_REQUEST_FRAME_LEN: usize = 16 * 1024 * 1024;
/// Largest frame a client accepts; status replies are streamed in parts well below this.
pub const MAX_REPLY_FRAME_LEN: usize = 256 * 1024 * 1024;

/// Most JSON values (array elements, object members, nested values) a request frame may
/// hold. Reading a message builds each value it holds before checking it (an internally
/// tagged enum is read into a tree first), which costs some 30 times the frame's size
/// when every value is tiny; a million values keep that tree under about 64 MiB, and no
/// request a command sends comes near it (a 4 MiB environment is one value).
pub const MAX_FRAME_VALUES: usize = 1 << 20;

/// Whether a frame holds more than `limit` JSON values, counted without reading it into
/// anything: the commas and opening brackets outside strings. Stops at the limit.
pub fn has_more_values_than(frame: &[u8], limit: usize) -> bool {
    let mut count = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in frame {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b',' | b'[' | b'{' => {
                count += 1;
                if count > limit {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// Errors reading or writing frames.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer closed the connection mid-frame or the socket failed.
    #[error("connection error: {0}")]
    Io(#[from] io::Error),
    /// The frame announced more bytes than allowed; the connection must be dropped.
    #[error("frame of {0} bytes exceeds the limit")]
    TooLarge(usize),
    /// The frame is not a valid message of the expected kind.
    #[error("malformed message: {0}")]
    Malformed(#[from] serde_json::Error),
}

/// A codec with the frame layout of this protocol and the given size limit.
pub fn length_codec(max_frame_len: usize) -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder().big_endian().length_field_length(4).max_frame_length(max_frame_len).new_codec()
}

/// Serialises `message` into a complete frame (length prefix included).
pub fn encode_frame<T: Serialize>(message: &T) -> Result<Vec<u8>, FrameError> {
    let mut buf = vec![0u8; 4];
    serde_json::to_writer(&mut buf, message)?;
    let len = buf.len() - 4;
    let len32 = u32::try_from(len).map_err(|_| FrameError::TooLarge(len))?;
    buf[..4].copy_from_slice(&len32.to_be_bytes());
    Ok(buf)
}

/// Writes one frame and flushes.
pub fn write_frame<T: Serialize>(writer: &mut impl Write, message: &T) -> Result<(), FrameError> {
    let buf = encode_frame(message)?;
    writer.write_all(&buf)?;
    writer.flush()?;
    Ok(())
}

/// Reads one frame. `Ok(None)` is a clean end of stream between frames.
pub fn read_frame<T: DeserializeOwned>(reader: &mut impl Read, max_len: usize) -> Result<Option<T>, FrameError> {
    match read_body(reader, max_len)? {
        Some(body) => Ok(Some(serde_json::from_slice(&body)?)),
        None => Ok(None),
    }
}

/// Reads one frame's body, unparsed. `Ok(None)` is a clean end of stream between frames.
pub fn read_body(reader: &mut impl Read, max_len: usize) -> Result<Option<Vec<u8>>, FrameError> {
    let mut len_buf = [0u8; 4];
    let mut filled = 0;
    while filled < 4 {
        match reader.read(&mut len_buf[filled..]) {
            Ok(0) if filled == 0 => return Ok(None),
            Ok(0) => return Err(FrameError::Io(io::ErrorKind::UnexpectedEof.into())),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let len = u32::from_be_bytes(len_buf) as usize;
    if len > max_len {
        return Err(FrameError::TooLarge(len));
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body)?;
    Ok(Some(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_counted_outside_strings_only() {
        assert!(!has_more_values_than(br#"{"a":[1,2,3]}"#, 4));
        assert!(has_more_values_than(br#"{"a":[1,2,3],"b":{}}"#, 4));
        // Commas and brackets inside strings, escaped quotes included, are not values.
        assert!(!has_more_values_than(br#"{"a":"[,{,\",[,{"}"#, 1));
        let many = format!("[{}0]", "0,".repeat(100));
        assert!(has_more_values_than(many.as_bytes(), 100) && !has_more_values_than(many.as_bytes(), 101));
    }
    use crate::messages::{Reply, ReplyBody};

    #[test]
    fn round_trip_and_clean_eof() {
        let reply = Reply::ok(7, ReplyBody::JobId("1.srv".into()));
        let mut buf = Vec::new();
        write_frame(&mut buf, &reply).unwrap();
        write_frame(&mut buf, &reply).unwrap();
        let mut cursor = io::Cursor::new(buf);
        let first: Reply = read_frame(&mut cursor, 1024).unwrap().unwrap();
        assert_eq!(first, reply);
        let _second: Reply = read_frame(&mut cursor, 1024).unwrap().unwrap();
        assert!(read_frame::<Reply>(&mut cursor, 1024).unwrap().is_none());
    }

    #[test]
    fn oversized_torn_and_garbage_frames_are_errors() {
        let mut big = 2000u32.to_be_bytes().to_vec();
        big.extend(vec![b'x'; 10]);
        let res = read_frame::<Reply>(&mut io::Cursor::new(big), 1024);
        assert!(matches!(res, Err(FrameError::TooLarge(2000))));

        let torn = vec![0u8, 0];
        let res = read_frame::<Reply>(&mut io::Cursor::new(torn), 1024);
        assert!(matches!(res, Err(FrameError::Io(_))));

        let mut garbage = 5u32.to_be_bytes().to_vec();
        garbage.extend(b"\xff\xfe{]x");
        let res = read_frame::<Reply>(&mut io::Cursor::new(garbage), 1024);
        assert!(matches!(res, Err(FrameError::Malformed(_))));
    }
}
