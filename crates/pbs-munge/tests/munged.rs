//! The client against a real munged: each test starts its own, with a key and a socket in
//! a temporary directory (munged is installed by `etc/test-deps.sh`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use pbs_munge::private::PrivateMunged;
use pbs_munge::{Code, Munge, MungeError};

#[test]
fn a_credential_carries_its_makers_ids_and_payload_and_decodes_once() {
    let munged = PrivateMunged::start().unwrap();
    let munge = Munge::new(munged.socket());
    let credential = munge.encode(b"root:root").unwrap();
    assert!(credential.starts_with("MUNGE:"), "{credential}");
    let decoded = munge.decode(&credential).unwrap();
    assert_eq!((decoded.uid, decoded.gid), (0, 0));
    assert_eq!(decoded.payload, b"root:root");
    assert!(decoded.ttl > 0);
    // The same credential again is a replay.
    let again = munge.decode(&credential).unwrap_err();
    assert_eq!(again.code(), Code::CRED_REPLAYED, "{again}");
    // An empty payload is a credential too.
    assert_eq!(munge.decode(&munge.encode(b"").unwrap()).unwrap().payload, b"");
}

#[test]
fn the_uid_is_the_callers_as_the_kernel_tells_munged() {
    let munged = PrivateMunged::start().unwrap();
    let socket = munged.socket();
    // This thread alone becomes nobody: SO_PEERCRED reports the connecting thread's ids.
    let credential = std::thread::spawn(move || {
        // The raw system call changes only this thread's ids (glibc's wrapper would change
        // every thread's). SAFETY: no memory is passed.
        let rc = unsafe { libc::syscall(libc::SYS_setresuid, 65534, 65534, 65534) };
        assert_eq!(rc, 0);
        Munge::new(socket).encode(b"nobody").unwrap()
    })
    .join()
    .unwrap();
    let decoded = Munge::new(munged.socket()).decode(&credential).unwrap();
    assert_eq!(decoded.uid, 65534);
}

#[test]
fn a_credential_of_another_key_is_invalid_and_a_stopped_munged_is_said() {
    let one = PrivateMunged::start().unwrap();
    let other = PrivateMunged::start().unwrap();
    let credential = Munge::new(one.socket()).encode(b"x").unwrap();
    let err = Munge::new(other.socket()).decode(&credential).unwrap_err();
    assert_eq!(err.code(), Code::CRED_INVALID, "{err}");
    // The same key decodes it.
    let twin = PrivateMunged::start_with_key(Some(&one.key())).unwrap();
    assert_eq!(Munge::new(twin.socket()).decode(&credential).unwrap().payload, b"x");
    let socket = one.socket();
    drop(one);
    let err = Munge::new(&socket).encode(b"x").unwrap_err();
    assert!(matches!(err, MungeError::Connect { .. }), "{err}");
    assert_eq!(err.code().text(), "Socket communication error");
}

#[test]
fn garbage_and_oversized_credentials_are_refused_without_reaching_far() {
    let munged = PrivateMunged::start().unwrap();
    let munge = Munge::new(munged.socket());
    let err = munge.decode("MUNGE:not a credential:").unwrap_err();
    assert!(matches!(err, MungeError::Refused { .. }), "{err}");
    let huge = "M".repeat(pbs_munge::MAX_CREDENTIAL + 1);
    assert!(matches!(munge.decode(&huge), Err(MungeError::TooLong(_))));
    assert!(matches!(munge.encode(&vec![0u8; pbs_munge::MAX_PAYLOAD + 1]), Err(MungeError::TooLong(_))));
}
