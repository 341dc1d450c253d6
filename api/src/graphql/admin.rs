//! Administration: tokens.

use async_graphql::{Context, Object, SimpleObject};
use chrono::{DateTime, Utc};

use crate::graphql::request::app;
use crate::graphql::request::caller;
use crate::{
    auth::{Role, TokenInfo},
    error::{ApiError, GqlResult},
};

/// A token as listed: never its secret.
#[derive(SimpleObject)]
#[graphql(name = "Token")]
pub struct TokenNode {
    /// Its id (what `revokeToken` takes).
    pub token_id: String,
    /// Its name.
    pub name: String,
    /// Whose it is.
    pub user_id: String,
    /// `admin` or `user`.
    pub role: String,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last used (to the minute; absent when never used).
    pub last_used_at: Option<DateTime<Utc>>,
    /// Revoked (absent while live).
    pub revoked_at: Option<DateTime<Utc>>,
}

impl From<TokenInfo> for TokenNode {
    fn from(t: TokenInfo) -> Self {
        Self {
            token_id: t.token_id,
            name: t.name,
            user_id: t.user_id,
            role: if t.admin { "admin" } else { "user" }.into(),
            created_at: t.created_at,
            last_used_at: t.last_used_at,
            revoked_at: t.revoked_at,
        }
    }
}

/// A token just created: its secret is shown here, once.
#[derive(SimpleObject)]
pub struct CreatedToken {
    /// Its id (for `tokens` and `revokeToken`).
    pub token_id: String,
    /// The bearer secret (`Authorization: Bearer <secret>`); never shown again.
    pub secret: String,
}

/// Admin queries.
#[derive(Default)]
pub struct AdminQuery;

#[Object]
impl AdminQuery {
    /// Tokens, newest first: an admin sees every token, a user their own. Never secrets.
    async fn tokens(&self, ctx: &Context<'_>) -> GqlResult<Vec<TokenNode>> {
        let who = caller(ctx)?;
        Ok(app(ctx).tokens.list(who.owner()).await?.into_iter().map(TokenNode::from).collect())
    }

    /// Who the request's token belongs to (the console shows it and checks a token with it).
    async fn viewer(&self, ctx: &Context<'_>) -> GqlResult<Viewer> {
        let who = caller(ctx)?;
        Ok(Viewer { user_id: who.user_id.clone(), admin: who.admin })
    }
}

/// The caller of a request.
#[derive(SimpleObject)]
pub struct Viewer {
    /// The user the token belongs to.
    pub user_id: String,
    /// An admin sees and changes every user's data.
    pub admin: bool,
}

/// Admin mutations.
#[derive(Default)]
pub struct AdminMutation;

#[Object]
impl AdminMutation {
    /// Create a bearer token for `userId` (admins only): its id and its secret, shown once.
    async fn create_token(
        &self,
        ctx: &Context<'_>,
        user_id: String,
        #[graphql(default)] admin: bool,
        name: Option<String>,
    ) -> GqlResult<CreatedToken> {
        let who = caller(ctx)?;
        if !who.admin {
            return Err(ApiError::Forbidden("only an admin may create tokens".into()).into());
        }
        let role = if admin { Role::Admin } else { Role::User };
        let name = name.unwrap_or_else(|| "api".into());
        if name.is_empty() || name.len() > 200 {
            return Err(ApiError::validation("name", "must be 1 to 200 characters").into());
        }
        let token = app(ctx).tokens.create(&user_id, role, &name).await?;
        Ok(CreatedToken { token_id: token.token_id, secret: token.secret })
    }

    /// Revoke a token by its id: an admin any token, a user their own (another's, or an
    /// unknown or already revoked id, is NOT_FOUND). A revoked token is UNAUTHENTICATED at
    /// once, and open websockets that authenticated with it are closed (4401).
    async fn revoke_token(&self, ctx: &Context<'_>, token_id: String) -> GqlResult<bool> {
        let who = caller(ctx)?;
        if app(ctx).tokens.revoke(&token_id, who.owner()).await? {
            Ok(true)
        } else {
            Err(ApiError::not_found("token", &token_id).into())
        }
    }
}
