//! The client library every command, the bench and the tests use to talk to pbs_server.
//!
//! It is blocking on purpose: a command sends one or two requests and exits, so a plain
//! socket beats starting an async runtime. Clients use the server's Unix socket, where the
//! server learns who they are from the kernel; off the server's host, or with
//! `PBS_AUTH_METHOD=munge`, they connect over TCP with an unkeyed link and prove their uid
//! with a MUNGE credential bound to it, and check the server's own (daemons link over TCP
//! through `pbs_proto::link` with their keys, not through this client).

use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::Shutdown;
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Arc;

use pbs_core::Pbse;
use pbs_core::conf::PbsConf;
use pbs_proto::{
    Attr, Criterion, FrameError, Hello, HelloReply, IdError, MAX_REPLY_FRAME_LEN, MgrAttr, MgrCommand, MgrObject,
    Reply, ReplyBody, Request, RequestFrame, Role, StatusObject, read_frame, write_frame,
};

/// Errors of the client library.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server could not be reached (commands print `cannot connect to server`).
    #[error("cannot connect to server {server} (errno={errno})")]
    Connect {
        /// Server name or socket path.
        server: String,
        /// The OS error number.
        errno: i32,
    },
    /// The connection broke or carried something that is not a valid frame.
    #[error("{0}")]
    Frame(#[from] FrameError),
    /// The server refused the handshake.
    #[error("{message}")]
    Refused {
        /// PBSE code.
        code: Pbse,
        /// Text.
        message: String,
    },
    /// The server answered the request with an error.
    #[error("{message}")]
    Server {
        /// PBSE code.
        code: Pbse,
        /// Text to print after `<cmd>: `.
        message: String,
    },
    /// The server answered with a reply that does not fit the request.
    #[error("Batch protocol error")]
    Protocol,
    /// This host's munged could not vouch for us, or the server's proof failed: OpenPBS's
    /// text, which commands print before `cannot connect to server` (errno 15010).
    #[error("{0}")]
    Auth(String),
}

impl ClientError {
    /// The PBSE code a command exits with (low byte), `PBSE_PROTOCOL` for transport trouble.
    pub fn pbse(&self) -> Pbse {
        match self {
            ClientError::Server { code, .. } | ClientError::Refused { code, .. } => *code,
            ClientError::Connect { .. } => Pbse::NOSERVER,
            ClientError::Frame(_) | ClientError::Protocol => Pbse::PROTOCOL,
            ClientError::Auth(_) => Pbse::SYSTEM,
        }
    }
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, ClientError>;

/// The socket of a connection.
enum Socket {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Socket {
    fn shutdown_write(&self) -> io::Result<()> {
        match self {
            Socket::Unix(s) => s.shutdown(Shutdown::Write),
            Socket::Tcp(s) => s.shutdown(Shutdown::Write),
        }
    }

    fn set_nonblocking(&self) -> io::Result<()> {
        match self {
            Socket::Unix(s) => s.set_nonblocking(true),
            Socket::Tcp(s) => s.set_nonblocking(true),
        }
    }

    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Socket::Unix(s) => s.as_fd(),
            Socket::Tcp(s) => s.as_fd(),
        }
    }

    /// Blocks until the socket is ready for `events`.
    ///
    /// Why not a blocking `recv`: a thread asleep in `recv` on a Unix socket is woken each
    /// time the server consumes what it sent (the kernel announces the freed send space on
    /// the same wait queue), finds nothing and sleeps again: two wakeups per request
    /// instead of one, and wakeups are what a round trip costs on a virtual machine. A
    /// `poll` waiter is only woken for the events it asked for.
    fn wait(&self, events: nix::poll::PollFlags) -> io::Result<()> {
        let mut fds = [nix::poll::PollFd::new(self.fd(), events)];
        loop {
            match nix::poll::poll(&mut fds, nix::poll::PollTimeout::NONE) {
                Ok(_) => return Ok(()),
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// One direction of a connection. Both directions share the socket (reads and writes go
/// through `&UnixStream`), which spares duplicating and closing a second descriptor. The
/// socket is non-blocking; a read or write that would block waits in [`Socket::wait`].
#[derive(Clone)]
struct Half(Arc<Socket>);

impl Half {
    /// Runs `op` on the socket until it does not report that it would block, waiting for
    /// `events` in between.
    fn until_ready<T>(
        &self,
        events: nix::poll::PollFlags,
        mut op: impl FnMut(&Socket) -> io::Result<T>,
    ) -> io::Result<T> {
        loop {
            match op(&self.0) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.0.wait(events)?,
                other => return other,
            }
        }
    }
}

impl Read for Half {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.until_ready(nix::poll::PollFlags::POLLIN, |socket| match socket {
            Socket::Unix(s) => (&*s).read(buf),
            Socket::Tcp(s) => (&*s).read(buf),
        })
    }
}

impl Write for Half {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.until_ready(nix::poll::PollFlags::POLLOUT, |socket| match socket {
            Socket::Unix(s) => (&*s).write(buf),
            Socket::Tcp(s) => (&*s).write(buf),
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A connection to pbs_server.
pub struct Client {
    socket: Arc<Socket>,
    reader: BufReader<Half>,
    writer: BufWriter<Half>,
    server_name: String,
    next_id: u64,
    /// The Hello is written but the server's Welcome not yet read: on the Unix socket the
    /// first request goes out right behind the Hello, saving a round trip per command.
    welcome_pending: bool,
    /// Set by [`Client::last_request`]: shut the sending side after the next request.
    closing: bool,
    /// On TCP: the link's two halves; every frame after the handshake is sealed.
    link: Option<(pbs_proto::link::Sealer, pbs_proto::link::Opener)>,
}

/// The uids a server's credential may come from: `PBS_AUTH_SERVICE_USERS` (a comma list of
/// user names, as OpenPBS reads it; default `root`) as this host's password database
/// numbers them. A name unknown here counts for nothing.
fn service_uids(conf: &PbsConf) -> Vec<u32> {
    let list = conf.raw.get("PBS_AUTH_SERVICE_USERS").map_or("root", String::as_str);
    list.split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .filter_map(|name| nix::unistd::User::from_name(name).ok().flatten())
        .map(|user| user.uid.as_raw())
        .collect()
}

/// The status of some objects plus the names that failed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusReply {
    /// Objects found, in server order.
    pub objects: Vec<StatusObject>,
    /// Per-name failures.
    pub errors: Vec<IdError>,
}

impl Client {
    /// Connects to the server named by pbs.conf: over its local Unix socket when this is
    /// its host (the socket is there) and `PBS_AUTH_METHOD` does not say otherwise, else
    /// over TCP proving who we are with MUNGE. A method other than `munge` is refused as
    /// OpenPBS refuses an unsupported one (errno 15029): `resvport`, which trusts a
    /// reserved port, proves nothing where anyone may be root on some host.
    pub fn connect(conf: &PbsConf) -> Result<Client> {
        let path = conf.server_socket();
        let server = conf.server.clone().unwrap_or_else(|| path.display().to_string());
        let method = conf.raw.get("PBS_AUTH_METHOD").map(|m| m.trim().to_ascii_lowercase());
        match method.as_deref() {
            None | Some("") if path.exists() => Client::connect_unix(&path, &server),
            None | Some("") | Some("munge") => {
                let socket = conf.raw.get("PBS_MUNGE_SOCKET").map_or(pbs_munge::DEFAULT_SOCKET, String::as_str);
                let host = conf.server.clone().unwrap_or_else(|| "localhost".to_string());
                Client::connect_munge(&host, conf.batch_port, &pbs_munge::Munge::new(socket), &service_uids(conf))
            }
            Some(_) => Err(ClientError::Connect { server, errno: Pbse::NOSUP.0 as i32 }),
        }
    }

    /// Connects over TCP to `host:port`, proving our uid with a credential from `munge`
    /// and checking the server's: made with the same key, by one of `service_uids`, for
    /// this very connection.
    pub fn connect_munge(host: &str, port: u16, munge: &pbs_munge::Munge, service_uids: &[u32]) -> Result<Client> {
        use pbs_proto::link::{PRE_AUTH_FRAME_LEN, UnkeyedInitiation, munge_payload, read_sealed, write_sealed};
        let no_server =
            |e: io::Error| ClientError::Connect { server: host.to_string(), errno: e.raw_os_error().unwrap_or(0) };
        let stream = TcpStream::connect((host, port)).map_err(no_server)?;
        let _ = stream.set_nodelay(true);
        let (initiation, first) = UnkeyedInitiation::start().map_err(|_| ClientError::Protocol)?;
        let socket = Socket::Tcp(stream);
        socket.set_nonblocking().map_err(|e| ClientError::Frame(e.into()))?;
        let mut client = Client::new(socket);
        let hello = Hello {
            version: pbs_proto::PROTOCOL_VERSION,
            role: Role::Client,
            noise: Some(pbs_proto::auth::hex(&first)),
            auth: Some("munge".into()),
        };
        write_frame(&mut client.writer, &hello)?;
        let answer = match read_frame(&mut client.reader, PRE_AUTH_FRAME_LEN)?.ok_or(ClientError::Protocol)? {
            HelloReply::Handshake { noise } => pbs_proto::auth::unhex(&noise).ok_or(ClientError::Protocol)?,
            HelloReply::Refused { code, message } => return Err(ClientError::Refused { code: Pbse(code), message }),
            HelloReply::Welcome { .. } => return Err(ClientError::Protocol),
        };
        let (keys, hash) = initiation.finish(&answer).map_err(|_| ClientError::Protocol)?;
        let (mut sealer, mut opener) = keys.split();
        let credential = munge.encode(&munge_payload("client", &hash)).map_err(|e| {
            ClientError::Auth(format!("MUNGE user-authentication on encode failed with `{}`", e.code().text()))
        })?;
        let sealed = |e: pbs_proto::link::LinkError| ClientError::Frame(e.into());
        write_sealed(&mut client.writer, &mut sealer, &pbs_proto::messages::AuthProof { credential })
            .map_err(sealed)?;
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Answer {
            Proof(pbs_proto::messages::AuthProof),
            Reply(HelloReply),
        }
        let theirs = match read_sealed::<Answer>(&mut client.reader, &mut opener, PRE_AUTH_FRAME_LEN).map_err(sealed)? {
            Some(Answer::Proof(proof)) => proof,
            Some(Answer::Reply(HelloReply::Refused { code, message })) => {
                return Err(ClientError::Refused { code: Pbse(code), message });
            }
            _ => return Err(ClientError::Protocol),
        };
        let decoded = munge.decode(&theirs.credential).map_err(|e| {
            ClientError::Auth(format!("MUNGE user-authentication on decode failed with `{}`", e.code().text()))
        })?;
        if decoded.payload != munge_payload("server", &hash) || !service_uids.contains(&decoded.uid) {
            return Err(ClientError::Auth("the server's credentials do not match".to_string()));
        }
        let welcome: HelloReply = read_sealed(&mut client.reader, &mut opener, MAX_REPLY_FRAME_LEN)
            .map_err(sealed)?
            .ok_or(ClientError::Protocol)?;
        match welcome {
            HelloReply::Welcome { server_name, .. } => client.server_name = server_name,
            HelloReply::Refused { code, message } => return Err(ClientError::Refused { code: Pbse(code), message }),
            HelloReply::Handshake { .. } => return Err(ClientError::Protocol),
        }
        client.link = Some((sealer, opener));
        Ok(client)
    }

    /// Connects over a Unix socket at `path`; `server` names it in error messages.
    pub fn connect_unix(path: &Path, server: &str) -> Result<Client> {
        let stream = UnixStream::connect(path)
            .map_err(|e| ClientError::Connect { server: server.to_string(), errno: e.raw_os_error().unwrap_or(0) })?;
        let socket = Socket::Unix(stream);
        socket.set_nonblocking().map_err(|e| ClientError::Frame(e.into()))?;
        let mut client = Client::new(socket);
        // Buffered, not flushed: it leaves together with the first request.
        let hello = pbs_proto::codec::encode_frame(&Hello::local(Role::Client))?;
        client.writer.write_all(&hello).map_err(|e| ClientError::Frame(e.into()))?;
        client.welcome_pending = true;
        Ok(client)
    }

    fn new(socket: Socket) -> Client {
        let socket = Arc::new(socket);
        Client {
            reader: BufReader::new(Half(socket.clone())),
            writer: BufWriter::new(Half(socket.clone())),
            socket,
            server_name: String::new(),
            next_id: 1,
            welcome_pending: false,
            closing: false,
            link: None,
        }
    }

    /// Reads the server's answer to a Hello sent without waiting (Unix socket).
    fn finish_handshake(&mut self) -> Result<()> {
        if !self.welcome_pending {
            return Ok(());
        }
        self.writer.flush().map_err(|e| ClientError::Frame(e.into()))?;
        self.welcome_pending = false;
        match read_frame(&mut self.reader, MAX_REPLY_FRAME_LEN)?.ok_or(ClientError::Protocol)? {
            HelloReply::Welcome { server_name, .. } => {
                self.server_name = server_name;
                Ok(())
            }
            HelloReply::Refused { code, message } => Err(ClientError::Refused { code: Pbse(code), message }),
            HelloReply::Handshake { .. } => Err(ClientError::Protocol),
        }
    }

    /// The server's name, the suffix of its job ids (empty if the server could not be
    /// reached; the next request reports why).
    pub fn server_name(&mut self) -> &str {
        if self.finish_handshake().is_err() {
            self.welcome_pending = false;
        }
        &self.server_name
    }

    /// Declares the next request the last one on this connection, for commands that send a
    /// single request: right after sending it the client shuts its sending side, so the
    /// server reads the end of the stream with the request and closes the connection as
    /// soon as it has replied, instead of keeping it until the command exits. Replies are
    /// read as usual; a request after that one fails.
    pub fn last_request(&mut self) {
        self.closing = true;
    }

    /// Sends a request and returns its reply, joining streamed parts. An error code becomes
    /// [`ClientError::Server`], except for replies that carry per-id results.
    pub fn request(&mut self, request: Request) -> Result<Reply> {
        let id = self.next_id;
        self.next_id += 1;
        match &mut self.link {
            Some((sealer, _)) => pbs_proto::link::write_sealed(&mut self.writer, sealer, &RequestFrame { id, request })
                .map_err(|e| ClientError::Frame(e.into()))?,
            None => write_frame(&mut self.writer, &RequestFrame { id, request })?,
        }
        if self.closing {
            // Only an optimisation for the server: if it fails, the reply still comes.
            let _ = self.socket.shutdown_write();
        }
        self.finish_handshake()?;
        let mut whole: Option<Reply> = None;
        loop {
            let part: Reply = match &mut self.link {
                Some((_, opener)) => pbs_proto::link::read_sealed(&mut self.reader, opener, MAX_REPLY_FRAME_LEN)
                    .map_err(|e| ClientError::Frame(e.into()))?,
                None => read_frame(&mut self.reader, MAX_REPLY_FRAME_LEN)?,
            }
            .ok_or(ClientError::Protocol)?;
            if part.id != id {
                return Err(ClientError::Protocol);
            }
            let more = part.more;
            whole = Some(match whole {
                None => part,
                Some(mut acc) => {
                    merge_part(&mut acc.body, part.body)?;
                    acc.code = part.code;
                    acc.message = part.message;
                    acc
                }
            });
            if !more {
                break;
            }
        }
        let reply = whole.ok_or(ClientError::Protocol)?;
        let carries_results = matches!(reply.body, ReplyBody::PerId(_) | ReplyBody::Status { .. });
        if reply.code != 0 && !carries_results {
            return Err(ClientError::Server { code: Pbse(reply.code), message: reply.message });
        }
        Ok(reply)
    }

    /// Submits a job; returns its id.
    pub fn submit(&mut self, attrs: Vec<Attr>, script: String, destination: Option<String>) -> Result<String> {
        match self.request(Request::QueueJob { attrs, script, destination })?.body {
            ReplyBody::JobId(id) => Ok(id),
            _ => Err(ClientError::Protocol),
        }
    }

    /// Waits until job `id` has left the live set (`qsub -W block=true`): its exit status,
    /// and why it left when it did not end on its own (empty when it ended).
    pub fn wait_job(&mut self, id: &str) -> Result<(i32, String)> {
        match self.request(Request::WaitJob { id: id.to_string() })?.body {
            ReplyBody::JobDone { exit_status, message } => Ok((exit_status, message)),
            _ => Err(ClientError::Protocol),
        }
    }

    /// Status of jobs.
    pub fn status_jobs(
        &mut self,
        ids: Vec<String>,
        queues: Vec<String>,
        attrs: Vec<String>,
        history: bool,
        subjobs: bool,
    ) -> Result<StatusReply> {
        self.status(Request::StatusJob { ids, queues, attrs, history, subjobs })
    }

    /// Any status request (`StatusServer`, `StatusQueue`, `StatusNode`, ...).
    pub fn status(&mut self, request: Request) -> Result<StatusReply> {
        let reply = self.request(request)?;
        match reply.body {
            ReplyBody::Status { objects, errors } => Ok(StatusReply { objects, errors }),
            _ if reply.code != 0 => Err(ClientError::Server { code: Pbse(reply.code), message: reply.message }),
            _ => Err(ClientError::Protocol),
        }
    }

    /// Ids of jobs matching all criteria.
    pub fn select(
        &mut self,
        criteria: Vec<Criterion>,
        history: bool,
        subjobs: bool,
        arrays_only: bool,
    ) -> Result<Vec<String>> {
        match self.request(Request::SelectJobs { criteria, history, subjobs, arrays_only })?.body {
            ReplyBody::Ids(ids) => Ok(ids),
            _ => Err(ClientError::Protocol),
        }
    }

    /// A request over several job ids (ModifyJob, DeleteJob, HoldJob, ReleaseJob); returns
    /// the ids that failed with their errors.
    pub fn per_id(&mut self, request: Request) -> Result<Vec<IdError>> {
        let reply = self.request(request)?;
        match reply.body {
            ReplyBody::PerId(errors) => Ok(errors),
            ReplyBody::None if reply.code == 0 => Ok(Vec::new()),
            _ => Err(ClientError::Protocol),
        }
    }

    /// A qmgr command.
    pub fn manager(
        &mut self,
        command: MgrCommand,
        object: MgrObject,
        names: Vec<String>,
        attrs: Vec<MgrAttr>,
    ) -> Result<()> {
        self.request(Request::Manager { command, object, names, attrs })?;
        Ok(())
    }

    /// Status of nodes (pbsnodes); an empty `names` means every node.
    pub fn status_nodes(&mut self, names: Vec<String>) -> Result<StatusReply> {
        self.status(Request::StatusNode { names })
    }

    /// Runs one job now (qrun), on `exec_vnode` if given (`qrun -H`). A failure, whether
    /// the server reports it for the request or for the id, is [`ClientError::Server`].
    pub fn run_job(&mut self, id: String, exec_vnode: Option<String>) -> Result<()> {
        let reply = self.request(Request::RunJob { id, exec_vnode })?;
        match reply.body {
            ReplyBody::PerId(errors) => match errors.into_iter().next() {
                Some(error) => Err(ClientError::Server { code: Pbse(error.code), message: error.message }),
                None if reply.code != 0 => Err(ClientError::Server { code: Pbse(reply.code), message: reply.message }),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// Sends `signal` to jobs (qsig); returns the ids that failed with their errors.
    pub fn signal_jobs(&mut self, ids: Vec<String>, signal: String) -> Result<Vec<IdError>> {
        self.per_id(Request::SignalJob { ids, signal })
    }

    /// Preempts running jobs (OpenPBS's `pbs_preempt_jobs`; managers only): each id with
    /// the method that worked (`S`, `C`, `R`, `D`) or `0`.
    pub fn preempt_jobs(&mut self, ids: &[String]) -> Result<Vec<(String, char)>> {
        match self.request(Request::PreemptJobs { ids: ids.to_vec() })?.body {
            ReplyBody::Preempted(each) => Ok(each.into_iter().map(|p| (p.job_id, p.method)).collect()),
            _ => Err(ClientError::Protocol),
        }
    }

    /// Moves queued jobs to `destination` (qmove); returns the ids that failed.
    pub fn move_jobs(&mut self, ids: Vec<String>, destination: String) -> Result<Vec<IdError>> {
        self.per_id(Request::MoveJob { ids, destination })
    }

    /// Swaps two jobs' places in the queues' order (qorder).
    pub fn order_jobs(&mut self, first: String, second: String) -> Result<()> {
        self.request(Request::OrderJob { first, second })?;
        Ok(())
    }

    /// Stops the server (qterm); `manner` is `quick`, `immediate` or `delay`.
    pub fn shutdown(&mut self, manner: String, scheduler: bool, moms: bool) -> Result<()> {
        self.request(Request::Shutdown { manner, scheduler, moms })?;
        Ok(())
    }

    /// Requeues running jobs (qrerun, `force` for `-W force`); returns the ids that failed.
    pub fn rerun_jobs(&mut self, ids: Vec<String>, force: bool) -> Result<Vec<IdError>> {
        self.per_id(Request::RerunJob { ids, force })
    }
}

fn merge_part(acc: &mut ReplyBody, part: ReplyBody) -> Result<()> {
    match (acc, part) {
        (ReplyBody::Status { objects, errors }, ReplyBody::Status { objects: more_objects, errors: more_errors }) => {
            objects.extend(more_objects);
            errors.extend(more_errors);
            Ok(())
        }
        (ReplyBody::Ids(ids), ReplyBody::Ids(more)) => {
            ids.extend(more);
            Ok(())
        }
        _ => Err(ClientError::Protocol),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;
    use std::time::Duration;

    use pbs_proto::codec::encode_frame;

    use super::*;

    /// A fake server on a Unix socket in `dir`: reads the Hello and one request (slowly,
    /// so a large request fills the socket and the client must wait to write), then sends
    /// the Welcome and `reply` in small pieces with pauses (so the client must wait to
    /// read). Returns the request's size in bytes as the server saw it.
    fn fake_server(dir: &Path, reply: Reply) -> std::thread::JoinHandle<usize> {
        let path = dir.join("sock");
        let listener = UnixListener::bind(&path).unwrap();
        std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::with_capacity(4096, &stream);
            let _hello: Hello = read_frame(&mut reader, usize::MAX).unwrap().unwrap();
            std::thread::sleep(Duration::from_millis(50));
            let mut len = [0u8; 4];
            reader.read_exact(&mut len).unwrap();
            let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
            for chunk in body.chunks_mut(64 * 1024) {
                reader.read_exact(chunk).unwrap();
                std::thread::sleep(Duration::from_millis(1));
            }
            let _: RequestFrame = serde_json::from_slice(&body).unwrap();
            let welcome = HelloReply::Welcome { version: pbs_proto::PROTOCOL_VERSION, server_name: "fake".into() };
            let mut out = encode_frame(&welcome).unwrap();
            out.extend(encode_frame(&reply).unwrap());
            for piece in out.chunks(100_000) {
                (&stream).write_all(piece).unwrap();
                std::thread::sleep(Duration::from_millis(2));
            }
            body.len()
        })
    }

    #[test]
    fn a_large_request_and_a_large_reply_in_pieces_go_through_whole() {
        let dir = tempfile::tempdir().unwrap();
        let objects: Vec<StatusObject> = (0..20_000)
            .map(|i| StatusObject { name: format!("{i}.fake"), attrs: vec![Attr::new("job_state", "Q")] })
            .collect();
        let reply = Reply {
            id: 1,
            code: 0,
            message: String::new(),
            body: ReplyBody::Status { objects: objects.clone(), errors: Vec::new() },
            more: false,
        };
        let server = fake_server(dir.path(), reply);
        let mut client = Client::connect_unix(&dir.path().join("sock"), "fake").unwrap();
        // Several times what a Unix socket buffers, so the client's writes would block.
        let script = "x".repeat(2 << 20);
        let reply = client.request(Request::QueueJob { attrs: vec![], script, destination: None }).unwrap();
        assert!(server.join().unwrap() > 2 << 20);
        assert_eq!(client.server_name(), "fake");
        match reply.body {
            ReplyBody::Status { objects: got, .. } => assert_eq!(got, objects),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    #[test]
    fn a_server_that_closes_without_replying_is_a_protocol_error() {
        let dir = tempfile::tempdir().unwrap();
        let listener = UnixListener::bind(dir.path().join("sock")).unwrap();
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(&stream);
            let _hello: Hello = read_frame(&mut reader, usize::MAX).unwrap().unwrap();
        });
        let mut client = Client::connect_unix(&dir.path().join("sock"), "fake").unwrap();
        let result = client.request(Request::StatusServer { attrs: vec![] });
        server.join().unwrap();
        assert!(matches!(result, Err(ClientError::Protocol) | Err(ClientError::Frame(_))), "{result:?}");
    }
}
