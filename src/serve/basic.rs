//! HTTP basic auth from `--web-config`'s `basic_auth_users`: each user's bcrypt hash, checked
//! off the reactor (bcrypt is slow by design); a header that passed once is remembered, so a
//! scraper's every request does not pay for it again.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine as _;

/// Header values remembered as granted; the memory is emptied when full.
const GRANTED_MAX: usize = 64;

/// The users and their bcrypt hashes.
#[derive(Debug)]
pub struct Users {
    hashes: BTreeMap<String, String>,
    granted: Mutex<HashSet<Vec<u8>>>,
}

impl Users {
    /// Refuses a hash bcrypt cannot read, naming its user.
    pub fn new(hashes: BTreeMap<String, String>) -> Result<Users, String> {
        if hashes.is_empty() {
            return Err("basic_auth_users lists no user".into());
        }
        for (user, hash) in &hashes {
            if user.contains(':') {
                return Err(format!("basic_auth_users: user {user:?} has a ':' in it"));
            }
            if hash.parse::<bcrypt::HashParts>().is_err() {
                return Err(format!(
                    "basic_auth_users: {user}: not a bcrypt hash (`htpasswd -nBC 10 {user}` makes one)"
                ));
            }
        }
        Ok(Users {
            hashes,
            granted: Mutex::new(HashSet::new()),
        })
    }

    fn remembered(&self, header: &[u8]) -> bool {
        let granted = self.granted.lock().unwrap_or_else(PoisonError::into_inner);
        granted.contains(header)
    }

    fn remember(&self, header: &[u8]) {
        let mut granted = self.granted.lock().unwrap_or_else(PoisonError::into_inner);
        if granted.len() >= GRANTED_MAX {
            granted.clear();
        }
        granted.insert(header.to_vec());
    }

    /// Whether an `Authorization` header value names a user with the right password.
    pub async fn allows(self: &Arc<Self>, header: Option<&[u8]>) -> bool {
        let Some((user, password)) = header.and_then(credentials) else {
            return false;
        };
        let header = header.unwrap_or_default();
        if self.remembered(header) {
            return true;
        }
        // An unknown user costs a hash check too: the time taken does not tell who exists.
        let (known, hash) = match self.hashes.get(&user) {
            Some(h) => (true, h.clone()),
            None => (
                false,
                self.hashes.values().next().cloned().unwrap_or_default(),
            ),
        };
        let verified = tokio::task::spawn_blocking(move || bcrypt::verify(password, &hash))
            .await
            .is_ok_and(|r| r.unwrap_or(false));
        if known && verified {
            self.remember(header);
        }
        known && verified
    }
}

/// `Basic base64(user:password)` as (user, password).
fn credentials(header: &[u8]) -> Option<(String, String)> {
    let (scheme, encoded) = header.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"basic ") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim_ascii())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(user_password: &str) -> Vec<u8> {
        let encoded = base64::engine::general_purpose::STANDARD.encode(user_password);
        format!("Basic {encoded}").into_bytes()
    }

    #[tokio::test]
    async fn the_right_password_passes_and_is_remembered() {
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        let users = Arc::new(Users::new([("prom".to_string(), hash)].into()).unwrap());
        let good = header("prom:s3cret");
        assert!(users.allows(Some(&good)).await);
        assert!(users.remembered(&good));
        for bad in [
            header("prom:guess"),
            header("other:s3cret"),
            b"Bearer s3cret".to_vec(),
            b"Basic !!!".to_vec(),
            header("no colon"),
        ] {
            assert!(!users.allows(Some(&bad)).await, "{bad:?}");
        }
        assert!(!users.allows(None).await);
    }

    #[test]
    fn unusable_users_are_refused() {
        let e = Users::new([("a".to_string(), "plain".to_string())].into()).unwrap_err();
        assert!(e.contains("a: not a bcrypt hash"), "{e}");
        assert!(Users::new(BTreeMap::new()).is_err());
    }
}
