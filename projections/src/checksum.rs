//! Order-independent checksums of read-model tables: two databases hold the same rows (in any
//! order, on the same backend) exactly when every table's checksum is equal. The determinism
//! tests and `agentlog-replay verify` compare a live read model with a fresh rebuild this way.
//!
//! Each row is hashed from its column names and typed values (128 bits: two 64-bit FNV-1a
//! lanes with different offsets); a table's digest is the wrapping sum of its rows' hashes plus
//! the row count. A sum does not depend on row order, and unlike XOR it does not cancel out two
//! equal rows. It detects accidental differences, not adversarial ones.
//!
//! ```no_run
//! # async fn demo(live: &agentlog_projections::ReadDb, fresh: &agentlog_projections::ReadDb) -> Result<(), agentlog_projections::ProjectionError> {
//! use agentlog_projections::checksum::table_checksums;
//! let tables = ["operations", "agents"];
//! assert_eq!(table_checksums(live, &tables).await?, table_checksums(fresh, &tables).await?);
//! # Ok(()) }
//! ```

use std::{collections::BTreeMap, fmt};

use crate::{
    db::{ReadDb, SqlValue},
    error::ProjectionError,
};

/// The checksum of one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableChecksum {
    /// Rows in the table.
    pub rows: u64,
    /// Wrapping sum of the rows' 128-bit hashes.
    pub digest: u128,
}

impl fmt::Display for TableChecksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} rows, {:032x}", self.rows, self.digest)
    }
}

/// Two FNV-1a lanes (different offsets, the same prime) over the bytes fed to them.
struct RowHasher {
    a: u64,
    b: u64,
}

const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

impl RowHasher {
    fn new() -> Self {
        Self { a: 0xcbf2_9ce4_8422_2325, b: 0x6c62_272e_07bb_0142 }
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.a = (self.a ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
            self.b = (self.b ^ u64::from(byte.rotate_left(3))).wrapping_mul(FNV_PRIME);
        }
    }

    /// A length-prefixed field, so `("ab", "c")` and `("a", "bc")` differ.
    fn field(&mut self, tag: u8, bytes: &[u8]) {
        self.bytes(&[tag]);
        self.bytes(&(bytes.len() as u64).to_le_bytes());
        self.bytes(bytes);
    }

    fn value(&mut self, v: &SqlValue) {
        match v {
            SqlValue::Null => self.field(0, &[]),
            SqlValue::Int(i) => self.field(1, &i.to_le_bytes()),
            SqlValue::Float(f) => self.field(2, &f.to_bits().to_le_bytes()),
            SqlValue::Text(s) => self.field(3, s.as_bytes()),
        }
    }

    fn finish(&self) -> u128 {
        (u128::from(self.a) << 64) | u128::from(self.b)
    }
}

/// The checksum of every table in `tables` (names are trusted: they come from
/// [`Projection::tables`](crate::Projection::tables), never from a user).
pub async fn table_checksums(db: &ReadDb, tables: &[&str]) -> Result<BTreeMap<String, TableChecksum>, ProjectionError> {
    let mut out = BTreeMap::new();
    for table in tables {
        out.insert((*table).to_string(), table_checksum(db, table).await?);
    }
    Ok(out)
}

/// The checksum of one table.
pub async fn table_checksum(db: &ReadDb, table: &str) -> Result<TableChecksum, ProjectionError> {
    let columns = column_names(db, table).await?;
    let select = if columns.is_empty() { "*".to_string() } else { columns.join(", ") };
    // Streamed: a table of millions of rows costs one row of memory.
    let mut digest = 0u128;
    let rows = db
        .for_each_row(&format!("SELECT {select} FROM {table}"), &[], |row| {
            let mut h = RowHasher::new();
            for (i, value) in row.0.iter().enumerate() {
                h.field(4, columns.get(i).map_or(&[][..], |c| c.as_bytes()));
                h.value(value);
            }
            digest = digest.wrapping_add(h.finish());
        })
        .await?;
    Ok(TableChecksum { rows, digest })
}

/// The table's columns in name order, so a column order that differs between two databases
/// (after a migration added one) does not change the checksum.
async fn column_names(db: &ReadDb, table: &str) -> Result<Vec<String>, ProjectionError> {
    let rows = if db.is_postgres() {
        db.fetch(
            "SELECT column_name::TEXT FROM information_schema.columns WHERE table_schema = current_schema() \
             AND table_name = $1",
            &[table.into()],
        )
        .await?
    } else {
        db.fetch("SELECT name FROM pragma_table_info($1)", &[table.into()]).await?
    };
    let mut names: Vec<String> = rows.iter().filter_map(|r| r.str(0).map(str::to_string)).collect();
    if names.is_empty() {
        return Err(ProjectionError::Invalid(format!("no table `{table}` to checksum")));
    }
    names.sort();
    Ok(names)
}
