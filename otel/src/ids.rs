//! Trace and span ids derived from agentlog's ids: the same run always gets the same ids, so an
//! export repeated after a restart sends the same spans again, never new ones.

use sha2::{Digest, Sha256};

/// 16 bytes of SHA-256 over `parts`, separated so that `("ab", "c")` and `("a", "bc")` differ.
fn digest<const N: usize>(parts: &[&str]) -> [u8; N] {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_be_bytes());
        h.update(p.as_bytes());
    }
    let full = h.finalize();
    let mut out = [0u8; N];
    out.copy_from_slice(&full[..N]);
    // An all-zero id is invalid in OTLP; a digest that starts with N zero bytes is not worth a branch
    // of its own beyond this.
    if out.iter().all(|b| *b == 0) {
        out[N - 1] = 1;
    }
    out
}

/// The trace of a run tree: from its top-level operation's id.
pub fn trace_id(root_operation_id: &str) -> [u8; 16] {
    digest(&["trace", root_operation_id])
}

/// The `invoke_agent` span of an operation.
pub fn operation_span_id(operation_id: &str) -> [u8; 8] {
    digest(&["operation", operation_id])
}

/// The `chat` span of a step.
pub fn step_span_id(operation_id: &str, step_index: u32) -> [u8; 8] {
    digest(&["step", operation_id, &step_index.to_string()])
}

/// The `execute_tool` span of a tool call.
pub fn tool_span_id(operation_id: &str, step_index: u32, call_id: &str) -> [u8; 8] {
    digest(&["tool", operation_id, &step_index.to_string(), call_id])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_distinct() {
        assert_eq!(trace_id("op-1"), trace_id("op-1"));
        assert_ne!(trace_id("op-1"), trace_id("op-2"));
        assert_ne!(operation_span_id("op-1"), step_span_id("op-1", 1));
        assert_ne!(tool_span_id("op-1", 1, "a"), tool_span_id("op-1", 1, "b"));
        assert_ne!(step_span_id("op-1", 12), step_span_id("op-11", 2));
    }
}
