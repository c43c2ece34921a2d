//! The cluster key's material: fresh random bytes, hex-encoded. The key is used by
//! [`crate::link`], which proves it on every TCP link.

/// A fresh random 32-byte secret, hex-encoded.
pub fn new_nonce() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
