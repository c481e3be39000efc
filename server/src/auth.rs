//! Bearer tokens and tenants.
//!
//! The server never keeps a token: only its SHA-256 ([`TokenDigest`]). A presented token is
//! hashed and compared with every tenant's digest in constant time ([`Tenants::authenticate`]),
//! so neither the comparison's timing nor the position of the matching tenant tells an
//! attacker how close a guess was. Tokens are never logged, and `Debug` of a digest prints no
//! digits.

use std::sync::Arc;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::TenantConfig;

/// The SHA-256 of a bearer token.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TokenDigest([u8; 32]);

impl TokenDigest {
    /// The digest of `token` (its UTF-8 bytes).
    pub fn of(token: &str) -> Self {
        TokenDigest(Sha256::digest(token.as_bytes()).into())
    }

    /// Parse 64 hex digits (either case).
    pub fn from_hex(hex: &str) -> Result<Self, String> {
        let hex = hex.trim();
        if hex.len() != 64 {
            return Err(format!("must be 64 hex digits, not {}", hex.len()));
        }
        let mut out = [0u8; 32];
        for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
            let digit = |b: u8| (b as char).to_digit(16).ok_or_else(|| "must hold only hex digits".to_string());
            out[i] = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
        }
        Ok(TokenDigest(out))
    }

    /// Lower-case hex, as `token_sha256` is written in the config.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl std::fmt::Debug for TokenDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenDigest(..)")
    }
}

/// A new random bearer token: `ast_` and 43 URL-safe characters (256 bits from the OS).
pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random source");
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut token = String::from("ast_");
    let mut acc: u32 = 0;
    let mut bits = 0;
    for b in bytes {
        acc = (acc << 8) | u32::from(b);
        bits += 8;
        while bits >= 6 {
            bits -= 6;
            token.push(ALPHABET[((acc >> bits) & 63) as usize] as char);
        }
    }
    if bits > 0 {
        token.push(ALPHABET[((acc << (6 - bits)) & 63) as usize] as char);
    }
    token
}

/// One-time sign-in links for the live view: `agentstream serve` prints `/#code=…` instead of
/// the token itself, because an address a browser opened stays in its history (and its sync)
/// even when the page removes it from the address bar. A code gives its tenant's token once and
/// is then worthless, so the history keeps nothing of use.
#[derive(Default)]
pub struct SignInLinks {
    /// By the code's digest: the tenant and its token.
    codes: std::sync::Mutex<std::collections::HashMap<[u8; 32], (TenantId, String)>>,
}

/// How many codes are waiting, never the tokens they give (tokens are never logged).
impl std::fmt::Debug for SignInLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let waiting = self.codes.lock().map_or(0, |codes| codes.len());
        f.debug_struct("SignInLinks").field("waiting", &waiting).finish_non_exhaustive()
    }
}

impl SignInLinks {
    /// A new code that gives `token`, the token of `tenant`, once.
    pub fn add(&self, tenant: &str, token: &str) -> String {
        let code = new_token().replacen("ast_", "asl_", 1);
        let digest = TokenDigest::of(&code).0;
        self.codes.lock().expect("sign-in codes").insert(digest, (TenantId::from(tenant), token.to_string()));
        code
    }

    /// The tenant and token `code` gives, the first time it is presented; `None` after, or for
    /// a code never made.
    pub fn redeem(&self, code: &str) -> Option<(TenantId, String)> {
        self.codes.lock().expect("sign-in codes").remove(&TokenDigest::of(code).0)
    }
}

/// A tenant's identity inside the server: its configured name.
pub type TenantId = Arc<str>;

/// The tenant table.
#[derive(Debug, Clone)]
pub struct Tenants {
    entries: Vec<(TokenDigest, TenantId)>,
}

impl Tenants {
    /// The table of the configured tenants.
    pub fn new(tenants: &[TenantConfig]) -> Self {
        Tenants { entries: tenants.iter().map(|t| (t.token_sha256, TenantId::from(t.name.as_str()))).collect() }
    }

    /// The tenant whose token this is. Hashes the token and compares the digest with EVERY
    /// tenant's in constant time (no early exit).
    pub fn authenticate(&self, token: &str) -> Option<TenantId> {
        let presented = TokenDigest::of(token);
        let mut found: Option<&TenantId> = None;
        for (digest, tenant) in &self.entries {
            let equal: bool = digest.0.ct_eq(&presented.0).into();
            if equal {
                found = Some(tenant);
            }
        }
        found.cloned()
    }

    /// How many tenants there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no tenant is configured (nobody can call the API).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sign_in_code_gives_its_token_once() {
        let links = SignInLinks::default();
        let code = links.add("local", "ast_secret");
        let other = links.add("local", "ast_secret");
        assert!(code.starts_with("asl_") && code != other && !code.contains("secret"));
        assert_eq!(links.redeem("asl_never_made"), None);
        assert_eq!(links.redeem(&code), Some((TenantId::from("local"), "ast_secret".to_string())));
        assert_eq!(links.redeem(&code), None, "used");
        assert!(links.redeem(&other).is_some(), "each code on its own");
    }

    #[test]
    fn sign_in_links_never_print_their_tokens() {
        let links = SignInLinks::default();
        links.add("local", "ast_secret");
        let printed = format!("{links:?} {links:#?}");
        assert!(!printed.contains("ast_secret") && printed.contains("waiting: 1"), "{printed}");
    }

    #[test]
    fn digests_and_hex() {
        // SHA-256("test"), a well-known vector.
        let d = TokenDigest::of("test");
        assert_eq!(d.to_hex(), "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
        assert_eq!(TokenDigest::from_hex(&d.to_hex().to_uppercase()).unwrap(), d);
        assert!(TokenDigest::from_hex("12").unwrap_err().contains("64"));
        assert!(TokenDigest::from_hex(&"g".repeat(64)).unwrap_err().contains("hex"));
        assert_eq!(format!("{d:?}"), "TokenDigest(..)", "no digits in logs");
    }

    #[test]
    fn tokens_are_random_and_shaped() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        assert_eq!(a.len(), 4 + 43);
        assert!(a[4..].bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
    }

    #[test]
    fn authenticate_finds_the_tenant_or_nobody() {
        let t = Tenants::new(&[
            TenantConfig { name: "a".into(), token_sha256: TokenDigest::of("token-a") },
            TenantConfig { name: "b".into(), token_sha256: TokenDigest::of("token-b") },
        ]);
        assert_eq!(t.authenticate("token-b").as_deref(), Some("b"));
        assert_eq!(t.authenticate("token-a").as_deref(), Some("a"));
        assert_eq!(t.authenticate("token-c"), None);
        assert_eq!(t.authenticate(""), None);
    }
}
