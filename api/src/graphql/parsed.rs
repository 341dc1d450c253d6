//! Parsed documents by their text. A worker sends the same few mutations all day, and parsing
//! one (the engine's pest grammar) cost more of the server's CPU than deciding it (7.6% of a
//! 64-client `reportStep` run). Parsing is a pure function of the text, so each process keeps
//! its own map and instances need not agree. Only documents that passed admission, from a
//! caller with a valid token, are kept. Bounded: texts up to [`MAX_TEXT`] bytes, and two
//! generations of `capacity / 2` entries and [`MAX_GENERATION_TEXT`] bytes of text (a document
//! in use moves to the current one; when it fills, the older generation is dropped) — a client
//! sending ever new texts only churns it, and its own texts are then parsed as before.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use async_graphql::{
    ServerError,
    parser::{parse_query, types::ExecutableDocument},
};

/// Texts longer than this are parsed every time and never kept.
pub const MAX_TEXT: usize = 4 * 1024;
/// Bytes of text a generation holds at most: a document takes some tens of times its text's
/// size in memory, so this bounds what a client sending many long texts can make the process
/// hold (a few MiB).
pub const MAX_GENERATION_TEXT: usize = 64 * 1024;
/// Documents kept by default, over both generations.
pub const DEFAULT_CAPACITY: usize = 256;

/// A request's document, and whether it was kept from an earlier request with the same text.
#[derive(Debug)]
pub struct Parsed {
    /// The document.
    pub doc: ExecutableDocument,
    /// Taken from the kept ones (not parsed now).
    pub reused: bool,
}

/// What [`ParsedDocuments`] did so far (`/metrics`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DocumentCounts {
    /// Requests whose document was taken from the kept ones.
    pub reused: u64,
    /// Request texts parsed.
    pub parsed: u64,
}

/// The documents this process parsed lately, by text.
#[derive(Debug)]
pub struct ParsedDocuments {
    generations: Mutex<Generations>,
    reused: AtomicU64,
    parsed: AtomicU64,
}

#[derive(Debug, Default)]
struct Generations {
    half: usize,
    /// Bytes of text in `current`.
    bytes: usize,
    current: HashMap<String, Arc<ExecutableDocument>>,
    previous: HashMap<String, Arc<ExecutableDocument>>,
}

impl Default for ParsedDocuments {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY)
    }
}

impl ParsedDocuments {
    /// A map keeping about `capacity` documents (0: none).
    pub fn new(capacity: usize) -> Self {
        let generations = Generations { half: capacity / 2, ..Generations::default() };
        Self { generations: Mutex::new(generations), reused: AtomicU64::new(0), parsed: AtomicU64::new(0) }
    }

    /// The document `text` parses to: the one kept for it, or parsed now (then not kept: the
    /// caller keeps it with [`Self::keep`] once it is admitted). A text that does not parse
    /// gives the engine's error, every time.
    pub fn parse(&self, text: &str) -> Result<Parsed, ServerError> {
        if let Some(doc) = self.kept(text) {
            self.reused.fetch_add(1, Ordering::Relaxed);
            return Ok(Parsed { doc: (*doc).clone(), reused: true });
        }
        let doc = parse_query(text)?;
        self.parsed.fetch_add(1, Ordering::Relaxed);
        Ok(Parsed { doc, reused: false })
    }

    /// Keep `doc`, parsed from `text`, for the next request with the same text (a text of at
    /// most [`MAX_TEXT`] bytes; others are not kept).
    pub fn keep(&self, text: &str, doc: &ExecutableDocument) {
        if text.len() > MAX_TEXT {
            return;
        }
        let mut g = self.generations.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        g.insert(text, Arc::new(doc.clone()));
    }

    /// Documents kept now.
    pub fn held(&self) -> usize {
        let g = self.generations.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        g.current.len() + g.previous.len()
    }

    /// Documents reused and texts parsed so far.
    pub fn counts(&self) -> DocumentCounts {
        DocumentCounts { reused: self.reused.load(Ordering::Relaxed), parsed: self.parsed.load(Ordering::Relaxed) }
    }

    fn kept(&self, text: &str) -> Option<Arc<ExecutableDocument>> {
        // A poisoned lock only means another thread panicked mid-insert: the maps are intact.
        let mut g = self.generations.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(doc) = g.current.get(text) {
            return Some(Arc::clone(doc));
        }
        let doc = g.previous.remove(text)?;
        g.insert(text, Arc::clone(&doc));
        Some(doc)
    }
}

impl Generations {
    fn insert(&mut self, text: &str, doc: Arc<ExecutableDocument>) {
        if self.half == 0 {
            return;
        }
        if self.current.len() >= self.half || self.bytes + text.len() > MAX_GENERATION_TEXT {
            self.previous = std::mem::take(&mut self.current);
            self.bytes = 0;
        }
        self.bytes += text.len();
        self.current.insert(text.to_string(), doc);
    }
}
