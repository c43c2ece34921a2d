//! The client of munged's socket: [`Munge`] encodes and decodes, with bounded reads and a
//! deadline per exchange.

use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// munged's socket where none is configured (`MUNGE_SOCKET_NAME`).
pub const DEFAULT_SOCKET: &str = "/run/munge/munge.socket.2";

/// The largest payload this client puts in a credential or accepts from one.
pub const MAX_PAYLOAD: usize = 4096;

/// The largest credential accepted (a credential is base64 of its payload and some
/// hundred bytes more).
pub const MAX_CREDENTIAL: usize = 2 * MAX_PAYLOAD + 1024;

/// How long one exchange with munged may take unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

const MAGIC: u32 = 0x0060_6D4B;
const VERSION: u8 = 4;
const HEADER_LEN: usize = 11;
const ENC_REQ: u8 = 2;
const ENC_RSP: u8 = 3;
const DEC_REQ: u8 = 4;
const DEC_RSP: u8 = 5;
/// `MUNGE_CIPHER_DEFAULT`, `MUNGE_MAC_DEFAULT`, `MUNGE_ZIP_DEFAULT`: munged's choices.
const DEFAULT: u8 = 1;
/// `MUNGE_UID_ANY`, `MUNGE_GID_ANY`: any process may decode the credential.
const ANY: u32 = u32::MAX;

/// MUNGE's error codes (`munge_err_t`), with `munge_strerror`'s texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Code(pub u8);

impl Code {
    /// `EMUNGE_SOCKET`: munged could not be reached.
    pub const SOCKET: Code = Code(6);
    /// `EMUNGE_CRED_INVALID`: not made with this key.
    pub const CRED_INVALID: Code = Code(14);
    /// `EMUNGE_CRED_EXPIRED`.
    pub const CRED_EXPIRED: Code = Code(15);
    /// `EMUNGE_CRED_REWOUND`: made in the future.
    pub const CRED_REWOUND: Code = Code(16);
    /// `EMUNGE_CRED_REPLAYED`: decoded before.
    pub const CRED_REPLAYED: Code = Code(17);

    /// `munge_strerror`'s text.
    pub fn text(self) -> &'static str {
        match self.0 {
            0 => "Success",
            1 => "Internal error",
            2 => "Invalid argument",
            3 => "Exceeded maximum message length",
            4 => "Buffer overflow",
            5 => "Out of memory",
            6 => "Socket communication error",
            7 => "Socket timeout",
            8 => "Invalid credential format",
            9 => "Invalid credential version",
            10 => "Invalid cipher type",
            11 => "Invalid MAC type",
            12 => "Invalid compression type",
            13 => "Unrecognized security realm",
            14 => "Invalid credential",
            15 => "Expired credential",
            16 => "Rewound credential",
            17 => "Replayed credential",
            18 => "Unauthorized credential",
            _ => "Unknown error",
        }
    }
}

/// Why munged did not give what was asked.
#[derive(Debug, thiserror::Error)]
pub enum MungeError {
    /// Its socket could not be reached (munge's own wording).
    #[error("Failed to access \"{}\": {source}", socket.display())]
    Connect {
        /// The socket.
        socket: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The exchange failed or ran past its deadline.
    #[error("Socket communication error: {0}")]
    Io(#[from] std::io::Error),
    /// munged refused: its code and what it said.
    #[error("{}: {message}", code.text())]
    Refused {
        /// `munge_err_t`.
        code: Code,
        /// munged's own text.
        message: String,
    },
    /// munged's answer was not a well-formed message.
    #[error("Internal error: {0}")]
    Protocol(String),
    /// A payload or credential over this client's bounds.
    #[error("Exceeded maximum message length: {0} bytes")]
    TooLong(usize),
}

impl MungeError {
    /// The MUNGE error code, as `munge_encode`/`munge_decode` would return it.
    pub fn code(&self) -> Code {
        match self {
            MungeError::Connect { .. } | MungeError::Io(_) => Code::SOCKET,
            MungeError::Refused { code, .. } => *code,
            MungeError::Protocol(_) => Code(1),
            MungeError::TooLong(_) => Code(3),
        }
    }
}

/// What a decoded credential says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credential {
    /// The uid of the process that had it encoded.
    pub uid: u32,
    /// Its gid.
    pub gid: u32,
    /// The payload it carries.
    pub payload: Vec<u8>,
    /// Where it was encoded (munged's origin address), when munged says.
    pub origin: Option<Ipv4Addr>,
    /// When it was encoded, seconds since the epoch.
    pub encoded_at: u32,
    /// Its time to live, seconds.
    pub ttl: u32,
}

/// A client of one munged socket.
#[derive(Clone, Debug)]
pub struct Munge {
    socket: PathBuf,
    timeout: Duration,
}

impl Munge {
    /// A client of munged at `socket`.
    pub fn new(socket: impl Into<PathBuf>) -> Munge {
        Munge { socket: socket.into(), timeout: DEFAULT_TIMEOUT }
    }

    /// The same client with another deadline per exchange.
    pub fn with_timeout(mut self, timeout: Duration) -> Munge {
        self.timeout = timeout;
        self
    }

    /// The socket it talks to.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Has munged encode a credential carrying `payload` for this process.
    pub fn encode(&self, payload: &[u8]) -> Result<String, MungeError> {
        if payload.len() > MAX_PAYLOAD {
            return Err(MungeError::TooLong(payload.len()));
        }
        let mut body = vec![DEFAULT, DEFAULT, DEFAULT, 0];
        body.extend_from_slice(&0u32.to_be_bytes()); // ttl: munged's default
        body.extend_from_slice(&ANY.to_be_bytes());
        body.extend_from_slice(&ANY.to_be_bytes());
        put_bytes(&mut body, payload);
        let answer = self.exchange(ENC_REQ, &body, ENC_RSP)?;
        let mut r = Reader::new(&answer);
        let (code, message) = (r.u8()?, r.short_text()?);
        let data = r.long_bytes(MAX_CREDENTIAL + 1)?;
        r.end()?;
        if code != 0 {
            return Err(MungeError::Refused { code: Code(code), message });
        }
        let credential = data.strip_suffix(b"\0").unwrap_or(&data);
        String::from_utf8(credential.to_vec()).map_err(|_| MungeError::Protocol("a credential that is not text".into()))
    }

    /// Has munged decode `credential`: who made it and what it carries. An expired,
    /// rewound or replayed credential, or one made with another key, is refused.
    pub fn decode(&self, credential: &str) -> Result<Credential, MungeError> {
        if credential.len() > MAX_CREDENTIAL || credential.as_bytes().contains(&0) {
            return Err(MungeError::TooLong(credential.len()));
        }
        let mut data = credential.as_bytes().to_vec();
        data.push(0);
        let mut body = Vec::with_capacity(data.len() + 4);
        put_bytes(&mut body, &data);
        let answer = self.exchange(DEC_REQ, &body, DEC_RSP)?;
        let mut r = Reader::new(&answer);
        let (code, message) = (r.u8()?, r.short_text()?);
        let (_cipher, _mac, _zip) = (r.u8()?, r.u8()?, r.u8()?);
        let _realm = r.short_text()?;
        let ttl = r.u32()?;
        let addr = r.short_bytes()?;
        let encoded_at = r.u32()?;
        let _decoded_at = r.u32()?;
        let (uid, gid) = (r.u32()?, r.u32()?);
        let (_auth_uid, _auth_gid) = (r.u32()?, r.u32()?);
        let payload = r.long_bytes(MAX_PAYLOAD)?;
        r.end()?;
        if code != 0 {
            return Err(MungeError::Refused { code: Code(code), message });
        }
        let origin = <[u8; 4]>::try_from(addr.as_slice()).ok().map(Ipv4Addr::from);
        Ok(Credential { uid, gid, payload, origin, encoded_at, ttl })
    }

    /// Sends one request and reads its answer's body.
    fn exchange(&self, kind: u8, body: &[u8], answer: u8) -> Result<Vec<u8>, MungeError> {
        let mut stream = UnixStream::connect(&self.socket)
            .map_err(|source| MungeError::Connect { socket: self.socket.clone(), source })?;
        stream.set_read_timeout(Some(self.timeout))?;
        stream.set_write_timeout(Some(self.timeout))?;
        let mut frame = Vec::with_capacity(HEADER_LEN + body.len());
        frame.extend_from_slice(&MAGIC.to_be_bytes());
        frame.push(VERSION);
        frame.push(kind);
        frame.push(0); // retry
        frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
        frame.extend_from_slice(body);
        stream.write_all(&frame)?;
        let mut header = [0u8; HEADER_LEN];
        stream.read_exact(&mut header)?;
        let mut r = Reader::new(&header);
        let (magic, version, got, _retry, len) = (r.u32()?, r.u8()?, r.u8()?, r.u8()?, r.u32()? as usize);
        if magic != MAGIC || version != VERSION {
            return Err(MungeError::Protocol(format!("an answer of magic {magic:#x} version {version}")));
        }
        if got != answer {
            return Err(MungeError::Protocol(format!("an answer of type {got} for a request of type {kind}")));
        }
        if len > MAX_CREDENTIAL + MAX_PAYLOAD + 1024 {
            return Err(MungeError::TooLong(len));
        }
        let mut body = vec![0u8; len];
        stream.read_exact(&mut body)?;
        Ok(body)
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// Reads a message's fields, refusing to run past its end.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { rest: bytes }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], MungeError> {
        if n > self.rest.len() {
            return Err(MungeError::Protocol("a message shorter than its fields".into()));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, MungeError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, MungeError> {
        let bytes = self.take(4)?;
        Ok(u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    /// A field with a one-byte length.
    fn short_bytes(&mut self) -> Result<Vec<u8>, MungeError> {
        let n = self.u8()? as usize;
        Ok(self.take(n)?.to_vec())
    }

    /// A text with a one-byte length that counts its terminating NUL.
    fn short_text(&mut self) -> Result<String, MungeError> {
        let bytes = self.short_bytes()?;
        let text = bytes.strip_suffix(b"\0").unwrap_or(&bytes);
        Ok(String::from_utf8_lossy(text).into_owned())
    }

    /// A field with a four-byte length, at most `max` bytes.
    fn long_bytes(&mut self, max: usize) -> Result<Vec<u8>, MungeError> {
        let n = self.u32()? as usize;
        if n > max {
            return Err(MungeError::TooLong(n));
        }
        Ok(self.take(n)?.to_vec())
    }

    fn end(&self) -> Result<(), MungeError> {
        if self.rest.is_empty() { Ok(()) } else { Err(MungeError::Protocol("a message longer than its fields".into())) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_socket_says_what_munge_says() {
        let err = Munge::new("/nonexistent/munge.socket.2").encode(b"x").unwrap_err();
        assert_eq!(err.code(), Code::SOCKET);
        assert!(err.to_string().starts_with("Failed to access \"/nonexistent/munge.socket.2\": "), "{err}");
        assert_eq!(err.code().text(), "Socket communication error");
    }

    #[test]
    fn fields_past_the_end_are_refused() {
        let mut r = Reader::new(&[0, 0, 0, 9, 1]);
        assert!(matches!(r.long_bytes(100), Err(MungeError::Protocol(_))));
        let mut r = Reader::new(&[0, 0, 1, 0]);
        assert!(matches!(r.long_bytes(100), Err(MungeError::TooLong(256))));
    }
}
