//! Deterministic event ids.
//!
//! The domain never makes random ids; callers pass fresh ids in. Reactors and sources derive
//! theirs from what caused them, so a reactor that runs twice (after a crash, or on two server
//! instances) appends the same ids and the log's idempotency makes the second append a no-op.
//!
//! A derived id keeps the UUID v7 layout: the first 48 bits are the millisecond timestamp the
//! caller supplies (so ids still sort by time), the rest comes from a SHA-1 name hash of the key.
//!
//! ```
//! use agentlog_domain::ids::derived_id;
//! let a = derived_id("cron-fire", "job-1@2026-11-29T10:00:00Z", 1_764_410_400_000);
//! let b = derived_id("cron-fire", "job-1@2026-11-29T10:00:00Z", 1_764_410_400_000);
//! assert_eq!(a, b);
//! assert_eq!(a.get_version_num(), 7);
//! ```

use uuid::Uuid;

use crate::streams::StreamKind;
use crate::{
    envelope::{Actor, ActorKind},
    error::DomainError,
};

/// The first character of every aggregate id agentlog derives for what its reactors and clocks
/// create (cron and heartbeat runs, their topics, group member runs, briefs, its own sources).
/// Only agentlog itself starts a stream whose id begins with it, so no caller can take such an
/// id before agentlog needs it (the id stays derived, so two instances still write it once).
pub const SERVER_ID_MARK: char = '~';

/// A server-derived aggregate id: `name` behind [`SERVER_ID_MARK`].
///
/// ```
/// assert_eq!(agentlog_domain::ids::server_id("op-1"), "~op-1");
/// ```
pub fn server_id(name: impl std::fmt::Display) -> String {
    format!("{SERVER_ID_MARK}{name}")
}

/// May `actor` start stream `stream_id` (a stream with no events yet)? Ids marked
/// [`SERVER_ID_MARK`] are agentlog's own: anyone else is refused (VALIDATION). Notification
/// streams are named for their user, not created by id, and are not checked.
pub fn may_start_stream(stream_id: &str, actor: &Actor) -> Result<(), DomainError> {
    let Some((kind, id)) = StreamKind::parse(stream_id) else { return Ok(()) };
    if kind == StreamKind::Notification
        || !id.starts_with(SERVER_ID_MARK)
        || actor.kind == ActorKind::System
    {
        return Ok(());
    }
    Err(DomainError::Validation {
        field: format!("{}Id", kind.prefix()),
        reason: format!("ids beginning with `{SERVER_ID_MARK}` are agentlog's own; choose another"),
    })
}

/// Namespace for agentlog's name-based ids.
const NAMESPACE: Uuid = Uuid::from_u128(0x6167_656e_746c_6f67_8000_0000_0000_0001);

/// A deterministic UUID v7-shaped id for `key` within `kind`, stamped with `at_ms`.
pub fn derived_id(kind: &str, key: &str, at_ms: i64) -> Uuid {
    derived_from_parts(kind, &[key.as_bytes()], at_ms)
}

/// [`derived_id`] of the key that is `parts` joined: the hashed name is built on the stack
/// when it fits (ids are derived for every event a decision makes).
fn derived_from_parts(kind: &str, parts: &[&[u8]], at_ms: i64) -> Uuid {
    const ON_STACK: usize = 160;
    let len = kind.len() + 1 + parts.iter().map(|p| p.len()).sum::<usize>();
    let hashed = if len <= ON_STACK {
        let mut name = [0u8; ON_STACK];
        let mut at = 0;
        for part in
            std::iter::once(kind.as_bytes()).chain([&[0u8][..]]).chain(parts.iter().copied())
        {
            name[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        Uuid::new_v5(&NAMESPACE, &name[..len])
    } else {
        let mut name = Vec::with_capacity(len);
        name.extend_from_slice(kind.as_bytes());
        name.push(0);
        for part in parts {
            name.extend_from_slice(part);
        }
        Uuid::new_v5(&NAMESPACE, &name)
    };
    let mut bytes = *hashed.as_bytes();
    let ms = at_ms.clamp(0, (1_i64 << 48) - 1) as u64;
    bytes[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    bytes[6] = (bytes[6] & 0x0f) | 0x70; // version 7
    bytes[8] = (bytes[8] & 0x3f) | 0x80; // RFC 4122 variant
    Uuid::from_bytes(bytes)
}

/// The command id of a client's request `request_id` sent by `user_id`: derived, so a resent
/// request has the command id (and event ids) of the first and decides nothing twice.
///
/// A resend may come at any later time, so the id's time field cannot be the clock's; it is
/// taken from the same name hash instead. The command's event ids share it (they are stamped
/// with their command id's time, [`crate::context`]), so they sit side by side in the log's
/// event-id index: looking up whether the request was applied reads one index page, and
/// appending its events writes one, however large the log. With a fixed time field every
/// request's ids would be scattered over the same region of the index instead.
///
/// ```
/// use agentlog_domain::ids::{id_timestamp_ms, nth_child_id, request_command_id};
/// let id = request_command_id("u1", "req-7");
/// assert_eq!(id, request_command_id("u1", "req-7"));
/// assert_ne!(id, request_command_id("u2", "req-7"));
/// let t = id_timestamp_ms(id);
/// assert_eq!(id_timestamp_ms(nth_child_id(id, "event", 3, t)), t);
/// ```
pub fn request_command_id(user_id: &str, request_id: &str) -> Uuid {
    let hashed =
        derived_from_parts("request", &[user_id.as_bytes(), &[0], request_id.as_bytes()], 0);
    // The time field: the hash's last 48 bits (the rest of the id is the hash already).
    let mut bytes = *hashed.as_bytes();
    bytes.copy_within(10..16, 0);
    Uuid::from_bytes(bytes)
}

/// The `n`-th id derived from `parent` (for the several events one decision produces): the
/// [`derived_id`] of the key `{parent}#{n}`, written without `core::fmt`.
pub fn nth_child_id(parent: Uuid, kind: &str, n: u32, at_ms: i64) -> Uuid {
    let mut hyphenated = [0u8; uuid::fmt::Hyphenated::LENGTH];
    let parent = parent.hyphenated().encode_lower(&mut hyphenated).as_bytes();
    let mut digits = [0u8; 11];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    // '#' right before the first digit.
    digits[at - 1] = b'#';
    derived_from_parts(kind, &[parent, &digits[at - 1..]], at_ms)
}

/// The millisecond timestamp of a UUID v7 (or derived) id.
pub fn id_timestamp_ms(id: Uuid) -> i64 {
    let b = id.as_bytes();
    let mut ms = [0u8; 8];
    ms[2..].copy_from_slice(&b[..6]);
    i64::from_be_bytes(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_ids_are_stable_distinct_and_v7() {
        let a = derived_id("k", "x", 1000);
        assert_eq!(a, derived_id("k", "x", 1000));
        assert_ne!(a, derived_id("k", "y", 1000));
        assert_ne!(a, derived_id("j", "x", 1000));
        assert_eq!(a.get_version_num(), 7);
        assert_eq!(id_timestamp_ms(a), 1000);
    }

    #[test]
    fn child_ids_hash_the_formatted_key() {
        let parent = derived_id("k", "x", 1000);
        for n in [0, 7, 10, 123_456, u32::MAX] {
            assert_eq!(
                nth_child_id(parent, "event", n, 5),
                derived_id("event", &format!("{parent}#{n}"), 5)
            );
        }
        let long = "y".repeat(400);
        assert_eq!(derived_id("k", &long, 1), derived_id("k", &long, 1));
        assert_ne!(derived_id("k", &long, 1), derived_id("k", &long[1..], 1));
    }

    #[test]
    fn kind_and_key_cannot_be_confused_by_concatenation() {
        assert_ne!(derived_id("ab", "c", 0), derived_id("a", "bc", 0));
    }

    #[test]
    fn only_agentlog_starts_a_marked_stream() {
        let user = Actor::user("mallory");
        assert!(may_start_stream("operation-~op-cron-1", &user).is_err());
        assert!(may_start_stream("brief-~1", &user).is_err());
        assert!(may_start_stream("source-~cron-exhausted:j:1", &user).is_err());
        assert!(may_start_stream("operation-~op-cron-1", &Actor::system("scheduler")).is_ok());
        assert!(may_start_stream("operation-op~1", &user).is_ok());
        assert!(may_start_stream("notification-~u", &user).is_ok());
    }

    #[test]
    fn a_requests_events_share_its_time_field() {
        let id = request_command_id("u1", "r1");
        // As before this id had a time field: the same hashed name ("request", then the key).
        assert_eq!(&id.as_bytes()[6..], &derived_id("request", "u1\u{0}r1", 0).as_bytes()[6..]);
        let t = id_timestamp_ms(id);
        assert_eq!(
            id,
            derived_id("request", "u1\u{0}r1", t),
            "a derived id stamped with its own time field"
        );
        assert_ne!(
            t,
            id_timestamp_ms(request_command_id("u1", "r2")),
            "requests spread over the index"
        );
        let prefix = |n| nth_child_id(id, "event", n, t).as_bytes()[..6].to_vec();
        assert!((0..64).all(|n| prefix(n) == id.as_bytes()[..6]));
    }

    #[test]
    fn child_ids_differ_by_index() {
        let p = derived_id("k", "x", 5);
        assert_ne!(nth_child_id(p, "e", 0, 5), nth_child_id(p, "e", 1, 5));
    }
}
