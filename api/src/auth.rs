//! Bearer tokens: who is calling, and what they may see.
//!
//! A token is `al_<secret>`; only its SHA-256 is stored (`api_tokens`). Tokens belong to a user
//! and are either `admin` (sees and changes everything) or `user` (only rows it owns). Tokens are
//! access configuration, not facts about agents, so they live beside the log, not in it.
//!
//! On first start, when no admin token exists, the server creates one and writes it to a file
//! readable only by its owner, and says where — the token itself is never logged.

use std::path::{Path, PathBuf};

use agentlog_projections::{ReadDb, SqlValue};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::error::ApiError;

/// Whose request this is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The user the token belongs to.
    pub user_id: String,
    /// Admins see and change every user's data.
    pub admin: bool,
}

impl Caller {
    /// The owner filter for read-model queries: `None` for an admin (everything).
    pub fn owner(&self) -> Option<&str> {
        if self.admin { None } else { Some(&self.user_id) }
    }

    /// May this caller see data owned by `owner`?
    pub fn may_see(&self, owner: &str) -> bool {
        self.admin || self.user_id == owner
    }
}

/// The token role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Everything.
    Admin,
    /// Own data only.
    User,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Self::Admin => "admin",
            Self::User => "user",
        }
    }
}

/// A freshly created token: the secret is shown once, here.
#[derive(Debug, Clone)]
pub struct NewToken {
    /// Its id (for revocation and listings).
    pub token_id: String,
    /// The bearer secret.
    pub secret: String,
}

/// A token as listed: everything but the secret.
#[derive(Debug, Clone)]
pub struct TokenInfo {
    /// Its id (what `revokeToken` takes).
    pub token_id: String,
    /// Whose it is.
    pub user_id: String,
    /// An admin token.
    pub admin: bool,
    /// Its name.
    pub name: String,
    /// Revoked: it no longer authenticates.
    pub revoked: bool,
}

/// The stored form of a token secret: hex SHA-256 (secrets are random, so no salt is needed).
pub fn hash(secret: &str) -> String {
    let digest = Sha256::digest(secret.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Token storage on the log's database.
#[derive(Clone)]
pub struct Tokens {
    db: ReadDb,
}

impl Tokens {
    /// Tokens kept in `db`.
    pub fn new(db: ReadDb) -> Self {
        Self { db }
    }

    /// Create a token for `user_id` with `role`.
    pub async fn create(&self, user_id: &str, role: Role, name: &str) -> Result<NewToken, ApiError> {
        if user_id.trim().is_empty() || user_id.len() > 200 {
            return Err(ApiError::validation("userId", "must be 1 to 200 characters"));
        }
        let token_id = Uuid::now_v7().simple().to_string();
        let secret = format!("al_{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple());
        self.db
            .execute(
                "INSERT INTO api_tokens (token_id, token_hash, user_id, role, name, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
                &[
                    token_id.as_str().into(),
                    hash(&secret).into(),
                    user_id.into(),
                    role.as_str().into(),
                    name.into(),
                    SqlValue::Int(chrono::Utc::now().timestamp_micros()),
                ],
            )
            .await?;
        Ok(NewToken { token_id, secret })
    }

    /// Who holds `secret` (None for an unknown or revoked token).
    pub async fn authenticate(&self, secret: &str) -> Result<Option<Caller>, ApiError> {
        if !secret.starts_with("al_") || secret.len() > 200 {
            return Ok(None);
        }
        let rows = self
            .db
            .fetch(
                "SELECT user_id, role FROM api_tokens WHERE token_hash = $1 AND revoked_at IS NULL",
                &[hash(secret).into()],
            )
            .await?;
        Ok(rows.first().and_then(|r| Some(Caller { user_id: r.str(0)?.to_string(), admin: r.str(1) == Some("admin") })))
    }

    /// Every token (of `user_id` when given), oldest first: ids, owners and roles, never secrets.
    pub async fn list(&self, user_id: Option<&str>) -> Result<Vec<TokenInfo>, ApiError> {
        let rows = self
            .db
            .fetch(
                "SELECT token_id, user_id, role, name, revoked_at FROM api_tokens WHERE ($1 = '' OR user_id = $1) ORDER BY created_at, token_id",
                &[user_id.unwrap_or_default().into()],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| TokenInfo {
                token_id: r.str(0).unwrap_or_default().to_string(),
                user_id: r.str(1).unwrap_or_default().to_string(),
                admin: r.str(2) == Some("admin"),
                name: r.str(3).unwrap_or_default().to_string(),
                revoked: r.i64(4).is_some(),
            })
            .collect())
    }

    /// Revoke a token by id.
    pub async fn revoke(&self, token_id: &str) -> Result<bool, ApiError> {
        let n = self
            .db
            .execute(
                "UPDATE api_tokens SET revoked_at = $1 WHERE token_id = $2 AND revoked_at IS NULL",
                &[SqlValue::Int(chrono::Utc::now().timestamp_micros()), token_id.into()],
            )
            .await?;
        Ok(n > 0)
    }

    /// Is there any live admin token?
    pub async fn has_admin(&self) -> Result<bool, ApiError> {
        let rows =
            self.db.fetch("SELECT COUNT(*) FROM api_tokens WHERE role = 'admin' AND revoked_at IS NULL", &[]).await?;
        Ok(rows.first().and_then(|r| r.i64(0)).unwrap_or(0) > 0)
    }

    /// On a first start (no admin token), create one and write it to `dir/agentlog-admin-token`
    /// (mode 0600). Returns the file's path when it did.
    pub async fn bootstrap_admin(&self, dir: &Path) -> Result<Option<PathBuf>, ApiError> {
        if self.has_admin().await? {
            return Ok(None);
        }
        let token = self.create("admin", Role::Admin, "bootstrap").await?;
        let path = dir.join("agentlog-admin-token");
        write_secret(&path, &token.secret)
            .map_err(|e| ApiError::Internal(format!("writing {}: {e}", path.display())))?;
        Ok(Some(path))
    }
}

fn write_secret(path: &Path, secret: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    writeln!(file, "{secret}")
}

/// The bearer secret of an `Authorization` header value.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(token.trim())
}
