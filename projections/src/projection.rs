//! What a projection is: a named, versioned fold of the log into read-model tables.

use async_trait::async_trait;

use crate::{db::ReadTx, decoding::DecodedEvent, error::ProjectionError};

/// A read model kept by folding the log.
///
/// `apply` gets the events of one batch in log order (only those `handles` accepts), each with
/// its payload decoded once for every projection ([`DecodedEvent`]), and must be
/// a pure function of them and the tables' current contents: the runner commits its writes
/// together with the projection's checkpoint, and a rebuild from position 0 must give the same
/// tables as following the log live.
#[async_trait]
pub trait Projection: Send + Sync + 'static {
    /// Unique name (also the checkpoint's key).
    fn name(&self) -> &'static str;
    /// Bump when the tables' meaning changes: a changed version rebuilds at start.
    fn version(&self) -> i32;
    /// The tables it owns: emptied on rebuild, compared by verification.
    fn tables(&self) -> &'static [&'static str];
    /// Does it care about events of this type? (Others are skipped, but still advance its
    /// checkpoint.)
    fn handles(&self, _event_type: &str) -> bool {
        true
    }
    /// Secondary indexes its `apply` reads through (a lookup by a column its table's primary key
    /// does not lead with): a bulk load keeps them, and drops the others (see `bulk`).
    fn bulk_kept_indexes(&self) -> &'static [&'static str] {
        &[]
    }
    /// Apply one batch.
    async fn apply(&self, tx: &mut ReadTx, events: &[&DecodedEvent]) -> Result<(), ProjectionError>;
}
