//! Relay paging both ways: `first`/`after` forward and `last`/`before` backward over the same
//! set give the same items in the same order, with true `hasPreviousPage` / `hasNextPage`, on
//! lists ordered oldest first (tasks, a task's comments, the log) and newest first
//! (notifications).

use crate::support;

use serde_json::{Value, json};
use support::{Db, Server};

/// One page: the items' keys and the page flags.
struct Page {
    keys: Vec<String>,
    has_previous: bool,
    has_next: bool,
    start: Option<String>,
    end: Option<String>,
}

/// Read one page of `field` (a connection at `path` under the answer, its items keyed by
/// `key`); `args` are the paging arguments, `extra` any others.
async fn page(s: &Server, token: &str, field: &str, extra: &str, key: &str, args: Value) -> Page {
    let query = format!(
        "query($first: Int, $after: String, $last: Int, $before: String) {{ \
         {field}(first: $first, after: $after, last: $last, before: $before{extra}) {{ \
         edges {{ cursor node {{ {key} }} }} pageInfo {{ hasPreviousPage hasNextPage startCursor endCursor }} }} }}"
    );
    let data = s.data(Some(token), &query, args).await;
    let connection = &data[field.split('(').next().unwrap_or(field)];
    let edges = connection["edges"].as_array().unwrap_or_else(|| panic!("{field}: {data}"));
    let info = &connection["pageInfo"];
    Page {
        keys: edges.iter().map(|e| e["node"][key].to_string()).collect(),
        has_previous: info["hasPreviousPage"].as_bool().expect("hasPreviousPage"),
        has_next: info["hasNextPage"].as_bool().expect("hasNextPage"),
        start: info["startCursor"].as_str().map(str::to_string),
        end: info["endCursor"].as_str().map(str::to_string),
    }
}

/// Walk `field` forward in pages of 3 and backward in pages of 3, checking the flags of every
/// page; both walks give `expected` items in the same order.
async fn walk_both_ways(s: &Server, token: &str, field: &str, extra: &str, key: &str, expected: usize) {
    let mut forward = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let p = page(s, token, field, extra, key, json!({"first": 3, "after": after})).await;
        assert_eq!(p.has_previous, after.is_some(), "{field}: forward hasPreviousPage after {after:?}");
        forward.extend(p.keys.clone());
        assert_eq!(p.has_next, forward.len() < expected, "{field}: forward hasNextPage at {}", forward.len());
        if !p.has_next {
            break;
        }
        after = p.end;
    }
    let mut backward = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let p = page(s, token, field, extra, key, json!({"last": 3, "before": before})).await;
        assert_eq!(p.has_next, before.is_some(), "{field}: backward hasNextPage before {before:?}");
        let mut keys = p.keys.clone();
        keys.extend(backward);
        backward = keys;
        assert_eq!(
            p.has_previous,
            backward.len() < expected,
            "{field}: backward hasPreviousPage at {}",
            backward.len()
        );
        if !p.has_previous {
            break;
        }
        before = p.start;
    }
    assert_eq!(forward.len(), expected, "{field}: {forward:?}");
    assert_eq!(backward, forward, "{field}: the same items in the same order both ways");

    // A window between two cursors, read either way, is the same items, and both flags are true.
    let all = page(s, token, field, extra, key, json!({"first": expected})).await;
    let cursors = all_cursors(s, token, field, extra, expected).await;
    let (a, b) = (cursors[1].clone(), cursors[expected - 2].clone());
    let ahead = page(s, token, field, extra, key, json!({"first": expected, "after": a, "before": b})).await;
    let back = page(s, token, field, extra, key, json!({"last": expected, "before": b, "after": a})).await;
    assert_eq!(ahead.keys, all.keys[2..expected - 2].to_vec(), "{field}: the window forward");
    assert_eq!(back.keys, ahead.keys, "{field}: the window backward");
    for w in [&ahead, &back] {
        assert!(w.has_previous && w.has_next, "{field}: a window has rows on both sides");
    }
    // The first and the last page have nothing beyond their ends.
    let head = page(s, token, field, extra, key, json!({"last": 2, "before": cursors[2]})).await;
    assert!(!head.has_previous && head.has_next, "{field}: the head");
    let tail = page(s, token, field, extra, key, json!({"first": 2, "after": cursors[expected - 3]})).await;
    assert!(tail.has_previous && !tail.has_next, "{field}: the tail");
}

async fn all_cursors(s: &Server, token: &str, field: &str, extra: &str, n: usize) -> Vec<String> {
    let query = format!("query($n: Int) {{ {field}(first: $n{extra}) {{ edges {{ cursor }} }} }}");
    let data = s.data(Some(token), &query, json!({"n": n})).await;
    data[field]["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| e["cursor"].as_str().expect("cursor").into())
        .collect()
}

async fn paging_backward_and_forward_gives_the_same_items(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    const N: usize = 8;
    for i in 0..N {
        let task = format!(
            "mutation {{ createTask(input: {{taskId: \"t-{i}\", identifier: \"T{i}\", instruction: \"x\"}}) {{ position }} }}"
        );
        s.data(Some(&alice), &task, json!({})).await;
        let comment =
            format!("mutation {{ addTaskComment(id: \"t-0\", commentId: \"k-{i}\", content: \"c\") {{ position }} }}");
        s.data(Some(&alice), &comment, json!({})).await;
        let note = format!(
            "mutation {{ createNotification(input: {{category: \"c\", type: \"t\", title: \"n{i}\", body: \"b\"}}) {{ position }} }}"
        );
        s.data(Some(&alice), &note, json!({})).await;
    }
    // Bob's rows sit between alice's in every list and must never show.
    s.data(
        Some(&bob),
        "mutation { createTask(input: {taskId: \"t-bob\", identifier: \"TB\", instruction: \"x\"}) { position } }",
        json!({}),
    )
    .await;

    walk_both_ways(&s, &alice, "tasks", "", "taskId", N).await;
    walk_both_ways(&s, &alice, "notifications", "", "title", N).await;
    walk_both_ways(&s, &alice, "events", ", filter: {eventTypes: [\"task.created\"]}", "position", N).await;
    // A nested connection: the task's comments.
    walk_comments(&s, &alice, N).await;

    // `first: 0` and `last: 0` answer no rows, only whether there are any, on every list alike.
    for (field, extra, key) in [
        ("tasks", "", "taskId"),
        ("notifications", "", "title"),
        ("events", ", filter: {eventTypes: [\"task.created\"]}", "position"),
    ] {
        let none = page(&s, &alice, field, extra, key, json!({"first": 0})).await;
        assert!(none.keys.is_empty(), "{field}: first 0 gave {:?}", none.keys);
        let none = page(&s, &alice, field, extra, key, json!({"last": 0})).await;
        assert!(none.keys.is_empty(), "{field}: last 0 gave {:?}", none.keys);
    }

    // Newest first: the first notification forward is the last one made.
    let newest = page(&s, &alice, "notifications", "", "title", json!({"first": 1})).await;
    assert_eq!(newest.keys, vec![format!("\"n{}\"", N - 1)]);

    // The flags are facts, not "a cursor was given": archive the newest and the oldest
    // notification, and a page after the one's cursor has nothing before it, a page before the
    // other's nothing after it.
    let edges = "edges { cursor node { notificationId } } pageInfo { hasPreviousPage hasNextPage }";
    let listed = s.data(Some(&alice), &format!("{{ notifications(first: {N}) {{ {edges} }} }}"), json!({})).await;
    let rows = listed["notifications"]["edges"].as_array().expect("edges").clone();
    let (newest, oldest) = (&rows[0], &rows[N - 1]);
    let archive = "mutation($ids: [String!]!) { archiveNotifications(ids: $ids) { position } }";
    let ids = json!([newest["node"]["notificationId"], oldest["node"]["notificationId"]]);
    s.data(Some(&alice), archive, json!({"ids": ids})).await;
    let read = |args: Value| {
        let s = &s;
        let alice = &alice;
        let query = format!(
            "query($first: Int, $after: String, $last: Int, $before: String) {{ \
             notifications(first: $first, after: $after, last: $last, before: $before) {{ {edges} }} }}"
        );
        async move { s.data(Some(alice), &query, args).await["notifications"].clone() }
    };
    let after_gone = read(json!({"first": 2, "after": newest["cursor"]})).await;
    assert_eq!(after_gone["pageInfo"]["hasPreviousPage"], json!(false), "{after_gone}");
    assert_eq!(after_gone["pageInfo"]["hasNextPage"], json!(true), "{after_gone}");
    let before_gone = read(json!({"last": 2, "before": oldest["cursor"]})).await;
    assert_eq!(before_gone["pageInfo"]["hasNextPage"], json!(false), "{before_gone}");
    assert_eq!(before_gone["pageInfo"]["hasPreviousPage"], json!(true), "{before_gone}");
    let all_between = read(json!({"first": N, "after": newest["cursor"], "before": oldest["cursor"]})).await;
    assert_eq!(all_between["edges"].as_array().map(Vec::len), Some(N - 2));
    assert_eq!(all_between["pageInfo"], json!({"hasPreviousPage": false, "hasNextPage": false}), "{all_between}");

    // `first` and `last` together are refused; so is a negative `last` and one past the limit.
    for (args, code) in [
        (json!({"first": 2, "last": 2}), "VALIDATION"),
        (json!({"last": -1}), "VALIDATION"),
        (json!({"last": 100_000}), "LIMIT"),
    ] {
        let answer = s
            .gql(
                Some(&alice),
                "query($first: Int, $last: Int) { tasks(first: $first, last: $last) { edges { cursor } } }",
                args.clone(),
            )
            .await;
        assert_eq!(support::error_code(&answer).as_deref(), Some(code), "{args}: {answer}");
    }
    s.stop();
}

/// The comments of task `t-0`, walked both ways through the nested connection.
async fn walk_comments(s: &Server, token: &str, n: usize) {
    let query = "query($first: Int, $after: String, $last: Int, $before: String) { task(id: \"t-0\") { \
        comments(first: $first, after: $after, last: $last, before: $before) { edges { node { commentId } } \
        pageInfo { hasPreviousPage hasNextPage startCursor endCursor } } } }";
    let read = |args: Value| async move {
        let data = s.data(Some(token), query, args).await;
        data["task"]["comments"].clone()
    };
    let ids = |c: &Value| -> Vec<String> {
        c["edges"]
            .as_array()
            .expect("edges")
            .iter()
            .map(|e| e["node"]["commentId"].as_str().expect("id").into())
            .collect()
    };
    let mut forward = Vec::new();
    let mut after = Value::Null;
    loop {
        let c = read(json!({"first": 3, "after": after})).await;
        assert_eq!(c["pageInfo"]["hasPreviousPage"], json!(!after.is_null()));
        forward.extend(ids(&c));
        if c["pageInfo"]["hasNextPage"] != json!(true) {
            break;
        }
        after = c["pageInfo"]["endCursor"].clone();
    }
    let mut backward: Vec<String> = Vec::new();
    let mut before = Value::Null;
    loop {
        let c = read(json!({"last": 3, "before": before})).await;
        assert_eq!(c["pageInfo"]["hasNextPage"], json!(!before.is_null()));
        let mut page = ids(&c);
        page.extend(backward);
        backward = page;
        if c["pageInfo"]["hasPreviousPage"] != json!(true) {
            break;
        }
        before = c["pageInfo"]["startCursor"].clone();
    }
    let expected: Vec<String> = (0..n).map(|i| format!("k-{i}")).collect();
    assert_eq!(forward, expected);
    assert_eq!(backward, expected);
}

both!(paging_backward_and_forward_gives_the_same_items as paging_both_ways);
