//! Folding `notification.*` events into `notifications`.
//!
//! Events that name ids (read, unread, archived) load those rows and change them in memory.
//! "Everything up to `at`" events (all read, all archived) reach rows the batch never loaded:
//! they change the staged rows in memory, in log order, and are also run as one `UPDATE` each
//! against the stored rows before the staged rows are written back. Unstaged rows see only
//! these monotone bulk changes, so running them first, in order, gives the same result as
//! applying every event in log order; staged rows are then overwritten with their folded state.
//! A purge (`notification.purged`) is one more such change, a `DELETE` of the user's rows
//! archived up to its time: archiving is never undone and `archived_at` is set once, so a row
//! the stored `DELETE` removes is one the staged fold removes too.

use agentlog_domain::notifications::NotificationEvent as E;
use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::rows::NotificationRow;
use crate::{
    columns::micros,
    db::{ReadTx, SqlValue},
    decoding::{DecodedEvent, decode_batch},
    error::ProjectionError,
    projection::Projection,
    staging::{Staged, TableRow},
};

/// Projects notifications.
#[derive(Debug, Default, Clone, Copy)]
pub struct NotificationsProjection;

/// What a bulk change does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bulk {
    /// Mark read everything created up to `upto`.
    Read,
    /// Archive everything created up to `upto`.
    Archive,
    /// Delete everything archived up to `upto`.
    Purge,
}

/// A change to every notification of a user created (or, for a purge, archived) up to a time.
struct BulkChange {
    user_id: String,
    upto: DateTime<Utc>,
    kind: Bulk,
    recorded_at: DateTime<Utc>,
}

impl BulkChange {
    fn applies_to(&self, row: &NotificationRow) -> bool {
        row.user_id == self.user_id
            && match self.kind {
                Bulk::Purge => row.is_archived && row.archived_at.is_some_and(|a| a <= self.upto),
                Bulk::Read | Bulk::Archive => row.created_at <= self.upto,
            }
    }

    fn apply(&self, row: &mut NotificationRow) {
        if self.kind == Bulk::Archive {
            if !row.is_archived {
                row.is_archived = true;
                row.archived_at = Some(self.upto);
                row.updated_at = self.recorded_at;
            }
        } else if !row.is_read {
            row.is_read = true;
            row.read_at = Some(self.upto);
            row.updated_at = self.recorded_at;
        }
    }

    async fn run(&self, tx: &mut ReadTx) -> Result<(), ProjectionError> {
        if self.kind == Bulk::Purge {
            let sql = "DELETE FROM notifications WHERE user_id = $1 AND is_archived = 1 AND archived_at <= $2";
            let args: [SqlValue; 2] = [self.user_id.as_str().into(), micros(self.upto)];
            return tx.execute(sql, &args).await.map(|_| ());
        }
        let (flag, time) =
            if self.kind == Bulk::Archive { ("is_archived", "archived_at") } else { ("is_read", "read_at") };
        let sql = format!(
            "UPDATE notifications SET {flag} = 1, {time} = $1, updated_at = $2 \
             WHERE user_id = $3 AND created_at <= $1 AND {flag} = 0"
        );
        let args: [SqlValue; 3] = [micros(self.upto), micros(self.recorded_at), self.user_id.as_str().into()];
        tx.execute(&sql, &args).await.map(|_| ())
    }
}

fn mark(
    rows: &mut Staged<NotificationRow>,
    user_id: &str,
    ids: &[String],
    recorded_at: DateTime<Utc>,
    change: impl Fn(&mut NotificationRow),
) {
    for id in ids {
        // Ids come from the user's own stream: another user's notification is never touched.
        if let Some(row) = rows.get_mut(id).filter(|r| r.user_id == user_id) {
            change(row);
            row.updated_at = recorded_at;
        }
    }
}

#[async_trait]
impl Projection for NotificationsProjection {
    fn name(&self) -> &'static str {
        "notifications"
    }
    fn version(&self) -> i32 {
        // 2: `created_position`.
        2
    }
    fn tables(&self) -> &'static [&'static str] {
        &[NotificationRow::TABLE]
    }
    fn handles(&self, event_type: &str) -> bool {
        event_type.starts_with("notification.")
    }
    fn bulk_kept_indexes(&self) -> &'static [&'static str] {
        // Mark-all-read, archive-all and purge update a user's rows by `user_id`.
        &["notifications_by_dedupe_key"]
    }
    async fn apply(&self, tx: &mut ReadTx, events: &[&DecodedEvent]) -> Result<(), ProjectionError> {
        let decoded = decode_batch::<E>(events)?;
        let mut rows = Staged::<NotificationRow>::new();
        let named = decoded.iter().flat_map(|(_, _, e)| match e {
            E::Created(c) => vec![c.notification_id.clone()],
            E::Read(m) | E::Unread(m) | E::Archived(m) => m.ids.clone(),
            E::AllRead(_) | E::AllArchived(_) | E::Purged(_) => Vec::new(),
        });
        rows.load(tx, "notification_id", named).await?;
        let mut bulk = Vec::new();
        for (recorded, user_id, event) in &decoded {
            let at = recorded.recorded_at;
            match event {
                E::Created(e) => {
                    // A dedupe key makes creation idempotent: the first notification stays.
                    if rows.get(&e.notification_id).is_none() {
                        let n = &e.notification;
                        rows.put(NotificationRow {
                            notification_id: e.notification_id.clone(),
                            user_id: n.user_id.clone(),
                            category: n.category.clone(),
                            notification_type: n.notification_type.clone(),
                            title: n.title.clone(),
                            body: n.body.clone(),
                            dedupe_key: n.dedupe_key.clone(),
                            action_url: n.action_url.clone(),
                            metadata: n.metadata.clone(),
                            is_read: false,
                            is_archived: false,
                            read_at: None,
                            archived_at: None,
                            created_at: e.at,
                            updated_at: at,
                            created_position: recorded.position,
                        });
                    }
                }
                E::Read(m) => mark(&mut rows, user_id, &m.ids, at, |r| {
                    if !r.is_read {
                        r.is_read = true;
                        r.read_at = Some(m.at);
                    }
                }),
                E::Unread(m) => mark(&mut rows, user_id, &m.ids, at, |r| {
                    r.is_read = false;
                    r.read_at = None;
                }),
                E::Archived(m) => mark(&mut rows, user_id, &m.ids, at, |r| {
                    if !r.is_archived {
                        r.is_archived = true;
                        r.archived_at = Some(m.at);
                    }
                }),
                E::AllRead(e) | E::AllArchived(e) => {
                    let kind = if matches!(event, E::AllArchived(_)) { Bulk::Archive } else { Bulk::Read };
                    let change = BulkChange { user_id: user_id.clone(), upto: e.at, kind, recorded_at: at };
                    rows.update_where(|r| change.applies_to(r), |r| change.apply(r));
                    bulk.push(change);
                }
                E::Purged(e) => {
                    let change = BulkChange {
                        user_id: user_id.clone(),
                        upto: e.archived_before,
                        kind: Bulk::Purge,
                        recorded_at: at,
                    };
                    rows.remove_where(|r| change.applies_to(r));
                    bulk.push(change);
                }
            }
        }
        for change in &bulk {
            change.run(tx).await?;
        }
        rows.flush(tx).await
    }
}
