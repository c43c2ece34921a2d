//! Commands on other hosts (issue 49's first part): a TCP peer whose Hello names `munge`
//! gets an unkeyed link (`pbs_proto::link::respond_unkeyed`), then proves its real uid with
//! a MUNGE credential that names the handshake's hash, decoded by this host's munged off
//! the state lock and within a deadline; the server answers with its own credential, so
//! the command knows it reached a holder of the site's munge key running as a service
//! user. The caller is then the user of that uid in this host's password database, on
//! the host its address resolves to, with `remote` set: its uid 0 is no root here.
//!
//! Anything else (another method, a method this server does not accept, a credential of
//! another key, replayed, expired or made for another link, a uid unknown here) is refused
//! with the peer's address in the log. There is no fallback to anything weaker.

use std::net::IpAddr;

use pbs_core::Pbse;
use pbs_proto::auth::{hex, unhex};
use pbs_proto::link::{HANDSHAKE_TIMEOUT, LinkConn, PRE_AUTH_FRAME_LEN, munge_payload, recv, respond_unkeyed, send};
use pbs_proto::messages::AuthProof;
use pbs_proto::{Hello, HelloReply, MAX_REQUEST_FRAME_LEN, Role};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::identity::Identity;
use crate::server::Server;

/// The one method a command may prove itself with.
pub const MUNGE: &str = "munge";

/// Runs the unkeyed handshake and the MUNGE proofs with a command at `addr`; gives who it
/// is, or why it is refused.
pub async fn authenticate<S>(
    server: &Server,
    conn: &mut LinkConn<S>,
    hello: &Hello,
    addr: &str,
) -> Result<Identity, (Pbse, String)>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let method = hello.auth.as_deref().unwrap_or_default().to_ascii_lowercase();
    if method != MUNGE || !server.config.auth_methods.iter().any(|m| m == MUNGE) {
        return Err((Pbse::NOSUP, format!("authentication method {method:?} is not supported by this server")));
    }
    if !matches!(hello.role, Role::Client) {
        return Err((Pbse::PERM, format!("the role {:?} does not prove itself with munge", hello.role)));
    }
    let first = hello.noise.as_deref().and_then(unhex).ok_or((Pbse::PROTOCOL, "no handshake message".to_string()))?;
    let (answer, keys, hash) = respond_unkeyed(&first).map_err(|e| (Pbse::PROTOCOL, e.to_string()))?;
    let gone = |e: pbs_proto::link::LinkError| (Pbse::PROTOCOL, e.to_string());
    send(conn, &HelloReply::Handshake { noise: hex(&answer) }).await.map_err(gone)?;
    conn.codec_mut().seal_with(keys, PRE_AUTH_FRAME_LEN);
    let proof: AuthProof = recv(conn).await.map_err(|e| (Pbse::BADCRED, format!("no credential: {e}")))?;
    let munge = pbs_munge::Munge::new(&server.config.munge_socket).with_timeout(HANDSHAKE_TIMEOUT);
    let expected = munge_payload("client", &hash);
    let ip = addr.parse::<std::net::SocketAddr>().map(|a| a.ip()).ok();
    let decoded = tokio::task::spawn_blocking(move || {
        let credential = munge.decode(&proof.credential)?;
        let ours = munge.encode(&munge_payload("server", &hash))?;
        Ok::<_, pbs_munge::MungeError>((credential, ours, ip.map(host_of)))
    });
    let (credential, ours, host) = match tokio::time::timeout(HANDSHAKE_TIMEOUT, decoded).await {
        Ok(Ok(Ok(done))) => done,
        Ok(Ok(Err(e))) => {
            return Err((
                Pbse::BADCRED,
                format!("MUNGE user-authentication on decode failed with `{}`: {e}", e.code().text()),
            ));
        }
        Ok(Err(_)) | Err(_) => return Err((Pbse::BADCRED, "munged did not answer in time".to_string())),
    };
    if credential.payload != expected {
        return Err((Pbse::BADCRED, "the credential was not made for this connection".to_string()));
    }
    let user = nix::unistd::User::from_uid(credential.uid.into())
        .ok()
        .flatten()
        .ok_or_else(|| (Pbse::BADCRED, format!("uid {} does not exist on this host", credential.uid)))?;
    let group = nix::unistd::Group::from_gid(user.gid).ok().flatten().map_or_else(|| user.gid.to_string(), |g| g.name);
    send(conn, &AuthProof { credential: ours }).await.map_err(gone)?;
    conn.codec_mut().set_max_frame_len(MAX_REQUEST_FRAME_LEN);
    let host = host.unwrap_or_else(|| addr.to_string());
    tracing::info!(object_type = "Server", "{}@{host} authenticated by munge from {addr}", user.name);
    Ok(Identity { user: user.name, group, uid: credential.uid, host, daemon: false, remote: true })
}

/// The name `ip` resolves to, as OpenPBS names a peer's host; its text when it has none.
fn host_of(ip: IpAddr) -> String {
    let addr = std::net::SocketAddr::new(ip, 0);
    let (storage, len) = sockaddr(&addr);
    let mut host = [0 as libc::c_char; 1025];
    // SAFETY: `storage` holds a socket address of `len` bytes; `host` is a buffer of the
    // length passed; no service is asked for.
    let rc = unsafe {
        libc::getnameinfo(
            (&raw const storage).cast(),
            len,
            host.as_mut_ptr(),
            host.len() as libc::socklen_t,
            std::ptr::null_mut(),
            0,
            libc::NI_NAMEREQD,
        )
    };
    if rc != 0 {
        return ip.to_string();
    }
    // SAFETY: getnameinfo wrote a NUL-terminated name into `host`.
    let name = unsafe { std::ffi::CStr::from_ptr(host.as_ptr()) };
    name.to_string_lossy().into_owned()
}

fn sockaddr(addr: &std::net::SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: an all-zero sockaddr_storage is valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        std::net::SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(v4.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in and suitably aligned.
            unsafe { std::ptr::write((&raw mut storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        std::net::SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: 0,
                sin6_addr: libc::in6_addr { s6_addr: v6.ip().octets() },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write((&raw mut storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loopback_address_resolves_to_a_name() {
        let name = host_of("127.0.0.1".parse().unwrap_or(IpAddr::from([127, 0, 0, 1])));
        assert!(!name.is_empty() && name != "127.0.0.1", "{name}");
    }
}
