//! Unit tests (filled below).
