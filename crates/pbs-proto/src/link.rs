//! Authenticated daemon links: the one handshake every TCP link runs, and the sealing of
//! every frame after it.
//!
//! The handshake is the Noise protocol `NNpsk0` (`snow`), keyed by the cluster key, with a
//! prologue naming the role of each end (`server`, `scheduler`, `mom:<node>`). Each side
//! proves it holds the key, and the proof covers both sides' fresh ephemeral keys and both
//! roles, so a proof taken from one connection fails in any other: a relay between two
//! links, a reflection back to its sender, a replay of a recorded handshake, or a peer
//! claiming another role all end in a refused handshake. After it, each frame is sealed
//! with ChaCha20-Poly1305 under a key of its direction and a sequence number that both
//! sides count, so a frame that is modified, replayed, reordered or reflected fails to open.
//!
//! On the wire a frame keeps its 4-byte length prefix; its body is the sealed message, cut
//! into Noise messages of at most 65,535 bytes (one sequence number each), so both sides
//! know where each part ends from the length alone.

use std::io::{self, Read, Write};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::{SinkExt, StreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use snow::StatelessTransportState;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{Decoder, Encoder, Framed, LengthDelimitedCodec};

use crate::auth::{hex, unhex};
use crate::codec::{FrameError, length_codec};
use crate::messages::{Hello, HelloReply, PROTOCOL_VERSION, Role};

/// Noise pattern and primitives: no static keys (the cluster key is the only secret), the
/// pre-shared key mixed in before the first message, so the very first message already
/// fails for a peer without it.
const NOISE_PARAMS: &str = "Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s";
/// A command's link, which holds no cluster key: ephemeral keys only, for the link's
/// secrecy; who each end is gets proven after it by a MUNGE credential each way that names
/// the handshake's hash, so neither proof is good on another connection.
const UNKEYED_PARAMS: &str = "Noise_NN_25519_ChaChaPoly_BLAKE2s";
/// Largest Noise message.
const NOISE_MAX: usize = 65_535;
/// Authentication tag per Noise message.
const TAG: usize = 16;
/// Plain bytes per Noise message.
const PART: usize = NOISE_MAX - TAG;
/// Largest frame a TCP peer may send before its handshake is done: a Hello with its
/// handshake message is about 200 bytes, so nobody unauthenticated can make us buffer more.
pub const PRE_AUTH_FRAME_LEN: usize = 4 * 1024;
/// Longest each step of a handshake may take.
pub const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Why a link could not be established or a frame was refused.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The peer does not hold the cluster key, or its proof was made for another
    /// connection, another role or another direction.
    #[error("handshake failed: the peer did not prove the cluster key for this link ({0})")]
    Proof(snow::Error),
    /// A frame did not open: modified, replayed, reordered or sealed for another link.
    #[error("frame failed authentication")]
    Forged,
    /// The peer broke the handshake's order or format.
    #[error("handshake failed: {0}")]
    Protocol(String),
    /// The peer refused us.
    #[error("refused: {message}")]
    Refused {
        /// PBSE code.
        code: u32,
        /// Why.
        message: String,
    },
    /// The connection failed or timed out.
    #[error("connection error: {0}")]
    Io(#[from] io::Error),
    /// A frame could not be read or written.
    #[error(transparent)]
    Frame(#[from] FrameError),
}

impl From<LinkError> for FrameError {
    /// For code that reports every link failure as a frame error.
    fn from(e: LinkError) -> FrameError {
        match e {
            LinkError::Frame(frame) => frame,
            LinkError::Io(io) => FrameError::Io(io),
            other => FrameError::Io(io::Error::new(io::ErrorKind::InvalidData, other)),
        }
    }
}

/// The name an end of a link is bound to in the handshake (and a derived key to its peer).
pub(crate) fn role_tag(role: &Role) -> String {
    match role {
        Role::Client => "client".into(),
        Role::Scheduler => "scheduler".into(),
        Role::Server => "server".into(),
        Role::Mom { node } => format!("mom:{node}"),
    }
}

/// Binds the protocol version and both ends' roles, in the handshake's direction.
fn prologue(initiator: &Role, responder: &Role) -> Vec<u8> {
    format!("pbs-rs link {PROTOCOL_VERSION}\ninitiator={}\nresponder={}\n", role_tag(initiator), role_tag(responder))
        .into_bytes()
}

/// The cluster key (any length) as Noise's 32-byte pre-shared key.
fn psk(key: &[u8]) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(b"pbs-rs cluster key\0");
    hash.update(key);
    hash.finalize().into()
}

fn builder_state(
    key: &[u8],
    initiator: &Role,
    responder: &Role,
    as_initiator: bool,
) -> Result<snow::HandshakeState, LinkError> {
    let params = NOISE_PARAMS.parse().map_err(LinkError::Proof)?;
    let psk = psk(key);
    let prologue = prologue(initiator, responder);
    let builder = snow::Builder::new(params)
        .psk(0, &psk)
        .map_err(LinkError::Proof)?
        .prologue(&prologue)
        .map_err(LinkError::Proof)?;
    if as_initiator { builder.build_initiator() } else { builder.build_responder() }.map_err(LinkError::Proof)
}

/// The connecting side's handshake, between its first message and the peer's answer.
pub struct Initiation {
    state: snow::HandshakeState,
}

impl Initiation {
    /// Starts a handshake as `me` towards `peer`; returns the first message to send.
    pub fn start(key: &[u8], me: &Role, peer: &Role) -> Result<(Initiation, Vec<u8>), LinkError> {
        let mut state = builder_state(key, me, peer, true)?;
        let mut message = vec![0u8; 256];
        let len = state.write_message(&[], &mut message).map_err(LinkError::Proof)?;
        message.truncate(len);
        Ok((Initiation { state }, message))
    }

    /// Checks the responder's answer: it proves the peer holds the key and answered this
    /// very handshake as the role we expected. Returns the link's keys.
    pub fn finish(mut self, answer: &[u8]) -> Result<LinkKeys, LinkError> {
        let mut payload = vec![0u8; answer.len()];
        self.state.read_message(answer, &mut payload).map_err(LinkError::Proof)?;
        LinkKeys::from_handshake(self.state)
    }
}

/// The accepting side's handshake in one step: checks the initiator's first message for a
/// link from `peer` to `me` and returns the answer to send and the link's keys.
pub fn respond(key: &[u8], peer: &Role, me: &Role, first: &[u8]) -> Result<(Vec<u8>, LinkKeys), LinkError> {
    let mut state = builder_state(key, peer, me, false)?;
    let mut payload = vec![0u8; first.len()];
    state.read_message(first, &mut payload).map_err(LinkError::Proof)?;
    let mut answer = vec![0u8; 256];
    let len = state.write_message(&[], &mut answer).map_err(LinkError::Proof)?;
    answer.truncate(len);
    Ok((answer, LinkKeys::from_handshake(state)?))
}

fn unkeyed_state(as_initiator: bool) -> Result<snow::HandshakeState, LinkError> {
    let params = UNKEYED_PARAMS.parse().map_err(LinkError::Proof)?;
    let prologue = prologue(&Role::Client, &Role::Server);
    let builder = snow::Builder::new(params).prologue(&prologue).map_err(LinkError::Proof)?;
    if as_initiator { builder.build_initiator() } else { builder.build_responder() }.map_err(LinkError::Proof)
}

/// A command's side of an unkeyed link ([`UNKEYED_PARAMS`]), between its first message
/// and the server's answer.
pub struct UnkeyedInitiation {
    state: snow::HandshakeState,
}

impl UnkeyedInitiation {
    /// Starts the handshake; returns the first message to send.
    pub fn start() -> Result<(UnkeyedInitiation, Vec<u8>), LinkError> {
        let mut state = unkeyed_state(true)?;
        let mut message = vec![0u8; 256];
        let len = state.write_message(&[], &mut message).map_err(LinkError::Proof)?;
        message.truncate(len);
        Ok((UnkeyedInitiation { state }, message))
    }

    /// Reads the server's answer: the link's keys and the handshake's hash, which the
    /// proofs of both ends must name.
    pub fn finish(mut self, answer: &[u8]) -> Result<(LinkKeys, Vec<u8>), LinkError> {
        let mut payload = vec![0u8; answer.len()];
        self.state.read_message(answer, &mut payload).map_err(LinkError::Proof)?;
        let hash = self.state.get_handshake_hash().to_vec();
        Ok((LinkKeys::from_handshake(self.state)?, hash))
    }
}

/// The server's side of an unkeyed link: the answer to send, the link's keys and the
/// handshake's hash.
pub fn respond_unkeyed(first: &[u8]) -> Result<(Vec<u8>, LinkKeys, Vec<u8>), LinkError> {
    let mut state = unkeyed_state(false)?;
    let mut payload = vec![0u8; first.len()];
    state.read_message(first, &mut payload).map_err(LinkError::Proof)?;
    let mut answer = vec![0u8; 256];
    let len = state.write_message(&[], &mut answer).map_err(LinkError::Proof)?;
    answer.truncate(len);
    let hash = state.get_handshake_hash().to_vec();
    Ok((answer, LinkKeys::from_handshake(state)?, hash))
}

/// What a MUNGE credential proving one end of an unkeyed link carries: who it is
/// (`client` or `server`) and the handshake's hash, so it is good on this link only.
pub fn munge_payload(end: &str, hash: &[u8]) -> Vec<u8> {
    format!("pbs-rs {end} {}", hex(hash)).into_bytes()
}

/// The keys of an established link, to be split into its two directions.
pub struct LinkKeys(Arc<StatelessTransportState>);

impl LinkKeys {
    fn from_handshake(state: snow::HandshakeState) -> Result<LinkKeys, LinkError> {
        Ok(LinkKeys(Arc::new(state.into_stateless_transport_mode().map_err(LinkError::Proof)?)))
    }

    /// The sealing (outgoing) and opening (incoming) halves, usable from different threads.
    pub fn split(self) -> (Sealer, Opener) {
        (Sealer { keys: self.0.clone(), next: 0 }, Opener { keys: self.0, next: 0 })
    }
}

/// Seals outgoing frames, numbering each part.
pub struct Sealer {
    keys: Arc<StatelessTransportState>,
    next: u64,
}

impl Sealer {
    /// The sealed body of one frame.
    pub fn seal(&mut self, plain: &[u8]) -> Result<Vec<u8>, LinkError> {
        let parts = plain.len().div_ceil(PART).max(1);
        let mut sealed = vec![0u8; plain.len() + parts * TAG];
        let mut at = 0;
        let mut chunks: Vec<&[u8]> = plain.chunks(PART).collect();
        if chunks.is_empty() {
            chunks.push(&[]);
        }
        for chunk in chunks {
            let end = at + chunk.len() + TAG;
            let written =
                self.keys.write_message(self.next, chunk, &mut sealed[at..end]).map_err(|_| LinkError::Forged)?;
            self.next += 1;
            at += written;
        }
        sealed.truncate(at);
        Ok(sealed)
    }
}

/// Opens incoming frames, expecting each part's number in turn.
pub struct Opener {
    keys: Arc<StatelessTransportState>,
    next: u64,
}

impl Opener {
    /// The plain body of one sealed frame; any failure means the link can no longer be
    /// trusted and must be closed.
    pub fn open(&mut self, sealed: &[u8]) -> Result<Vec<u8>, LinkError> {
        let mut plain = vec![0u8; sealed.len()];
        let len = self.open_into(sealed, &mut plain)?;
        plain.truncate(len);
        Ok(plain)
    }

    /// Opens one sealed frame into `plain` (at least as long as `sealed`); returns the
    /// plain length.
    fn open_into(&mut self, sealed: &[u8], plain: &mut [u8]) -> Result<usize, LinkError> {
        if sealed.is_empty() || plain.len() < sealed.len() {
            return Err(LinkError::Forged);
        }
        let mut at = 0;
        for part in sealed.chunks(NOISE_MAX) {
            if part.len() < TAG {
                return Err(LinkError::Forged);
            }
            let read = self.keys.read_message(self.next, part, &mut plain[at..]).map_err(|_| LinkError::Forged)?;
            self.next += 1;
            at += read;
        }
        Ok(at)
    }
}

/// Room a sealed frame needs beyond its plain length.
fn sealed_len(plain_max: usize) -> usize {
    plain_max + (plain_max.div_ceil(PART).max(1)) * TAG
}

/// The frame codec of every connection: length-prefixed frames, sealed once the link's
/// handshake is done (TCP), plain on the Unix socket (the kernel names the peer there).
pub struct LinkCodec {
    inner: LengthDelimitedCodec,
    sealer: Option<Sealer>,
    opener: Option<Opener>,
    /// The budget incoming frames take from, if any, and what the frame being read (or
    /// the last one read, until it is handled) took.
    budget: Option<crate::budget::FrameBudget>,
    held: Option<crate::budget::Held>,
    reading: bool,
}

impl LinkCodec {
    /// Plain frames of at most `max_frame_len` bytes.
    pub fn plain(max_frame_len: usize) -> LinkCodec {
        LinkCodec {
            inner: length_codec(max_frame_len),
            sealer: None,
            opener: None,
            budget: None,
            held: None,
            reading: false,
        }
    }

    /// Each incoming frame takes its length from `budget` while it is read and handled.
    pub fn with_budget(mut self, budget: crate::budget::FrameBudget) -> LinkCodec {
        self.budget = Some(budget);
        self
    }

    /// Takes an incoming frame's length from the budget as soon as its header is in, before
    /// its body is buffered; the last frame's bytes come back first, since a connection
    /// asks for its next frame only once it has handled the last.
    fn take_budget(&mut self, src: &BytesMut) -> Result<(), io::Error> {
        let Some(budget) = &self.budget else { return Ok(()) };
        if self.reading {
            return Ok(());
        }
        self.held = None;
        let Some(header) = src.first_chunk::<4>() else { return Ok(()) };
        let len = u32::from_be_bytes(*header) as usize;
        if len > self.inner.max_frame_length() || len <= crate::budget::FREE_FRAME_LEN {
            // Too large: refused by the frame reader, with its own error. Small: free, so
            // a user whose big frames are in flight can still say Hello and ask things.
            return Ok(());
        }
        match budget.budget.take(budget.holder, len) {
            Some(held) => {
                self.held = Some(held);
                self.reading = true;
                Ok(())
            }
            None => Err(io::Error::new(
                io::ErrorKind::OutOfMemory,
                "the frames this user has in flight already take the bytes they may",
            )),
        }
    }

    /// A TCP link before its handshake: frames of at most [`PRE_AUTH_FRAME_LEN`].
    pub fn unauthenticated() -> LinkCodec {
        LinkCodec::plain(PRE_AUTH_FRAME_LEN)
    }

    /// From now on every frame is sealed, and may carry up to `max_frame_len` plain bytes.
    pub fn seal_with(&mut self, keys: LinkKeys, max_frame_len: usize) {
        let (sealer, opener) = keys.split();
        self.sealer = Some(sealer);
        self.opener = Some(opener);
        self.inner.set_max_frame_length(sealed_len(max_frame_len));
    }

    /// A sealed link's frames may from now on carry up to `max_frame_len` plain bytes
    /// (a command's link, once its peer proved who it is).
    pub fn set_max_frame_len(&mut self, max_frame_len: usize) {
        self.inner.set_max_frame_length(sealed_len(max_frame_len));
    }

    /// Whether frames are sealed.
    pub fn is_sealed(&self) -> bool {
        self.opener.is_some()
    }
}

impl Decoder for LinkCodec {
    type Item = BytesMut;
    type Error = io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<BytesMut>, io::Error> {
        self.take_budget(src)?;
        let Some(frame) = self.inner.decode(src)? else { return Ok(None) };
        self.reading = false;
        match &mut self.opener {
            None => Ok(Some(frame)),
            Some(opener) => {
                let mut plain = BytesMut::zeroed(frame.len());
                match opener.open_into(&frame, &mut plain) {
                    Ok(len) => {
                        plain.truncate(len);
                        Ok(Some(plain))
                    }
                    Err(e) => Err(io::Error::new(io::ErrorKind::InvalidData, e)),
                }
            }
        }
    }
}

impl Encoder<Bytes> for LinkCodec {
    type Error = io::Error;

    fn encode(&mut self, item: Bytes, dst: &mut BytesMut) -> Result<(), io::Error> {
        match &mut self.sealer {
            None => self.inner.encode(item, dst),
            Some(sealer) => {
                let sealed = sealer.seal(&item).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                self.inner.encode(Bytes::from(sealed), dst)
            }
        }
    }
}

/// A connection framed by [`LinkCodec`].
pub type LinkConn<S> = Framed<S, LinkCodec>;

/// Sends one message (flushed).
pub async fn send<S, T>(conn: &mut LinkConn<S>, message: &T) -> Result<(), LinkError>
where
    S: AsyncRead + AsyncWrite + Unpin,
    T: Serialize,
{
    let bytes = serde_json::to_vec(message).map_err(FrameError::from)?;
    conn.send(Bytes::from(bytes)).await?;
    Ok(())
}

/// Reads one message of a handshake, within [`HANDSHAKE_TIMEOUT`].
pub async fn recv<S, T>(conn: &mut LinkConn<S>) -> Result<T, LinkError>
where
    S: AsyncRead + AsyncWrite + Unpin,
    T: DeserializeOwned,
{
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, conn.next()).await {
        Err(_) => Err(LinkError::Protocol("timed out".into())),
        Ok(None) => Err(LinkError::Protocol("the peer closed the connection".into())),
        Ok(Some(Err(e))) => Err(e.into()),
        Ok(Some(Ok(bytes))) => Ok(serde_json::from_slice(&bytes).map_err(FrameError::from)?),
    }
}

/// The Hello that opens a link as `me` towards `peer`, carrying the handshake's first
/// message, and the handshake waiting for the answer.
pub fn hello(key: &[u8], me: &Role, peer: &Role) -> Result<(Hello, Initiation), LinkError> {
    let (initiation, first) = Initiation::start(key, me, peer)?;
    Ok((Hello { version: PROTOCOL_VERSION, role: me.clone(), noise: Some(hex(&first)), auth: None }, initiation))
}

/// Reads the answer to a Hello sent by [`hello`]: a refusal, or the handshake's second
/// message (checked here) before the sealed Welcome. Returns the keys and the handshake
/// message's bytes consumed.
fn answer(reply: HelloReply, initiation: Initiation) -> Result<LinkKeys, LinkError> {
    match reply {
        HelloReply::Handshake { noise } => {
            let answer = unhex(&noise).ok_or_else(|| LinkError::Protocol("bad handshake message".into()))?;
            initiation.finish(&answer)
        }
        HelloReply::Refused { code, message } => Err(LinkError::Refused { code, message }),
        HelloReply::Welcome { .. } => Err(LinkError::Protocol("welcomed without a handshake".into())),
    }
}

/// The accepting side's answer to a TCP peer's Hello, before anything else is read: checks
/// the peer's proof for a link from the role it claims to `me`, answers with our proof, and
/// seals the connection. The caller then sends the (sealed) Welcome, or on an error, logs
/// it with the peer's address and closes.
pub async fn accept<S>(
    conn: &mut LinkConn<S>,
    key: &[u8],
    me: &Role,
    hello: &Hello,
    max_frame_len: usize,
) -> Result<(), LinkError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (answer, keys) = answer_hello(key, me, hello)?;
    send(conn, &answer).await?;
    conn.codec_mut().seal_with(keys, max_frame_len);
    Ok(())
}

/// Checks the handshake message a Hello carries for a link from the role it claims to
/// `me`; returns the reply that answers it and the link's keys.
fn answer_hello(key: &[u8], me: &Role, hello: &Hello) -> Result<(HelloReply, LinkKeys), LinkError> {
    let first = hello
        .noise
        .as_deref()
        .and_then(unhex)
        .ok_or_else(|| LinkError::Protocol("no handshake message in the Hello".into()))?;
    let (answer, keys) = respond(key, &hello.role, me, &first)?;
    Ok((HelloReply::Handshake { noise: hex(&answer) }, keys))
}

/// The connecting side of a TCP link, async: Hello and proof out, the peer's proof checked,
/// the connection sealed, the sealed Welcome read. Returns the name the peer gave.
pub async fn connect<S>(
    conn: &mut LinkConn<S>,
    key: &[u8],
    me: &Role,
    peer: &Role,
    max_frame_len: usize,
) -> Result<String, LinkError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (hello, initiation) = hello(key, me, peer)?;
    send(conn, &hello).await?;
    let keys = answer(recv(conn).await?, initiation)?;
    conn.codec_mut().seal_with(keys, max_frame_len);
    welcomed(recv(conn).await?)
}

fn welcomed(reply: HelloReply) -> Result<String, LinkError> {
    match reply {
        HelloReply::Welcome { server_name, .. } => Ok(server_name),
        HelloReply::Refused { code, message } => Err(LinkError::Refused { code, message }),
        HelloReply::Handshake { .. } => Err(LinkError::Protocol("a second handshake message".into())),
    }
}

/// The connecting side of a TCP link for blocking code (the scheduler, commands and tests):
/// the same exchange as [`connect`]. Returns the peer's name and the two halves of the
/// sealed link.
pub fn connect_blocking(
    reader: &mut impl Read,
    writer: &mut impl Write,
    key: &[u8],
    me: &Role,
    peer: &Role,
) -> Result<(String, Sealer, Opener), LinkError> {
    let (hello, initiation) = hello(key, me, peer)?;
    crate::codec::write_frame(writer, &hello)?;
    let reply: HelloReply = crate::codec::read_frame(reader, PRE_AUTH_FRAME_LEN)?
        .ok_or_else(|| LinkError::Protocol("the peer closed the connection".into()))?;
    let (sealer, mut opener) = answer(reply, initiation)?.split();
    let welcome: HelloReply = read_sealed(reader, &mut opener, PRE_AUTH_FRAME_LEN)?
        .ok_or_else(|| LinkError::Protocol("the peer closed the connection".into()))?;
    Ok((welcomed(welcome)?, sealer, opener))
}

/// The accepting side of a TCP link for blocking code (tests' fake servers): the same
/// exchange as [`accept`], after the caller has read the Hello. The caller sends the
/// Welcome, sealed.
pub fn accept_blocking(
    writer: &mut impl Write,
    key: &[u8],
    me: &Role,
    hello: &Hello,
) -> Result<(Sealer, Opener), LinkError> {
    let (answer, keys) = answer_hello(key, me, hello)?;
    crate::codec::write_frame(writer, &answer)?;
    Ok(keys.split())
}

/// Writes one sealed frame and flushes.
pub fn write_sealed<T: Serialize>(writer: &mut impl Write, sealer: &mut Sealer, message: &T) -> Result<(), LinkError> {
    let plain = serde_json::to_vec(message).map_err(FrameError::from)?;
    let sealed = sealer.seal(&plain)?;
    let len = u32::try_from(sealed.len()).map_err(|_| FrameError::TooLarge(sealed.len()))?;
    writer.write_all(&len.to_be_bytes())?;
    writer.write_all(&sealed)?;
    writer.flush()?;
    Ok(())
}

/// Reads one sealed frame of at most `max_len` plain bytes. `Ok(None)` is a clean end of
/// stream between frames.
pub fn read_sealed<T: DeserializeOwned>(
    reader: &mut impl Read,
    opener: &mut Opener,
    max_len: usize,
) -> Result<Option<T>, LinkError> {
    let Some(sealed) = crate::codec::read_body(reader, sealed_len(max_len))? else { return Ok(None) };
    let plain = opener.open(&sealed)?;
    Ok(Some(serde_json::from_slice(&plain).map_err(FrameError::from)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"the cluster key";

    type Halves = (Sealer, Opener);

    fn mom(node: &str) -> Role {
        Role::Mom { node: node.into() }
    }

    fn link(key_i: &[u8], key_r: &[u8], me: &Role, peer: &Role) -> Result<(Halves, Halves), LinkError> {
        let (initiation, first) = Initiation::start(key_i, me, peer)?;
        let (answer, responder) = respond(key_r, me, peer, &first)?;
        Ok((initiation.finish(&answer)?.split(), responder.split()))
    }

    #[test]
    fn both_ends_with_the_key_exchange_frames_both_ways() {
        let ((mut i_seal, mut i_open), (mut r_seal, mut r_open)) = link(KEY, KEY, &Role::Server, &mom("n1")).unwrap();
        for plain in [&b""[..], b"{}", &vec![7u8; 3 * PART + 5], &vec![1u8; PART], &vec![2u8; 2 * PART]] {
            assert_eq!(r_open.open(&i_seal.seal(plain).unwrap()).unwrap(), plain);
            assert_eq!(i_open.open(&r_seal.seal(plain).unwrap()).unwrap(), plain);
        }
    }

    #[test]
    fn a_peer_without_the_key_fails_the_first_message() {
        assert!(matches!(link(b"wrong", KEY, &Role::Scheduler, &Role::Server), Err(LinkError::Proof(_))));
    }

    #[test]
    fn a_responder_without_the_key_is_caught_by_the_initiator() {
        let (initiation, first) = Initiation::start(KEY, &Role::Server, &mom("n1")).unwrap();
        // A fake mom cannot even read the first message; answering with a handshake made
        // under another key fails at the initiator.
        assert!(respond(b"wrong", &Role::Server, &mom("n1"), &first).is_err());
        let (_, first_fake) = Initiation::start(b"wrong", &Role::Server, &mom("n1")).unwrap();
        let (answer, _) = respond(b"wrong", &Role::Server, &mom("n1"), &first_fake).unwrap();
        assert!(matches!(initiation.finish(&answer), Err(LinkError::Proof(_))));
    }

    #[test]
    fn a_mom_key_proves_nothing_towards_another_mom_or_the_server() {
        let master = b"the master key";
        let n1 = crate::keys::derive(master, &mom("n1"));
        let n2 = crate::keys::derive(master, &mom("n2"));
        // The server links to each mom with that node's key.
        assert!(link(&n1, &n1, &Role::Server, &mom("n1")).is_ok());
        // Root on n1 posing as the server to n2's mom, with n1's key or the master.
        assert!(matches!(link(&n1, &n2, &Role::Server, &mom("n2")), Err(LinkError::Proof(_))));
        assert!(matches!(link(master, &n2, &Role::Server, &mom("n2")), Err(LinkError::Proof(_))));
        // Root on n1 listening on n2's port, answering the server's handshake for n2.
        let (initiation, first) = Initiation::start(&n2, &Role::Server, &mom("n2")).unwrap();
        assert!(respond(&n1, &Role::Server, &mom("n2"), &first).is_err());
        let (_, own_first) = Initiation::start(&n1, &Role::Server, &mom("n2")).unwrap();
        let (answer, _) = respond(&n1, &Role::Server, &mom("n2"), &own_first).unwrap();
        assert!(matches!(initiation.finish(&answer), Err(LinkError::Proof(_))));
        // Root on n1 posing as the scheduler.
        let sched = crate::keys::derive(master, &Role::Scheduler);
        assert!(matches!(link(&n1, &sched, &Role::Scheduler, &Role::Server), Err(LinkError::Proof(_))));
        assert!(link(&sched, &sched, &Role::Scheduler, &Role::Server).is_ok());
    }

    #[test]
    fn a_first_message_relayed_under_another_role_is_refused() {
        // The server's first message towards mom n1, presented to the server's listener as
        // a scheduler's or a mom's, or to another mom.
        let (_, first) = Initiation::start(KEY, &Role::Server, &mom("n1")).unwrap();
        assert!(respond(KEY, &Role::Scheduler, &Role::Server, &first).is_err());
        assert!(respond(KEY, &mom("n1"), &Role::Server, &first).is_err());
        assert!(respond(KEY, &Role::Server, &Role::Server, &first).is_err());
        assert!(respond(KEY, &Role::Server, &mom("n2"), &first).is_err());
        assert!(respond(KEY, &Role::Server, &mom("n1"), &first).is_ok());
    }

    #[test]
    fn an_answer_reflected_or_relayed_from_another_handshake_is_refused() {
        let (initiation, _) = Initiation::start(KEY, &Role::Server, &mom("n1")).unwrap();
        // An answer the server's own listener gave to another connection (same key).
        let (_, other_first) = Initiation::start(KEY, &Role::Scheduler, &Role::Server).unwrap();
        let (other_answer, _) = respond(KEY, &Role::Scheduler, &Role::Server, &other_first).unwrap();
        assert!(matches!(initiation.finish(&other_answer), Err(LinkError::Proof(_))));
        // The initiator's own first message, reflected back as the answer.
        let (initiation, first) = Initiation::start(KEY, &Role::Server, &mom("n1")).unwrap();
        assert!(initiation.finish(&first).is_err());
    }

    #[test]
    fn a_replayed_handshake_gives_the_replayer_no_usable_link() {
        let (initiation, first) = Initiation::start(KEY, &Role::Scheduler, &Role::Server).unwrap();
        let (answer, _) = respond(KEY, &Role::Scheduler, &Role::Server, &first).unwrap();
        let (mut sealer, _) = initiation.finish(&answer).unwrap().split();
        let recorded = sealer.seal(b"{\"recorded\":1}").unwrap();
        // The same first message again: the responder answers with fresh keys, and the
        // recorded frame opens under none of them.
        let (_, replayed) = respond(KEY, &Role::Scheduler, &Role::Server, &first).unwrap();
        let (_, mut opener) = replayed.split();
        assert!(matches!(opener.open(&recorded), Err(LinkError::Forged)));
    }

    #[test]
    fn modified_replayed_reordered_and_reflected_frames_fail() {
        let ((mut i_seal, mut i_open), (_, mut r_open)) = link(KEY, KEY, &Role::Scheduler, &Role::Server).unwrap();
        let mut modified = i_seal.seal(b"one").unwrap();
        modified[0] ^= 1;
        assert!(matches!(r_open.open(&modified), Err(LinkError::Forged)));
        // A frame reflected back to its sender does not open there: each direction has
        // its own key.
        let reflected = i_seal.seal(b"to the responder").unwrap();
        assert!(matches!(i_open.open(&reflected), Err(LinkError::Forged)));

        // On a fresh link, replays and reorders fail.
        let ((mut i_seal, _), (_, mut r_open)) = link(KEY, KEY, &Role::Scheduler, &Role::Server).unwrap();
        let one = i_seal.seal(b"one").unwrap();
        let two = i_seal.seal(b"two").unwrap();
        assert!(matches!(r_open.open(&two), Err(LinkError::Forged)));
        assert_eq!(r_open.open(&one).unwrap(), b"one");
        assert!(matches!(r_open.open(&one), Err(LinkError::Forged)));
        // Truncated or empty frames fail.
        assert!(matches!(r_open.open(&[]), Err(LinkError::Forged)));
        assert!(matches!(r_open.open(&two[..10]), Err(LinkError::Forged)));
    }

    #[test]
    fn the_codec_seals_after_the_handshake_and_rejects_a_forged_frame() {
        let ((i_seal, i_open), (r_seal, r_open)) = link(KEY, KEY, &Role::Scheduler, &Role::Server).unwrap();
        let mut sender = LinkCodec::plain(1024);
        sender.sealer = Some(i_seal);
        sender.opener = Some(i_open);
        let mut receiver = LinkCodec::plain(1024);
        receiver.sealer = Some(r_seal);
        receiver.opener = Some(r_open);
        let mut wire = BytesMut::new();
        sender.encode(Bytes::from_static(b"hello"), &mut wire).unwrap();
        let mut copy = wire.clone();
        assert_eq!(&receiver.decode(&mut wire).unwrap().unwrap()[..], b"hello");
        // The same bytes again: a replay.
        assert!(receiver.decode(&mut copy).is_err());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

        /// Whatever a peer on the path sends in place of a sealed frame, or of a handshake
        /// message, is refused without a panic.
        #[test]
        fn made_up_frames_and_handshakes_never_open(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..70_000)) {
            let (_, (_, mut opener)) = link(KEY, KEY, &Role::Scheduler, &Role::Server).unwrap();
            proptest::prop_assert!(opener.open(&bytes).is_err());
            proptest::prop_assert!(respond(KEY, &Role::Scheduler, &Role::Server, &bytes).is_err());
            let (initiation, _) = Initiation::start(KEY, &Role::Server, &mom("n1")).unwrap();
            proptest::prop_assert!(initiation.finish(&bytes).is_err());
        }
    }

    #[test]
    fn an_unauthenticated_peer_cannot_send_a_large_frame() {
        let mut codec = LinkCodec::unauthenticated();
        let mut wire = BytesMut::from(&((PRE_AUTH_FRAME_LEN + 1) as u32).to_be_bytes()[..]);
        assert!(codec.decode(&mut wire).is_err());
    }
}
