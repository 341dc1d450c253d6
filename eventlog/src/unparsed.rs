//! Recorded events whose payload is still the stored JSON text, for a reader that decodes
//! payloads into typed events itself (a rebuild): parsing each into a `serde_json::Value` first
//! and decoding that is work done twice.

use agentlog_domain::envelope::RecordedEvent;

/// A recorded event with its payload as stored (`event.payload` is null).
#[derive(Debug, Clone)]
pub struct UnparsedEvent {
    /// The event, without its payload.
    pub event: RecordedEvent,
    /// The payload's JSON text.
    pub payload: String,
}

impl UnparsedEvent {
    /// The event with its payload parsed; an invalid one is the log's corruption.
    pub fn parsed(self) -> Result<RecordedEvent, crate::error::EventLogError> {
        let mut event = self.event;
        event.payload = serde_json::from_str(&self.payload).map_err(|e| crate::error::EventLogError::Corrupt {
            position: event.position,
            reason: format!("payload: {e}"),
        })?;
        Ok(event)
    }
}
