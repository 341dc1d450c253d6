//! In-memory folding of one batch: load the rows a batch touches with one query per table,
//! apply the batch's events to them in memory, write back only what changed — one multi-row
//! upsert and one delete per table, whatever the batch size.
//!
//! ```ignore
//! let mut tasks = Staged::<TaskRow>::new();
//! tasks.load(tx, "task_id", touched_ids).await?;   // one SELECT … WHERE task_id IN (…)
//! if let Some(t) = tasks.get_mut(&id) { t.status = "running".into(); }
//! tasks.flush(tx).await?;                          // one upsert, one delete
//! ```
//!
//! Per-event SQL would cost a round trip per event; folding keeps a rebuild at the speed of
//! decoding events.

use std::{
    collections::{HashMap, HashSet},
    hash::Hash,
};

use crate::{
    db::{ReadTx, Row, SqlValue},
    error::ProjectionError,
};

/// A read-model row type: its table, its columns (in [`TableRow::values`] order), its key.
pub(crate) trait TableRow: Sized {
    /// The primary key.
    type Key: Eq + Hash + Clone;
    /// The table.
    const TABLE: &'static str;
    /// Every column, in the order of [`TableRow::values`] and [`TableRow::from_row`].
    const COLUMNS: &'static [&'static str];
    /// The primary-key columns.
    const KEY: &'static [&'static str];
    /// This row's key.
    fn key(&self) -> Self::Key;
    /// A key's column values, in [`TableRow::KEY`] order.
    fn key_values(key: &Self::Key) -> Vec<SqlValue>;
    /// The row's column values.
    fn values(&self) -> Vec<SqlValue>;
    /// Read a row selected with [`TableRow::COLUMNS`].
    fn from_row(row: &Row) -> Result<Self, ProjectionError>;
}

struct Slot<R: TableRow> {
    key: R::Key,
    /// `None`: deleted in this batch.
    row: Option<R>,
    dirty: bool,
}

/// The rows of one table that a batch touches.
pub(crate) struct Staged<R: TableRow> {
    index: HashMap<R::Key, usize>,
    slots: Vec<Slot<R>>,
}

impl<R: TableRow> Default for Staged<R> {
    fn default() -> Self {
        Self { index: HashMap::new(), slots: Vec::new() }
    }
}

impl<R: TableRow> Staged<R> {
    /// Nothing staged.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Load the rows whose text `column` is one of `values` (and are not staged yet).
    pub(crate) async fn load(
        &mut self,
        tx: &mut ReadTx,
        column: &str,
        values: impl IntoIterator<Item = String>,
    ) -> Result<(), ProjectionError> {
        let mut seen = HashSet::new();
        let values: Vec<Vec<SqlValue>> =
            values.into_iter().filter(|v| seen.insert(v.clone())).map(|v| vec![SqlValue::Text(v)]).collect();
        self.load_matching(tx, &[column], &values).await
    }

    /// Load the rows with these keys (and not staged yet), by primary key.
    pub(crate) async fn load_keys(
        &mut self,
        tx: &mut ReadTx,
        keys: impl IntoIterator<Item = R::Key>,
    ) -> Result<(), ProjectionError> {
        let mut seen = HashSet::new();
        let keys: Vec<Vec<SqlValue>> = keys
            .into_iter()
            .filter(|k| !self.index.contains_key(k) && seen.insert(k.clone()))
            .map(|k| R::key_values(&k))
            .collect();
        self.load_matching(tx, R::KEY, &keys).await
    }

    /// Load the rows whose `columns` hold one of `values` (each in `columns` order), those not
    /// staged yet: with a leading part of the key (`user_id, task_id`), every row of a parent.
    pub(crate) async fn load_matching(
        &mut self,
        tx: &mut ReadTx,
        columns: &[&str],
        values: &[Vec<SqlValue>],
    ) -> Result<(), ProjectionError> {
        let select = format!("SELECT {} FROM {}", R::COLUMNS.join(", "), R::TABLE);
        for row in tx.fetch_keyed(&select, columns, values).await? {
            let row = R::from_row(&row)?;
            let key = row.key();
            if !self.index.contains_key(&key) {
                self.index.insert(key.clone(), self.slots.len());
                self.slots.push(Slot { key, row: Some(row), dirty: false });
            }
        }
        Ok(())
    }

    /// The staged rows that exist.
    pub(crate) fn rows(&self) -> impl Iterator<Item = &R> {
        self.slots.iter().filter_map(|s| s.row.as_ref())
    }

    /// The staged row with this key, if it exists.
    pub(crate) fn get(&self, key: &R::Key) -> Option<&R> {
        self.index.get(key).and_then(|&i| self.slots[i].row.as_ref())
    }

    /// The staged row with this key, to change (it will be written back).
    pub(crate) fn get_mut(&mut self, key: &R::Key) -> Option<&mut R> {
        let &i = self.index.get(key)?;
        let slot = &mut self.slots[i];
        // A removed row stays removed (and its delete pending).
        slot.dirty |= slot.row.is_some();
        slot.row.as_mut()
    }

    /// Insert or replace a row.
    pub(crate) fn put(&mut self, row: R) {
        let key = row.key();
        match self.index.get(&key) {
            Some(&i) => {
                self.slots[i].row = Some(row);
                self.slots[i].dirty = true;
            }
            None => {
                self.index.insert(key.clone(), self.slots.len());
                self.slots.push(Slot { key, row: Some(row), dirty: true });
            }
        }
    }

    /// Delete the row with this key (whether or not it is staged or stored).
    pub(crate) fn remove(&mut self, key: &R::Key) {
        match self.index.get(key) {
            Some(&i) => {
                self.slots[i].row = None;
                self.slots[i].dirty = true;
            }
            None => {
                self.index.insert(key.clone(), self.slots.len());
                self.slots.push(Slot { key: key.clone(), row: None, dirty: true });
            }
        }
    }

    /// Delete every staged row that matches `matches`.
    pub(crate) fn remove_where(&mut self, matches: impl Fn(&R) -> bool) {
        for slot in &mut self.slots {
            if slot.row.as_ref().is_some_and(&matches) {
                slot.row = None;
                slot.dirty = true;
            }
        }
    }

    /// Change every staged row that matches `matches` (each changed row is written back).
    pub(crate) fn update_where(&mut self, matches: impl Fn(&R) -> bool, mut change: impl FnMut(&mut R)) {
        for slot in &mut self.slots {
            if let Some(row) = slot.row.as_mut().filter(|r| matches(r)) {
                change(row);
                slot.dirty = true;
            }
        }
    }

    /// Write back: one delete for the removed keys, one upsert for the changed rows.
    pub(crate) async fn flush(self, tx: &mut ReadTx) -> Result<(), ProjectionError> {
        let mut upserts = Vec::new();
        let mut deletes = Vec::new();
        for slot in self.slots.into_iter().filter(|s| s.dirty) {
            match slot.row {
                Some(row) => upserts.push(row.values()),
                None => deletes.push(R::key_values(&slot.key)),
            }
        }
        tx.delete_keyed(R::TABLE, R::KEY, &deletes).await?;
        tx.upsert(R::TABLE, R::COLUMNS, R::KEY, &upserts).await
    }
}
