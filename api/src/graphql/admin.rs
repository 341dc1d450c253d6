//! Administration: tokens.

use async_graphql::{Context, Object};

use super::{app, caller};
use crate::{
    auth::Role,
    error::{ApiError, GqlResult},
};

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

    /// Revoke a token by its id (admins only).
    async fn revoke_token(&self, ctx: &Context<'_>, token_id: String) -> GqlResult<bool> {
        let who = caller(ctx)?;
        if !who.admin {
            return Err(ApiError::Forbidden("only an admin may revoke tokens".into()).into());
        }
        Ok(app(ctx).tokens.revoke(&token_id).await?)
    }
}
