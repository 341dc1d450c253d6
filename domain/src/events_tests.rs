//! The event catalogue: every type is named by the rules, decodes, and is documented.

use std::collections::BTreeSet;

use super::*;

fn dotted_lower_case(t: &str) -> bool {
    let segments: Vec<&str> = t.split('.').collect();
    segments.len() >= 2
        && segments.iter().all(|s| {
            let mut chars = s.chars();
            chars.next().is_some_and(|c| c.is_ascii_lowercase())
                && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
}

#[test]
fn every_event_type_is_unique_dotted_and_routed_to_its_stream() {
    let all = all_event_types();
    let unique: BTreeSet<&str> = all.iter().map(|(t, _)| *t).collect();
    assert_eq!(unique.len(), all.len(), "duplicate event type");
    for (t, v) in &all {
        assert!(dotted_lower_case(t), "{t}");
        assert!(*v >= 1);
        assert!(stream_kind_of(t).is_some(), "{t} has no stream");
        // a foreign payload is refused or read, never a panic; a newer version is refused
        let _ = decode_any(t, *v, &serde_json::json!({"unexpected": true}));
        assert!(matches!(
            decode_any(t, *v + 1, &serde_json::json!({})),
            Err(DecodeError::UnsupportedVersion { .. })
        ));
    }
    assert!(matches!(
        decode_any("bogus.thing", 1, &serde_json::json!({})),
        Err(DecodeError::UnknownEventType { .. })
    ));
    assert!(matches!(
        decode_any("nodots", 1, &serde_json::json!({})),
        Err(DecodeError::UnknownEventType { .. })
    ));
}

#[test]
fn the_catalogue_documents_every_event_type() {
    let catalogue = include_str!("../../docs/event-catalogue.md");
    let missing: Vec<&str> = all_event_types()
        .into_iter()
        .map(|(t, _)| t)
        .filter(|t| !catalogue.contains(&format!("`{t}`")))
        .collect();
    assert!(missing.is_empty(), "not in docs/event-catalogue.md: {missing:?}");
}
