//! Connection admission shared by the daemons' listeners: how many connections are served
//! at once, how many one holder (a local uid, a remote address) may have among them, and
//! the deadline a frame has once its first byte arrived ([`FrameDeadline`]).
//!
//! A connection over a limit is refused at once rather than left in the listen backlog: a
//! backlog is first come, first served, so one user who fills it would lock everyone out.
//!
//! TCP peers pass a [`Gate`]: a connection still in its handshake holds a place among a
//! few, and when they are all taken the newest arrival takes the place of an older one
//! (the oldest of the address holding the most), which is closed. Only a connection whose
//! peer proved its key moves on to the pool of authenticated connections, which
//! unauthenticated peers therefore never hold. A real daemon's handshake takes
//! milliseconds; to keep one out, a peer without the key would have to open as many
//! connections as there are places within those milliseconds, again and again, instead of
//! opening them once and holding them.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::{Instant, Sleep};

/// Why a connection was not admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Every slot of this kind of connection is taken.
    #[error("all {0} connections are in use")]
    Full(usize),
    /// This holder already has its share.
    #[error("the peer already holds {0} connections, its limit")]
    HolderCap(usize),
}

/// A pool of connection slots with a cap per holder.
pub struct Limiter<K> {
    slots: Arc<Semaphore>,
    size: usize,
    per_holder: usize,
    held: Mutex<HashMap<K, usize>>,
}

/// One admitted connection: its slot and its holder's count come back when dropped.
pub struct Permit<K: Eq + Hash> {
    _slot: OwnedSemaphorePermit,
    holder: Option<K>,
    limiter: Arc<Limiter<K>>,
}

impl<K: Eq + Hash> Drop for Permit<K> {
    fn drop(&mut self) {
        let Some(holder) = self.holder.take() else { return };
        let mut held = self.limiter.held.lock().unwrap_or_else(PoisonError::into_inner);
        release(&mut held, &holder);
    }
}

impl<K: Eq + Hash + Clone> Limiter<K> {
    /// `size` connections at once, at most `per_holder` of them for one holder.
    pub fn new(size: usize, per_holder: usize) -> Arc<Limiter<K>> {
        Arc::new(Limiter { slots: Arc::new(Semaphore::new(size)), size, per_holder, held: Mutex::default() })
    }

    /// A slot for `holder`, counted against its cap unless `holder` is `None` (a trusted
    /// peer, still bound by the pool's size).
    pub fn admit(self: &Arc<Self>, holder: Option<&K>) -> Result<Permit<K>, Refusal> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(holder) = holder
            && held.get(holder).is_some_and(|&n| n >= self.per_holder)
        {
            return Err(Refusal::HolderCap(self.per_holder));
        }
        let slot = self.slots.clone().try_acquire_owned().map_err(|_| Refusal::Full(self.size))?;
        if let Some(holder) = holder {
            *held.entry(holder.clone()).or_insert(0) += 1;
        }
        drop(held);
        Ok(Permit { _slot: slot, holder: holder.cloned(), limiter: self.clone() })
    }

    /// Connections served now.
    pub fn in_use(&self) -> usize {
        self.size - self.slots.available_permits()
    }

    /// Waits until every connection has ended, or `timeout` passed.
    pub async fn drain(&self, timeout: Duration) {
        let all = u32::try_from(self.size).unwrap_or(u32::MAX);
        let _ = tokio::time::timeout(timeout, self.slots.acquire_many(all)).await;
    }
}

/// Gives back one of `holder`'s places in a count of places per holder.
fn release<K: Eq + Hash>(counts: &mut HashMap<K, usize>, holder: &K) {
    if let Some(count) = counts.get_mut(holder) {
        *count = count.saturating_sub(1);
        if *count == 0 {
            counts.remove(holder);
        }
    }
}

/// Admission of peers that must authenticate: a few places for connections in their
/// handshake, where the newest always gets in, and a [`Limiter`] for those that finished it.
pub struct Gate<K> {
    pending: Mutex<Pending<K>>,
    pending_size: usize,
    authenticated: Arc<Limiter<K>>,
}

/// The connections in their handshake, oldest first (by arrival number).
struct Pending<K> {
    next: u64,
    /// Each connection's holder and the sender it watches: dropping the sender evicts it.
    entries: BTreeMap<u64, (K, watch::Sender<()>)>,
    per_holder: HashMap<K, usize>,
}

impl<K: Eq + Hash + Clone> Pending<K> {
    fn remove(&mut self, id: u64) -> bool {
        let Some((holder, _evict)) = self.entries.remove(&id) else { return false };
        release(&mut self.per_holder, &holder);
        true
    }

    /// The connection to close for a newcomer: the oldest of the holder with the most, so
    /// that one address flooding the gate evicts its own connections before anyone else's.
    fn victim(&self) -> Option<u64> {
        let most = self.per_holder.values().copied().max()?;
        self.entries.iter().find(|(_, (holder, _))| self.per_holder.get(holder) == Some(&most)).map(|(&id, _)| id)
    }
}

/// A connection in its handshake: its place at the [`Gate`], given back when it is
/// dropped or authenticated.
pub struct Entry<K: Eq + Hash + Clone> {
    id: u64,
    evicted: watch::Receiver<()>,
    holder: K,
    gate: Arc<Gate<K>>,
}

impl<K: Eq + Hash + Clone> Gate<K> {
    /// `pending` places for connections in their handshake, and `authenticated`
    /// connections at once after it, at most `per_holder` of those for one holder.
    pub fn new(pending: usize, authenticated: usize, per_holder: usize) -> Arc<Gate<K>> {
        Arc::new(Gate {
            pending: Mutex::new(Pending { next: 0, entries: BTreeMap::new(), per_holder: HashMap::new() }),
            pending_size: pending.max(1),
            authenticated: Limiter::new(authenticated, per_holder),
        })
    }

    /// A place for a new connection from `holder`, evicting an older one in its handshake
    /// if every place is taken. Never refuses.
    pub fn enter(self: &Arc<Self>, holder: K) -> Entry<K> {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        while pending.entries.len() >= self.pending_size {
            let Some(victim) = pending.victim() else { break };
            pending.remove(victim);
        }
        let id = pending.next;
        pending.next += 1;
        let (evict, evicted) = watch::channel(());
        pending.entries.insert(id, (holder.clone(), evict));
        *pending.per_holder.entry(holder.clone()).or_insert(0) += 1;
        Entry { id, evicted, holder, gate: self.clone() }
    }

    /// Connections in their handshake now.
    #[cfg(test)]
    fn pending(&self) -> usize {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).entries.len()
    }

    /// The pool of authenticated connections.
    pub fn authenticated(&self) -> &Arc<Limiter<K>> {
        &self.authenticated
    }
}

impl<K: Eq + Hash + Clone> Entry<K> {
    /// Runs `handshake` unless a newer connection takes this one's place first (`None`).
    pub async fn unless_evicted<F: Future>(&mut self, handshake: F) -> Option<F::Output> {
        tokio::select! {
            out = handshake => Some(out),
            // The sender is only ever dropped, never sent on: `changed` fails when it is.
            _ = self.evicted.changed() => None,
        }
    }

    /// The peer proved its key: leaves the handshake places for a slot among the
    /// authenticated connections, or the refusal if those are all taken.
    pub fn authenticated(self) -> Result<Permit<K>, Refusal> {
        self.gate.authenticated.admit(Some(&self.holder))
    }
}

impl<K: Eq + Hash + Clone> Drop for Entry<K> {
    fn drop(&mut self) {
        self.gate.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(self.id);
    }
}

/// A stream whose reads fail with `TimedOut` when a frame (4-byte big-endian length, then
/// the body) has begun but is not complete `deadline` after its first byte arrived, and
/// the peer has nothing more to give: a peer that sends half a frame and stalls is dropped,
/// while an idle peer between frames waits as long as it likes.
///
/// The deadline is checked only when the peer has nothing to read: bytes that waited in
/// the socket while the server was busy with the previous request are not the peer's delay.
pub struct FrameDeadline<S> {
    inner: S,
    deadline: Duration,
    /// Bytes of the current frame's length prefix seen (0 between frames).
    header_seen: usize,
    header: [u8; 4],
    /// Bytes of the current frame's body still to come.
    body_left: u64,
    /// When the frame in progress must be complete; `None` between frames.
    timer: Option<Pin<Box<Sleep>>>,
    armed: bool,
}

impl<S> FrameDeadline<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, deadline: Duration) -> FrameDeadline<S> {
        FrameDeadline { inner, deadline, header_seen: 0, header: [0; 4], body_left: 0, timer: None, armed: false }
    }

    /// The wrapped stream.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Follows frame boundaries through `bytes`, just read from the peer.
    fn track(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.body_left > 0 {
                let take = usize::try_from(self.body_left).unwrap_or(usize::MAX).min(bytes.len());
                self.body_left -= take as u64;
                bytes = &bytes[take..];
                continue;
            }
            let take = (4 - self.header_seen).min(bytes.len());
            self.header[self.header_seen..self.header_seen + take].copy_from_slice(&bytes[..take]);
            self.header_seen += take;
            bytes = &bytes[take..];
            if self.header_seen == 4 {
                self.header_seen = 0;
                self.body_left = u64::from(u32::from_be_bytes(self.header));
            }
        }
    }

    fn in_frame(&self) -> bool {
        self.header_seen > 0 || self.body_left > 0
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for FrameDeadline<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let filled = buf.filled().len();
                if filled > before {
                    this.track(&buf.filled()[before..]);
                    if !this.in_frame() {
                        this.armed = false;
                    } else if !this.armed {
                        this.armed = true;
                        let at = Instant::now() + this.deadline;
                        match this.timer.as_mut() {
                            Some(timer) => timer.as_mut().reset(at),
                            None => this.timer = Some(Box::pin(tokio::time::sleep_until(at))),
                        }
                    }
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => {
                if this.armed
                    && let Some(timer) = this.timer.as_mut()
                    && timer.as_mut().poll(cx).is_ready()
                {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("frame not complete {} s after its first byte", this.deadline.as_secs()),
                    )));
                }
                Poll::Pending
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for FrameDeadline<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[test]
    fn holders_are_capped_and_slots_come_back() {
        let limiter = Limiter::<u32>::new(3, 2);
        let a1 = limiter.admit(Some(&1)).unwrap();
        let _a2 = limiter.admit(Some(&1)).unwrap();
        assert_eq!(limiter.admit(Some(&1)).err(), Some(Refusal::HolderCap(2)));
        let _b = limiter.admit(Some(&2)).unwrap();
        assert_eq!(limiter.admit(None).err(), Some(Refusal::Full(3)));
        drop(a1);
        assert_eq!(limiter.in_use(), 2);
        let _a3 = limiter.admit(Some(&1)).unwrap();
        assert_eq!(limiter.admit(Some(&3)).err(), Some(Refusal::Full(3)));
    }

    /// Whether `entry` was evicted (its handshake would be cut short).
    async fn evicted(entry: &mut Entry<u32>) -> bool {
        entry.unless_evicted(std::future::pending::<()>()).now_or_never().is_some()
    }

    #[tokio::test]
    async fn a_newcomer_evicts_the_oldest_of_the_holder_with_the_most() {
        let gate = Gate::<u32>::new(4, 2, 2);
        // Holder 1 takes three places, holder 2 one.
        let mut a = gate.enter(1);
        let mut b = gate.enter(1);
        let mut c = gate.enter(2);
        let mut d = gate.enter(1);
        assert_eq!(gate.pending(), 4);
        // A fifth evicts holder 1's oldest, not holder 2's, though that is older than d.
        let mut e = gate.enter(3);
        assert!(evicted(&mut a).await);
        for entry in [&mut b, &mut c, &mut d, &mut e] {
            assert!(!evicted(entry).await);
        }
        assert_eq!(gate.pending(), 4);
        // Now holders 1 (b, d) have the most: b goes.
        let _f = gate.enter(4);
        assert!(evicted(&mut b).await);
        assert!(!evicted(&mut c).await);
        // An evicted entry gives nothing back twice when it is dropped.
        drop(a);
        drop(b);
        assert_eq!(gate.pending(), 4);
    }

    #[tokio::test]
    async fn an_authenticated_connection_leaves_the_handshake_places_and_cannot_be_evicted() {
        let gate = Gate::<u32>::new(2, 2, 2);
        let real = gate.enter(9);
        let slot = real.authenticated().unwrap();
        assert_eq!(gate.pending(), 0);
        assert_eq!(gate.authenticated().in_use(), 1);
        // However many connections that never authenticate come and go, the slot stays.
        let floods: Vec<_> = (0..100).map(|i| gate.enter(i)).collect();
        assert_eq!(gate.pending(), 2);
        assert_eq!(gate.authenticated().in_use(), 1);
        drop(floods);
        assert_eq!(gate.pending(), 0);
        // A newcomer among a full set of idle ones still gets through its handshake.
        let _idle: Vec<_> = (0..2).map(|i| gate.enter(100 + i)).collect();
        let mut late = gate.enter(9);
        assert!(!evicted(&mut late).await);
        let second = late.authenticated().unwrap();
        // The authenticated pool has its own limit, refused past it.
        assert_eq!(gate.enter(9).authenticated().err(), Some(Refusal::HolderCap(2)));
        drop((slot, second));
        assert_eq!(gate.authenticated().in_use(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_half_frame_times_out_and_an_idle_peer_does_not() {
        let (mut peer, ours) = tokio::io::duplex(1024);
        let mut ours = FrameDeadline::new(ours, Duration::from_secs(10));
        let mut buf = [0u8; 64];
        // Idle between frames: no deadline.
        let idle = tokio::time::timeout(Duration::from_secs(60), ours.read(&mut buf)).await;
        assert!(idle.is_err(), "an idle peer must not time out");
        // A whole frame, then half of the next.
        peer.write_all(b"\0\0\0\x02{}\0\0").await.unwrap();
        assert_eq!(ours.read(&mut buf).await.unwrap(), 8);
        let started = Instant::now();
        let err = ours.read(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_secs(9) && started.elapsed() <= Duration::from_secs(11));
    }

    #[tokio::test(start_paused = true)]
    async fn bytes_that_waited_in_the_socket_are_not_late() {
        let (mut peer, ours) = tokio::io::duplex(1024);
        let mut ours = FrameDeadline::new(ours, Duration::from_secs(10));
        let mut byte = [0u8; 1];
        peer.write_all(b"\0\0\0\x03ab").await.unwrap();
        // The server reads one byte, then is busy for longer than the deadline.
        ours.read_exact(&mut byte).await.unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
        peer.write_all(b"c").await.unwrap();
        let mut rest = [0u8; 6];
        ours.read_exact(&mut rest).await.unwrap();
        assert_eq!(&rest, b"\0\0\x03abc");
        // Between frames again: waiting is fine.
        assert!(tokio::time::timeout(Duration::from_secs(60), ours.read(&mut byte)).await.is_err());
    }
}
