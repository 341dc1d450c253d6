//! Upstream's built-in agents (`inbox` among them) exist from the first start: the server
//! registers them before it serves, owned by the system and visible to every user. The command
//! id of each comes from its slug, so a restart, or two instances starting on one database,
//! register each once (an existing one is left as it is).

use agentlog_domain::{
    agents::{Agent, AgentCommand, builtin_agents},
    context::Context,
    envelope::Actor,
    error::DomainError,
    ids::derived_id,
};
use agentlog_eventlog::{CommandError, EventLogError};
use chrono::Utc;

use crate::{error::ApiError, state::App};

/// The owner of the built-in agents.
pub const BUILTIN_OWNER: &str = "system";

const NAME: &str = "builtin-agents";

/// Register every built-in agent not yet in the log; answers how many this call registered.
pub async fn register_builtin_agents(state: &App) -> Result<usize, ApiError> {
    let mut registered = 0;
    for register in builtin_agents() {
        let id = register.agent_id.clone();
        let command_id = derived_id(NAME, &id, 0);
        let ctx = Context::new(Utc::now(), command_id, Actor::system(NAME), BUILTIN_OWNER);
        match state.handler.execute_of::<Agent>(BUILTIN_OWNER, &id, &AgentCommand::Register(register), &ctx).await {
            Ok(outcome) if !outcome.replayed => registered += 1,
            Ok(_) => {}
            // Already registered (an earlier start, or another instance just now).
            Err(CommandError::Domain(DomainError::AlreadyExists { .. }))
            | Err(CommandError::Log(EventLogError::IdempotencyConflict { .. })) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(registered)
}
