//! Commands over TCP that prove who they are with MUNGE (the first part of issue 49), here
//! on one host: the server and the "login" commands share a private munged; the commands'
//! pbs.conf names the server by address and `PBS_AUTH_METHOD=munge`, with no Unix socket
//! to fall back on. The two-host tests in network namespaces come with the rest of the issue.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use pbs_e2e::{Cluster, Out, command_dir};
use pbs_munge::private::PrivateMunged;

const JOB_TIMEOUT: Duration = Duration::from_secs(30);

/// A cluster whose server decodes with `munged`, with one mom and the scheduler.
fn cluster(munged: &PrivateMunged) -> Cluster {
    let mut c = Cluster::start();
    let mut conf = std::fs::read_to_string(c.conf_path()).unwrap();
    conf.push_str(&format!("PBS_MUNGE_SOCKET={}\n", munged.socket().display()));
    std::fs::write(c.conf_path(), conf).unwrap();
    c.terminate();
    c.start_server();
    c.allow_root_jobs();
    c.qmgr("set server job_history_enable = True");
    c.add_mom("n1");
    c.start_sched();
    c.wait_node_state("n1", "free");
    c
}

/// The pbs.conf of a host without the server: its address, its port, munge.
fn login_conf(c: &Cluster, socket: &Path, method: &str) -> PathBuf {
    let home = c.dir().join(format!("login-{method}"));
    std::fs::create_dir_all(&home).unwrap();
    let conf = home.join("pbs.conf");
    let text = format!(
        "PBS_SERVER=localhost\nPBS_HOME={}\nPBS_BATCH_SERVICE_PORT={}\nPBS_AUTH_METHOD={method}\nPBS_MUNGE_SOCKET={}\n",
        home.display(),
        c.port(),
        socket.display()
    );
    std::fs::write(&conf, text).unwrap();
    std::fs::set_permissions(&home, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    conf
}

/// Runs a command with `conf`, as nobody or as root.
fn run(conf: &Path, name: &str, args: &[&str], as_nobody: bool) -> Out {
    let mut command = if as_nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(command_dir().join(name));
        c
    } else {
        Command::new(command_dir().join(name))
    };
    let output = command.args(args).env("PBS_CONF_FILE", conf).current_dir("/").output().unwrap();
    Out {
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        code: output.status.code().unwrap_or(-1),
    }
}

#[test]
fn a_command_on_another_host_is_the_user_munge_proves_and_remote_root_is_no_manager() {
    let munged = PrivateMunged::start().unwrap();
    let c = cluster(&munged);
    let login = login_conf(&c, &munged.socket(), "munge");
    // nobody submits over TCP: the job is theirs, from the host their address names.
    let out = run(&login, "qsub", &["-o", "/dev/null", "-e", "/dev/null", "--", "/bin/true"], true);
    assert_eq!(out.code, 0, "{out:?}\n{}", c.logs());
    let id = out.stdout.trim().to_string();
    c.wait_job_state(&id, "F", JOB_TIMEOUT);
    let owner = c.job_attr(&id, "Job_Owner").unwrap_or_default();
    assert!(owner.starts_with("nobody@"), "{owner}");
    // Over TCP, as the server's log says.
    c.wait_logged(&format!("{owner} authenticated by munge from 127.0.0.1:"));
    assert_eq!(c.job_attr(&id, "euser").as_deref(), Some("nobody"));
    let listed = run(&login, "qstat", &["-x", &id], true);
    assert!(listed.code == 0 && listed.stdout.contains(&id), "{listed:?}");
    // Root over TCP is root on its own host only: no manager here unless listed.
    let refused = run(&login, "qmgr", &["-c", "set server comment = from afar"], false);
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(refused.stderr.contains("Unauthorized Request"), "{refused:?}");
    assert_ne!(c.server_attr("comment").as_deref(), Some("from afar"));
    // And another user's job is not theirs to delete.
    let held = c.qsub(&["-h", "--", "/bin/true"]);
    let denied = run(&login, "qdel", &[&held], true);
    assert_ne!(denied.code, 0, "{denied:?}");
    assert_eq!(c.job_attr(&held, "job_state").as_deref(), Some("H"));
}

#[test]
fn another_key_a_stopped_munged_and_other_methods_are_refused() {
    let munged = PrivateMunged::start().unwrap();
    let c = cluster(&munged);
    // A credential of another key: the server cannot decode it.
    let stranger = PrivateMunged::start().unwrap();
    let conf = login_conf(&c, &stranger.socket(), "munge");
    let out = run(&conf, "qstat", &[], true);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("cannot connect to server") || out.stderr.contains("Invalid credential"), "{out:?}");
    c.wait_logged("MUNGE user-authentication on decode failed with `Invalid credential`");
    // No munged on this host: munge's own words, then the server unreachable.
    let gone = c.dir().join("no-munged.sock");
    let conf = login_conf(&c, &gone, "munge");
    let out = run(&conf, "qstat", &[], true);
    assert_eq!(
        out.stderr,
        "MUNGE user-authentication on encode failed with `Socket communication error`\nqstat: cannot connect to server localhost (errno=15010)\n",
        "{out:?}"
    );
    // A server whose credential comes from a user this host does not list as a service
    // user is not trusted.
    let conf = login_conf(&c, &munged.socket(), "munge");
    let mut text = std::fs::read_to_string(&conf).unwrap();
    text.push_str("PBS_AUTH_SERVICE_USERS=daemon\n");
    std::fs::write(&conf, text).unwrap();
    let out = run(&conf, "qstat", &[], true);
    assert_eq!(
        out.stderr, "the server's credentials do not match\nqstat: cannot connect to server localhost (errno=15010)\n",
        "{out:?}"
    );
    // resvport, or a list, is not offered.
    for method in ["resvport", "resvport,munge"] {
        let conf = login_conf(&c, &munged.socket(), method);
        let out = run(&conf, "qstat", &[], true);
        assert_eq!(out.stderr, "qstat: cannot connect to server localhost (errno=15029)\n", "{method}: {out:?}");
    }
}

/// A credential made for another link (or with no binding at all) is refused: a peer that
/// captured one cannot use it on a connection of its own.
#[test]
fn a_credential_not_made_for_this_link_is_refused() {
    use pbs_proto::link::{UnkeyedInitiation, munge_payload, read_sealed, write_sealed};
    use pbs_proto::messages::AuthProof;
    use pbs_proto::{Hello, HelloReply, PROTOCOL_VERSION, Role};
    let munged = PrivateMunged::start().unwrap();
    let c = cluster(&munged);
    let munge = munged.client();
    // Each try: a handshake, then a credential whose payload `payload` makes of the hash.
    let attempt = |payload: &dyn Fn(&[u8]) -> Vec<u8>| -> HelloReply {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", c.port())).unwrap();
        let (initiation, first) = UnkeyedInitiation::start().unwrap();
        let hello = Hello {
            version: PROTOCOL_VERSION,
            role: Role::Client,
            noise: Some(pbs_proto::auth::hex(&first)),
            auth: Some("munge".into()),
        };
        pbs_proto::write_frame(&mut stream, &hello).unwrap();
        let HelloReply::Handshake { noise } = pbs_proto::read_frame(&mut stream, 4096).unwrap().unwrap() else {
            panic!("no handshake")
        };
        let (keys, hash) = initiation.finish(&pbs_proto::auth::unhex(&noise).unwrap()).unwrap();
        let (mut sealer, mut opener) = keys.split();
        let credential = munge.encode(&payload(&hash)).unwrap();
        write_sealed(&mut stream, &mut sealer, &AuthProof { credential }).unwrap();
        read_sealed::<HelloReply>(&mut stream, &mut opener, 4096).unwrap().unwrap()
    };
    let other_link = attempt(&|hash: &[u8]| munge_payload("client", &hash.iter().map(|b| b ^ 1).collect::<Vec<_>>()));
    assert!(matches!(other_link, HelloReply::Refused { code: 15019, .. }), "{other_link:?}");
    let as_server = attempt(&|hash: &[u8]| munge_payload("server", hash));
    assert!(matches!(as_server, HelloReply::Refused { code: 15019, .. }), "{as_server:?}");
    c.wait_logged("the credential was not made for this connection");
}
