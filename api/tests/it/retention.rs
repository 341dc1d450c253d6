//! Archived notifications past the retention leave the inbox read model by a
//! `notification.purged` event (the log keeps them; a rebuild removes the same ones), once per
//! user and pass slot across two server processes; `purgeArchivedNotifications` does it on
//! demand for the caller's own.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::support::{Db, Server, error_code, read_log, verify_read_models};

const CREATE: &str = "mutation($t: String!) { createNotification(input: {category: \"c\", type: \"t\", title: $t, body: \"b\"}) { notification { notificationId } } }";
const ARCHIVE: &str = "mutation($ids: [String!]!) { archiveNotifications(ids: $ids) { position } }";
const ONE: &str = "query($id: String!) { notification(id: $id) { notificationId isArchived } }";

async fn create(s: &Server, token: &str, title: &str) -> String {
    let d = s.data(Some(token), CREATE, json!({"t": title})).await;
    d["createNotification"]["notification"]["notificationId"].as_str().expect("id").to_string()
}

/// Is `id` still in `token`'s read model?
async fn present(s: &Server, token: &str, id: &str) -> bool {
    let r = s.gql(Some(token), ONE, json!({"id": id})).await;
    match error_code(&r).as_deref() {
        None => true,
        Some("NOT_FOUND") => false,
        Some(code) => panic!("notification({id}) answered {code}: {r}"),
    }
}

async fn archived_notifications_past_the_retention_are_purged(db: Db) {
    let flags = ["--notification-retention-secs", "3", "--notification-purge-every-secs", "1"];
    let a = Server::start_with(db, &flags).await;
    let b = a.sibling_with(&flags).await;
    let alice = a.user_token("alice").await;
    let bob = a.user_token("bob").await;
    let (n1, n2, n3) = (create(&a, &alice, "1").await, create(&a, &alice, "2").await, create(&a, &alice, "3").await);
    let b1 = create(&b, &bob, "b1").await;
    a.data(Some(&alice), ARCHIVE, json!({"ids": [n1, n2]})).await;
    b.data(Some(&bob), ARCHIVE, json!({"ids": [b1]})).await;
    // Archived, not yet past the retention: still there.
    let r = a.data(Some(&alice), ONE, json!({"id": n1})).await;
    assert_eq!(r["notification"]["isArchived"], true, "{r}");

    // Within the retention plus a few passes, both processes running the pass.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while present(&a, &alice, &n1).await || present(&b, &bob, &b1).await {
        assert!(std::time::Instant::now() < deadline, "archived notifications were not purged within 20 s");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(!present(&b, &alice, &n2).await, "n2 was archived with n1");
    assert!(present(&a, &alice, &n3).await, "a notification never archived stays");
    let inbox =
        a.data(Some(&alice), "{ notifications(first: 10) { edges { node { notificationId } } } }", json!({})).await;
    assert_eq!(inbox["notifications"]["edges"].as_array().map(Vec::len), Some(1), "{inbox}");

    // On demand, for the caller's own notifications only.
    let n4 = create(&a, &alice, "4").await;
    a.data(Some(&alice), ARCHIVE, json!({"ids": [n4]})).await;
    let purge = "mutation($t: DateTime, $u: String) { purgeArchivedNotifications(archivedBefore: $t, userId: $u) { position unreadCount } }";
    let mallory = a.user_token("mallory").await;
    let r = a.gql(Some(&mallory), purge, json!({"t": null, "u": "alice"})).await;
    assert!(error_code(&r).is_some(), "mallory purged alice's notifications: {r}");
    let head = a.data(Some(&alice), "{ headPosition }", json!({})).await["headPosition"].clone();
    let r = a.gql(Some(&alice), purge, json!({"t": "2999-01-01T00:00:00Z", "u": null})).await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    assert_eq!(
        a.data(Some(&alice), "{ headPosition }", json!({})).await["headPosition"],
        head,
        "a refused purge wrote"
    );
    assert!(present(&a, &alice, &n4).await);
    let r = a.data(Some(&alice), purge, json!({"t": null, "u": null})).await;
    assert_eq!(r["purgeArchivedNotifications"]["unreadCount"], 1, "{r}");
    assert!(!present(&a, &alice, &n4).await, "purged on demand");
    assert!(present(&a, &alice, &n3).await);

    // Wait past another slot or two: nothing more to purge, nothing more appended.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    b.stop();
    let db = a.stop();
    let log = read_log(&db).await;
    let purges: Vec<(String, Value)> = log
        .iter()
        .filter(|e| e.event_type == "notification.purged")
        .map(|e| (e.stream_id.clone(), e.payload["archivedBefore"].clone()))
        .collect();
    let distinct: HashSet<String> = purges.iter().map(|(s, t)| format!("{s} {t}")).collect();
    assert_eq!(distinct.len(), purges.len(), "a purge was appended twice: {purges:?}");
    assert!(
        purges.iter().any(|(s, _)| s.contains("alice")) && purges.iter().any(|(s, _)| s.contains("bob")),
        "{purges:?}"
    );
    // The log keeps every notification it created.
    assert_eq!(log.iter().filter(|e| e.event_type == "notification.created").count(), 5);
    verify_read_models(&db).await;
}

both!(archived_notifications_past_the_retention_are_purged as archived_notifications_past_the_retention_are_purged);
