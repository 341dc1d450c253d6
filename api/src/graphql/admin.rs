//! Administration: tokens.

use async_graphql::{Context, Object, SimpleObject};

use super::{app, caller};
use crate::{
    auth::Role,
    error::{ApiError, GqlResult},
};

/// A bearer token, without its secret.
#[derive(SimpleObject)]
pub struct ApiTokenNode {
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

/// Admin queries.
#[derive(Default)]
pub struct AdminQuery;

#[Object]
impl AdminQuery {
    /// Every bearer token (of `userId` when given), oldest first, without secrets (admins only).
    async fn api_tokens(&self, ctx: &Context<'_>, user_id: Option<String>) -> GqlResult<Vec<ApiTokenNode>> {
        if !caller(ctx)?.admin {
            return Err(ApiError::Forbidden("only an admin may list tokens".into()).into());
        }
        let tokens = app(ctx).tokens.list(user_id.as_deref()).await?;
        Ok(tokens
            .into_iter()
            .map(|t| ApiTokenNode {
                token_id: t.token_id,
                user_id: t.user_id,
                admin: t.admin,
                name: t.name,
                revoked: t.revoked,
            })
            .collect())
    }
}

/// Admin mutations.
#[derive(Default)]
pub struct AdminMutation;

#[Object]
impl AdminMutation {
    /// Create a bearer token for `userId` (admins only). The secret is returned once.
    async fn create_token(
        &self,
        ctx: &Context<'_>,
        user_id: String,
        #[graphql(default)] admin: bool,
        name: Option<String>,
    ) -> GqlResult<String> {
        let who = caller(ctx)?;
        if !who.admin {
            return Err(ApiError::Forbidden("only an admin may create tokens".into()).into());
        }
        let role = if admin { Role::Admin } else { Role::User };
        let token = app(ctx).tokens.create(&user_id, role, name.as_deref().unwrap_or("api")).await?;
        Ok(token.secret)
    }

    /// Revoke a token by its id (from `apiTokens`; admins only): it stops authenticating at
    /// once. False when there is no such live token.
    async fn revoke_token(&self, ctx: &Context<'_>, token_id: String) -> GqlResult<bool> {
        let who = caller(ctx)?;
        if !who.admin {
            return Err(ApiError::Forbidden("only an admin may revoke tokens".into()).into());
        }
        Ok(app(ctx).tokens.revoke(&token_id).await?)
    }
}
