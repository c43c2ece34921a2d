//! The cluster key: daemons connecting over TCP prove they hold it with HMAC-SHA256 over a
//! fresh server nonce, so a TCP peer without the key can do nothing.

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// A fresh random nonce, hex-encoded, for one handshake.
pub fn new_nonce() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(hex(&bytes))
}

/// The proof a peer sends for `nonce`: hex HMAC-SHA256(key, nonce).
pub fn proof(key: &[u8], nonce: &str) -> String {
    // HMAC accepts keys of any length, so construction cannot fail.
    let mut mac = match HmacSha256::new_from_slice(key) {
        Ok(mac) => mac,
        Err(_) => return String::new(),
    };
    mac.update(nonce.as_bytes());
    hex(&mac.finalize().into_bytes())
}

/// Checks a proof in constant time.
pub fn verify(key: &[u8], nonce: &str, proof_hex: &str) -> bool {
    let Ok(mut mac) = HmacSha256::new_from_slice(key) else {
        return false;
    };
    mac.update(nonce.as_bytes());
    let Some(bytes) = unhex(proof_hex) else {
        return false;
    };
    mac.verify_slice(&bytes).is_ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proof_verifies_only_with_the_key() {
        let nonce = new_nonce().unwrap();
        let good = proof(b"secret", &nonce);
        assert!(verify(b"secret", &nonce, &good));
        assert!(!verify(b"other", &nonce, &good));
        assert!(!verify(b"secret", "other-nonce", &good));
        assert!(!verify(b"secret", &nonce, "zz"));
        assert!(!verify(b"secret", &nonce, ""));
    }
}
