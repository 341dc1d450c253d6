//! Brief ids per owner.

use super::*;
use agentlog_domain::briefs::{Brief, BriefCommand, BriefType, CreateBrief};

const CREATE_BRIEF: &str = "mutation($t: String!, $o: String) { createBrief(input: {briefId: \"b1\", type: \"result\", \
    title: $t, summary: \"s\"}, ownerId: $o) { brief { briefId userId title globalId } } }";
const BRIEF: &str = "query($o: String) { brief(id: \"b1\", ownerId: $o) { userId title readAt resolvedAction } }";

async fn brief_ids_are_per_owner(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let admin = s.admin_token.clone();

    // The same id, one each: bob's create succeeds as for an unknown id.
    let a = s.data(Some(&alice), CREATE_BRIEF, json!({"t": "alice's"})).await;
    let b = s.data(Some(&bob), CREATE_BRIEF, json!({"t": "bob's"})).await;
    assert_eq!(a["createBrief"]["brief"]["userId"], "alice", "{a}");
    assert_eq!(b["createBrief"]["brief"]["userId"], "bob", "{b}");
    assert_eq!(b["createBrief"]["brief"]["title"], "bob's", "{b}");
    let again = s.gql(Some(&alice), CREATE_BRIEF, json!({"t": "twice"})).await;
    assert_eq!(support::error_code(&again).as_deref(), Some("CONFLICT"), "{again}");

    // Each sees and changes their own only.
    s.data(Some(&bob), "mutation { markBriefRead(id: \"b1\") { brief { userId } } }", json!({})).await;
    for (token, who) in [(&alice, "alice"), (&bob, "bob")] {
        let brief = s.data(Some(token), BRIEF, json!({})).await;
        assert_eq!(brief["brief"]["title"], format!("{who}'s"), "{brief}");
        assert_eq!(brief["brief"]["readAt"].is_null(), who == "alice", "{brief}");
        let list = s.data(Some(token), "{ briefs { edges { node { userId } } } }", json!({})).await;
        assert_eq!(list["briefs"]["edges"].as_array().map(Vec::len), Some(1), "{list}");
        assert_eq!(list["briefs"]["edges"][0]["node"]["userId"], who, "{list}");
    }

    // Naming another owner: a user finds nothing (as for an unknown id), an admin finds theirs.
    let head = || async { s.data(Some(&admin), "{ headPosition }", json!({})).await["headPosition"].as_i64() };
    let before = head().await;
    let templates = [
        "mutation($o: String) { markBriefRead(id: \"{ID}\", ownerId: $o) { position } }",
        "mutation($o: String) { resolveBrief(id: \"{ID}\", action: \"approve\", ownerId: $o) { position } }",
        "query($o: String) { brief(id: \"{ID}\", ownerId: $o) { briefId } }",
    ];
    for template in templates {
        let theirs = s.gql(Some(&bob), &template.replace("{ID}", "b1"), json!({"o": "alice"})).await;
        let unknown = s.gql(Some(&bob), &template.replace("{ID}", "zz1"), json!({})).await;
        assert_eq!(refusal(&theirs, "b1"), refusal(&unknown, "zz1"), "{template}: {theirs} vs {unknown}");
        assert_eq!(support::error_code(&theirs).as_deref(), Some("NOT_FOUND"), "{theirs}");
        let own = s.gql(Some(&admin), &template.replace("{ID}", "b1"), json!({})).await;
        assert_eq!(support::error_code(&own).as_deref(), Some("NOT_FOUND"), "{template}: {own}");
    }
    assert_eq!(head().await, before, "nothing written");
    let resolve = "mutation($o: String) { resolveBrief(id: \"b1\", action: \"approve\", ownerId: $o) \
        { brief { userId resolvedAction } } }";
    let r = s.data(Some(&admin), resolve, json!({"o": "alice"})).await;
    assert_eq!(r["resolveBrief"]["brief"], json!({"userId": "alice", "resolvedAction": "approve"}), "{r}");
    let read = "mutation($o: String) { markBriefRead(id: \"b1\", ownerId: $o) { brief { userId } } }";
    let r = s.data(Some(&admin), read, json!({"o": "alice"})).await;
    assert_eq!(r["markBriefRead"]["brief"]["userId"], "alice", "{r}");
    let theirs = s.data(Some(&admin), BRIEF, json!({"o": "bob"})).await;
    assert!(theirs["brief"]["resolvedAction"].is_null(), "bob's is untouched: {theirs}");
    let made =
        s.data(Some(&admin), CREATE_BRIEF.replace("b1", "b2").as_str(), json!({"t": "for carol", "o": "carol"})).await;
    assert_eq!(made["createBrief"]["brief"]["userId"], "carol", "{made}");

    // Global ids name the owner: each resolves to its own brief.
    for (node, other) in [(&a["createBrief"]["brief"], &bob), (&b["createBrief"]["brief"], &alice)] {
        let q = "query($id: ID!) { node(id: $id) { ... on Brief { userId title } } }";
        let found = s.data(Some(&admin), q, json!({"id": node["globalId"]})).await;
        assert_eq!(found["node"]["title"], node["title"], "{found}");
        let hidden = s.data(Some(other), q, json!({"id": node["globalId"]})).await;
        assert!(hidden["node"].is_null(), "{hidden}");
    }

    let db = s.stop();
    let log = support::read_log(&db).await;
    let created: Vec<(&str, &str)> =
        log.iter().filter(|e| e.event_type == "brief.created").map(|e| (e.stream_id.as_str(), e.user_id())).collect();
    assert_eq!(created, [("brief@alice/b1", "alice"), ("brief@bob/b1", "bob"), ("brief@carol/b2", "carol")]);
    support::verify_read_models(&db).await;
}

/// A brief written before ids were per owner (alice's, in the global stream `brief-old`) stays
/// hers: she reads and resolves it there; bob finds nothing and creates his own `old`.
async fn a_legacy_brief_stream_stays_its_owners(db: Db) {
    {
        let state = open_app(&db.url(), Settings::default(), ApiLimits::default()).await.expect("open the app");
        let ctx = Context::new(Utc::now(), Uuid::now_v7(), Actor::user("alice"), "alice");
        let create = BriefCommand::Create(CreateBrief::new("old", BriefType::Decision, "legacy", "s"));
        state.handler.execute_stream::<Brief>("brief-old", &create, &ctx).await.expect("legacy brief");
        state.store.close().await;
    }
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let q = "{ brief(id: \"old\") { userId title resolvedAction } }";
    let mine = s.data(Some(&alice), q, json!({})).await;
    assert_eq!(mine["brief"], json!({"userId": "alice", "title": "legacy", "resolvedAction": null}), "{mine}");
    let r = s.gql(Some(&bob), q, json!({})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let resolve = "mutation { resolveBrief(id: \"old\", action: \"approve\") { brief { userId resolvedAction } } }";
    let r = s.gql(Some(&bob), resolve, json!({})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let r = s.data(Some(&alice), resolve, json!({})).await;
    assert_eq!(r["resolveBrief"]["brief"], json!({"userId": "alice", "resolvedAction": "approve"}), "{r}");
    let create = "mutation { createBrief(input: {briefId: \"old\", type: \"insight\", title: \"bob's\", summary: \"s\"}) \
        { brief { userId title } } }";
    assert_eq!(s.data(Some(&bob), create, json!({})).await["createBrief"]["brief"]["title"], "bob's");
    assert_eq!(s.data(Some(&alice), q, json!({})).await["brief"]["title"], "legacy");
    let db = s.stop();
    let log = support::read_log(&db).await;
    let streams = |t: &str| log.iter().filter(|e| e.event_type == t).map(|e| e.stream_id.clone()).collect::<Vec<_>>();
    assert_eq!(streams("brief.resolved"), ["brief-old"], "alice's change lands in her global stream");
    assert_eq!(streams("brief.created"), ["brief-old", "brief@bob/old"]);
    support::verify_read_models(&db).await;
}

both!(
    brief_ids_are_per_owner as brief_ids_per_owner,
    a_legacy_brief_stream_stays_its_owners as legacy_brief_stream_stays_its_owners
);
