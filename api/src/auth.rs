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

    /// Whose ids the caller names: its own, or the `ownerId` it gives when it may see that
    /// user's data; `None` (someone else's, not an admin) finds nothing.
    pub fn namespace<'a>(&'a self, owner_id: Option<&'a str>) -> Option<&'a str> {
        match owner_id {
            None => Some(&self.user_id),
            Some(o) => self.may_see(o).then_some(o),
        }
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

/// The stored form of a token secret: hex SHA-256 (secrets are random, so no salt is needed).
pub fn hash(secret: &str) -> String {
    let digest = Sha256::digest(secret.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 of a secret, as bytes: two secrets compared by their digests take the same
/// time whatever prefix they share (`--metrics-token`).
pub fn secret_sha256(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// How often a token's last use is recorded.
const LAST_USED_EVERY_MICROS: i64 = 60_000_000;

/// How often a server process looks for tokens revoked by another one on the same database (one
/// revoked in this process closes its websockets at once).
pub const REVOCATION_CHECK_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// A token as listed (never its secret).
#[derive(Debug, Clone)]
pub struct TokenInfo {
    /// Its id.
    pub token_id: String,
    /// Its name.
    pub name: String,
    /// Whose it is.
    pub user_id: String,
    /// An admin token.
    pub admin: bool,
    /// Created.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// Last used (to the minute).
    pub last_used_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Revoked.
    pub revoked_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Token storage on the log's database.
#[derive(Clone)]
pub struct Tokens {
    db: ReadDb,
    revoked: tokio::sync::broadcast::Sender<String>,
}

impl Tokens {
    /// Tokens kept in `db`.
    pub fn new(db: ReadDb) -> Self {
        Self { db, revoked: tokio::sync::broadcast::channel(64).0 }
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
        Ok(self.authenticate_token(secret).await?.map(|(caller, _)| caller))
    }

    /// Who holds `secret`, and the token's id (None for an unknown or revoked token). Records
    /// the use, at most once a minute per token (a write per request would contend with the
    /// log's writer).
    pub async fn authenticate_token(&self, secret: &str) -> Result<Option<(Caller, String)>, ApiError> {
        if !secret.starts_with("al_") || secret.len() > 200 {
            return Ok(None);
        }
        let rows = self
            .db
            .fetch(
                "SELECT user_id, role, token_id, last_used_at FROM api_tokens WHERE token_hash = $1 AND revoked_at IS NULL",
                &[hash(secret).into()],
            )
            .await?;
        let Some(row) = rows.first() else { return Ok(None) };
        let (Some(user_id), Some(token_id)) = (row.str(0), row.str(2)) else { return Ok(None) };
        let now = chrono::Utc::now().timestamp_micros();
        if row.i64(3).is_none_or(|last| now - last >= LAST_USED_EVERY_MICROS) {
            self.db
                .execute(
                    "UPDATE api_tokens SET last_used_at = $1 WHERE token_id = $2",
                    &[SqlValue::Int(now), token_id.into()],
                )
                .await?;
        }
        let caller = Caller { user_id: user_id.to_string(), admin: row.str(1) == Some("admin") };
        Ok(Some((caller, token_id.to_string())))
    }

    /// Is token `token_id` live (not revoked)?
    pub async fn is_live(&self, token_id: &str) -> Result<bool, ApiError> {
        let rows = self
            .db
            .fetch("SELECT 1 FROM api_tokens WHERE token_id = $1 AND revoked_at IS NULL", &[token_id.into()])
            .await?;
        Ok(!rows.is_empty())
    }

    /// Revoke token `token_id`, when `owner` is its user (or `None`: an admin, any token).
    /// False when there is no such live token (for that owner).
    pub async fn revoke(&self, token_id: &str, owner: Option<&str>) -> Result<bool, ApiError> {
        let now = SqlValue::Int(chrono::Utc::now().timestamp_micros());
        let n = match owner {
            None => {
                self.db
                    .execute(
                        "UPDATE api_tokens SET revoked_at = $1 WHERE token_id = $2 AND revoked_at IS NULL",
                        &[now, token_id.into()],
                    )
                    .await?
            }
            Some(user) => self
                .db
                .execute(
                    "UPDATE api_tokens SET revoked_at = $1 WHERE token_id = $2 AND user_id = $3 AND revoked_at IS NULL",
                    &[now, token_id.into(), user.into()],
                )
                .await?,
        };
        if n > 0 {
            let _ = self.revoked.send(token_id.to_string());
        }
        Ok(n > 0)
    }

    /// Tokens revoked, as this process learns of them: at once when revoked here, within
    /// [`REVOCATION_CHECK_EVERY`] when revoked by another process ([`Tokens::follow_revocations`]).
    pub fn revocations(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.revoked.subscribe()
    }

    /// Announce, every `every`, the tokens another process revoked since the last look, as a
    /// revocation made here is announced: one query per process, however many websockets are
    /// open (a check per socket was a query per socket every few seconds).
    pub async fn follow_revocations(self, every: std::time::Duration) {
        // Another process's clock may trail this one's, and its revocation may commit after a
        // look that its `revoked_at` precedes: each look reaches this far back.
        const LOOK_BACK_MICROS: i64 = 60_000_000;
        let mut announced: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
        let mut since = chrono::Utc::now().timestamp_micros() - LOOK_BACK_MICROS;
        loop {
            tokio::time::sleep(every).await;
            let looked_at = chrono::Utc::now().timestamp_micros();
            let sql = "SELECT token_id, revoked_at FROM api_tokens WHERE revoked_at >= $1";
            match self.db.fetch(sql, &[SqlValue::Int(since)]).await {
                Ok(rows) => {
                    for row in &rows {
                        let (Some(id), Some(at)) = (row.str(0), row.i64(1)) else { continue };
                        if announced.insert(id.to_string(), at).is_none() {
                            let _ = self.revoked.send(id.to_string());
                        }
                    }
                    since = looked_at - LOOK_BACK_MICROS;
                    announced.retain(|_, at| *at >= since);
                }
                Err(e) => tracing::warn!(error = %e, "could not look for revoked tokens; trying again"),
            }
        }
    }

    /// The tokens of `owner` (every token for `None`), newest first; never their secrets.
    pub async fn list(&self, owner: Option<&str>) -> Result<Vec<TokenInfo>, ApiError> {
        let columns = "SELECT token_id, name, user_id, role, created_at, last_used_at, revoked_at FROM api_tokens";
        let rows = match owner {
            None => self.db.fetch(&format!("{columns} ORDER BY created_at DESC, token_id"), &[]).await?,
            Some(u) => {
                self.db
                    .fetch(&format!("{columns} WHERE user_id = $1 ORDER BY created_at DESC, token_id"), &[u.into()])
                    .await?
            }
        };
        let time = |v: Option<i64>| v.and_then(chrono::DateTime::from_timestamp_micros);
        Ok(rows
            .iter()
            .filter_map(|r| {
                Some(TokenInfo {
                    token_id: r.str(0)?.to_string(),
                    name: r.str(1)?.to_string(),
                    user_id: r.str(2)?.to_string(),
                    admin: r.str(3) == Some("admin"),
                    created_at: time(r.i64(4))?,
                    last_used_at: time(r.i64(5)),
                    revoked_at: time(r.i64(6)),
                })
            })
            .collect())
    }

    /// Is there any live admin token?
    pub async fn has_admin(&self) -> Result<bool, ApiError> {
        let rows =
            self.db.fetch("SELECT COUNT(*) FROM api_tokens WHERE role = 'admin' AND revoked_at IS NULL", &[]).await?;
        Ok(rows.first().and_then(|r| r.i64(0)).unwrap_or(0) > 0)
    }

    /// On a first start (no admin token), create one and write it to `dir/agentlog-admin-token`
    /// (mode 0600; `dir` made when missing). Returns the file's path when it did; when the
    /// secret cannot be written, the token is taken back and the start fails.
    pub async fn bootstrap_admin(&self, dir: &Path) -> Result<Option<PathBuf>, ApiError> {
        if self.has_admin().await? {
            return Ok(None);
        }
        // The directory before the token: an admin token whose secret was never written would
        // stop every later start from writing one.
        std::fs::create_dir_all(dir).map_err(|e| ApiError::Internal(format!("creating {}: {e}", dir.display())))?;
        let token = self.create("admin", Role::Admin, "bootstrap").await?;
        let path = dir.join("agentlog-admin-token");
        if let Err(e) = write_secret(&path, &token.secret) {
            // No one holds this secret: take the token back, so the next start writes one.
            if let Err(d) =
                self.db.execute("DELETE FROM api_tokens WHERE token_id = $1", &[token.token_id.as_str().into()]).await
            {
                tracing::error!(error = %d, token_id = %token.token_id, "could not remove the unwritten admin token; revoke it");
            }
            return Err(ApiError::Internal(format!("writing {}: {e}", path.display())));
        }
        Ok(Some(path))
    }
}

/// Write `secret` to `path`, readable by its owner only (0600) whatever was there: it goes to
/// a new file beside it (create-new: a file or symlink planted at that name is refused, never
/// followed), which then replaces `path` — the directory entry, so a symlink planted at `path`
/// is replaced, not written through, and an old file's permissions do not carry over.
fn write_secret(path: &Path, secret: &str) -> std::io::Result<()> {
    use std::io::Write;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let fresh = path.with_file_name(format!(".{name}.{}", Uuid::new_v4().simple()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let written = options.open(&fresh).and_then(|mut file| {
        writeln!(file, "{secret}")?;
        file.sync_all()
    });
    let renamed = written.and_then(|()| std::fs::rename(&fresh, path));
    if renamed.is_err() {
        // Best effort: a half-written secret must not stay behind.
        let _ = std::fs::remove_file(&fresh);
    }
    renamed
}

/// The bearer secret of an `Authorization` header value.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(token.trim())
}
