//! Leases: a worker claims a run and only the lease holder reports on it.
//!
//! A claim answers a lease token (Temporal's task token): a fencing token derived from the
//! claim's command id and a secret of the database (`Context::lease_key`, in `server_secrets`,
//! migration 0042), so a resent claim (same command id) answers the same token and nothing can
//! be derived from the log, which records only the token's SHA-256 (and a claim's `requestId`,
//! from which its command id derives). Every report on a
//! run that holds a lease must present that token ([`Context::lease_token`]); a missing, wrong
//! or expired token is refused, and a new claim replaces the token (the old one stops working).
//! Only the system (reactors, the reaper) acts without one.
//!
//! ```
//! use agentlog_domain::context::Context;
//! use agentlog_domain::envelope::Actor;
//! use agentlog_domain::operations::{lease_token, lease_token_hash};
//! use chrono::{TimeZone, Utc};
//! use uuid::Uuid;
//! let ctx = Context::new(Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(), Uuid::from_u128(7), Actor::worker("w1"), "u1");
//! let token = lease_token(&ctx);
//! assert_eq!(token, lease_token(&ctx));
//! assert_ne!(lease_token_hash(&token), token);
//! ```

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use super::event::OperationEvent as E;
use super::event::{
    LeaseClaimed, LeaseExpired, LeaseRenewed, OperationInterrupted, OperationStarted,
};
use super::model::OperationStatus as S;
use super::state::Operation;
use crate::context::Context;
use crate::deadline::after;
use crate::envelope::ActorKind;
use crate::error::DomainError;

const AGGREGATE: &str = "operation";

/// The longest lease a worker may take, so a vanished worker is noticed within the hour.
pub const MAX_LEASE_SECS: u32 = 3600;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The lease token a claim decided with `ctx` hands its worker (deterministic in the command
/// id and the database's lease key, so a resent claim answers the same token).
pub fn lease_token(ctx: &Context) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"agentlog lease token\0");
    if let Some(key) = &ctx.lease_key {
        hasher.update(key.0);
        hasher.update(b"\0");
    }
    hasher.update(ctx.command_id.to_string().as_bytes());
    format!("lt_{}", hex(&hasher.finalize()))
}

/// What the log records of a lease token: its SHA-256, hex.
pub fn lease_token_hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

fn lease_until(now: DateTime<Utc>, lease_secs: u32) -> Result<DateTime<Utc>, DomainError> {
    if lease_secs == 0 || lease_secs > MAX_LEASE_SECS {
        return Err(DomainError::validation(
            "leaseSecs",
            format!("must be between 1 and {MAX_LEASE_SECS}"),
        ));
    }
    Ok(after(now, u64::from(lease_secs)))
}

pub(super) fn claim(
    op: &Operation,
    id: &str,
    worker_id: &str,
    lease_secs: u32,
    ctx: &Context,
) -> Result<Vec<E>, DomainError> {
    if op.status.is_waiting() {
        // A pause needs no worker; the operation is claimed again once it resumes.
        return Err(DomainError::transition(AGGREGATE, op.status, "claim"));
    }
    if worker_id.trim().is_empty() {
        return Err(DomainError::validation("workerId", "must not be empty"));
    }
    let expires = lease_until(ctx.now, lease_secs)?;
    if let Some(lease) = &op.lease {
        if lease.expires_at <= ctx.now {
            return Err(DomainError::LeaseExpired {
                operation_id: id.to_string(),
                expired_at: lease.expires_at,
            });
        }
        if lease.worker_id != worker_id {
            return Err(DomainError::LeaseHeld {
                operation_id: id.to_string(),
                holder: lease.worker_id.clone(),
                expires_at: lease.expires_at,
            });
        }
    }
    let mut events = vec![E::Claimed(LeaseClaimed {
        worker_id: worker_id.to_string(),
        lease_expires_at: expires,
        token_hash: lease_token_hash(&lease_token(ctx)),
        at: ctx.now,
    })];
    if op.status == S::Idle {
        events.push(E::Started(OperationStarted { at: ctx.now }));
    }
    Ok(events)
}

pub(super) fn renew(
    op: &Operation,
    id: &str,
    worker_id: &str,
    lease_secs: u32,
    ctx: &Context,
) -> Result<Vec<E>, DomainError> {
    let expires = lease_until(ctx.now, lease_secs)?;
    match &op.lease {
        Some(lease) if lease.worker_id == worker_id => {
            check_token(op, id, ctx)?;
            Ok(vec![E::LeaseRenewed(LeaseRenewed {
                worker_id: worker_id.to_string(),
                lease_expires_at: expires,
            })])
        }
        _ => Err(DomainError::NotLeaseHolder {
            operation_id: id.to_string(),
            worker_id: worker_id.to_string(),
        }),
    }
}

pub(super) fn expire(op: &Operation, id: &str, ctx: &Context) -> Result<Vec<E>, DomainError> {
    let Some(lease) = &op.lease else {
        return Err(DomainError::transition(
            AGGREGATE,
            format!("{} without a lease", op.status),
            "expire the lease of",
        ));
    };
    if lease.expires_at > ctx.now {
        return Err(DomainError::NotDue {
            what: format!("lease of operation {id}"),
            due_at: lease.expires_at,
        });
    }
    Ok(vec![
        E::LeaseExpired(LeaseExpired {
            worker_id: lease.worker_id.clone(),
            expired_at: lease.expires_at,
            at: ctx.now,
        }),
        E::Interrupted(OperationInterrupted {
            reason: "lease_expired".into(),
            can_resume: true,
            at: ctx.now,
        }),
    ])
}

/// A report that needs a claimed run (steps, phases, plans, cards, completion): the run must
/// hold a lease and the caller must present its valid token. The system acts without one.
pub(super) fn check_holder(op: &Operation, id: &str, ctx: &Context) -> Result<(), DomainError> {
    if ctx.actor.kind == ActorKind::System {
        return Ok(());
    }
    if op.lease.is_none() {
        return Err(DomainError::LeaseToken {
            operation_id: id.to_string(),
            reason: "the run is not claimed (claim it first)",
        });
    }
    check_token(op, id, ctx)
}

/// A report allowed on a run that holds no lease (artifacts, scores, sub-agents): while a lease
/// is held, only its holder makes it.
pub(super) fn check_token(op: &Operation, id: &str, ctx: &Context) -> Result<(), DomainError> {
    if ctx.actor.kind == ActorKind::System {
        return Ok(());
    }
    let Some(lease) = &op.lease else { return Ok(()) };
    let Some(token) = ctx.lease_token.as_deref() else {
        return Err(DomainError::LeaseToken {
            operation_id: id.to_string(),
            reason: "the run is claimed: present its lease token",
        });
    };
    if lease_token_hash(token) != lease.token_hash {
        return Err(DomainError::LeaseToken {
            operation_id: id.to_string(),
            reason: "the token is not the current lease's",
        });
    }
    if lease.expires_at <= ctx.now {
        return Err(DomainError::LeaseExpired {
            operation_id: id.to_string(),
            expired_at: lease.expires_at,
        });
    }
    Ok(())
}

impl Operation {
    /// May the caller of `ctx` report on this run while it holds a lease (a check for reports
    /// that other aggregates record, such as the run's assistant and tool messages)?
    pub fn check_lease_token(&self, ctx: &Context) -> Result<(), DomainError> {
        check_token(self, self.id(), ctx)
    }
}
