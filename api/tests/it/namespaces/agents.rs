//! Agent ids per owner: the built-ins stay everyone's.

use super::*;
use agentlog_domain::agents::{Agent, AgentCommand, RegisterAgent};

pub(super) const REGISTER: &str = "mutation($i: JSON!, $o: String) { registerAgent(input: $i, ownerId: $o) \
    { agent { id userId title globalId } } }";
const AGENT: &str = "query($o: String) { agent(id: \"a1\", ownerId: $o) { userId title \
    versions { edges { node { config } } } } }";

pub(super) fn agent_input(id: &str, title: &str) -> Value {
    json!({"agentId": id, "config": {"slug": id, "title": title}})
}

/// Agent ids are per owner: bob registers alice's `a1` as his own; each sees, changes and runs
/// under their own; another user's `a1` answers as an unknown id; the built-ins stay everyone's.
async fn agent_ids_are_per_owner(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let admin = s.admin_token.clone();

    let a = s.data(Some(&alice), REGISTER, json!({"i": agent_input("a1", "alice's")})).await;
    let b = s.data(Some(&bob), REGISTER, json!({"i": agent_input("a1", "bob's")})).await;
    assert_eq!(a["registerAgent"]["agent"]["userId"], "alice", "{a}");
    assert_eq!(b["registerAgent"]["agent"]["userId"], "bob", "{b}");
    assert_eq!(b["registerAgent"]["agent"]["title"], "bob's", "{b}");
    let again = s.gql(Some(&alice), REGISTER, json!({"i": agent_input("a1", "twice")})).await;
    assert_eq!(support::error_code(&again).as_deref(), Some("CONFLICT"), "{again}");
    // A built-in id stays reserved: it is everyone's, not an unknown id.
    let reserved = s.gql(Some(&bob), REGISTER, json!({"i": agent_input("inbox", "mine")})).await;
    assert_eq!(support::error_code(&reserved).as_deref(), Some("CONFLICT"), "{reserved}");

    for (token, who) in [(&alice, "alice"), (&bob, "bob")] {
        let agent = s.data(Some(token), AGENT, json!({})).await;
        assert_eq!(agent["agent"]["title"], format!("{who}'s"), "{agent}");
        let versions = agent["agent"]["versions"]["edges"].as_array().cloned().unwrap_or_default();
        assert_eq!(versions.len(), 1, "{agent}");
        assert_eq!(versions[0]["node"]["config"]["title"], format!("{who}'s"), "{agent}");
        let list = s.data(Some(token), "{ agents(builtin: false) { edges { node { userId } } } }", json!({})).await;
        assert_eq!(list["agents"]["edges"], json!([{"node": {"userId": who}}]), "{list}");
        let inbox = s.data(Some(token), "{ agent(id: \"inbox\") { userId builtin } }", json!({})).await;
        assert_eq!(inbox["agent"], json!({"userId": "system", "builtin": true}), "{inbox}");
    }

    // Bob's change is his; a run names `a1` in its owner's namespace.
    let update = "mutation { updateAgentConfig(id: \"a1\", patch: {model: \"m-bob\"}) { agent { userId title } } }";
    let u = s.data(Some(&bob), update, json!({})).await;
    assert_eq!(u["updateAgentConfig"]["agent"], json!({"userId": "bob", "title": "bob's"}), "{u}");
    let start = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
    for (token, who) in [(&alice, "alice"), (&bob, "bob")] {
        let topic = format!("c-{who}");
        let create = format!("mutation {{ createConversation(topicId: \"{topic}\") {{ position }} }}");
        s.data(Some(token), &create, json!({})).await;
        let input =
            json!({"operationId": format!("op-{who}"), "kind": "CONVERSATION", "agentId": "a1", "topicId": topic});
        s.data(Some(token), start, json!({"i": input})).await;
        let q = format!("{{ operation(id: \"op-{who}\") {{ agentConfigVersion agentConfig }} }}");
        let op = s.data(Some(token), &q, json!({})).await;
        assert_eq!(op["operation"]["agentConfig"]["title"], format!("{who}'s"), "{op}");
        let version = if who == "bob" { 2 } else { 1 };
        assert_eq!(op["operation"]["agentConfigVersion"], version, "{op}");
    }

    // Naming another owner: a user finds nothing (as for an unknown id), an admin finds theirs.
    let head = || async { s.data(Some(&admin), "{ headPosition }", json!({})).await["headPosition"].as_i64() };
    let before = head().await;
    let templates = [
        "mutation($o: String) { updateAgentConfig(id: \"{ID}\", patch: {model: \"x\"}, ownerId: $o) { position } }",
        "mutation($o: String) { archiveAgent(id: \"{ID}\", ownerId: $o) { position } }",
        "query($o: String) { agent(id: \"{ID}\", ownerId: $o) { id } }",
    ];
    for template in templates {
        let theirs = s.gql(Some(&bob), &template.replace("{ID}", "a1"), json!({"o": "alice"})).await;
        let unknown = s.gql(Some(&bob), &template.replace("{ID}", "zz1"), json!({})).await;
        assert_eq!(refusal(&theirs, "a1"), refusal(&unknown, "zz1"), "{template}: {theirs} vs {unknown}");
        assert_eq!(support::error_code(&theirs).as_deref(), Some("NOT_FOUND"), "{theirs}");
        let own = s.gql(Some(&admin), &template.replace("{ID}", "a1"), json!({})).await;
        assert_eq!(support::error_code(&own).as_deref(), Some("NOT_FOUND"), "{template}: {own}");
    }
    assert_eq!(head().await, before, "nothing written");

    let by_admin = "mutation($o: String) { archiveAgent(id: \"a1\", ownerId: $o) { agent { userId archived } } }";
    let arch = s.data(Some(&admin), by_admin, json!({"o": "alice"})).await;
    assert_eq!(arch["archiveAgent"]["agent"], json!({"userId": "alice", "archived": true}), "{arch}");
    let q = "query($o: String) { agent(id: \"a1\", ownerId: $o) { archived } }";
    assert_eq!(s.data(Some(&bob), q, json!({})).await["agent"]["archived"], false, "bob's is live");
    let made = s.data(Some(&admin), REGISTER, json!({"i": agent_input("a1", "carol's"), "o": "carol"})).await;
    assert_eq!(made["registerAgent"]["agent"]["userId"], "carol", "{made}");

    // Global ids name the owner.
    let node = "query($id: ID!) { node(id: $id) { ... on Agent { userId title } } }";
    let gid = &b["registerAgent"]["agent"]["globalId"];
    assert_eq!(s.data(Some(&admin), node, json!({"id": gid})).await["node"]["title"], "bob's");
    assert!(s.data(Some(&alice), node, json!({"id": gid})).await["node"].is_null());

    let db = s.stop();
    let log = support::read_log(&db).await;
    let registered: Vec<(&str, &str)> = log
        .iter()
        .filter(|e| e.event_type == "agent.registered" && e.user_id() != "system")
        .map(|e| (e.stream_id.as_str(), e.user_id()))
        .collect();
    assert_eq!(registered, [("agent@alice/a1", "alice"), ("agent@bob/a1", "bob"), ("agent@carol/a1", "carol")]);
    assert!(log.iter().any(|e| e.stream_id == "agent-inbox"), "the built-ins keep their global streams");
    support::verify_read_models(&db).await;
}

/// A log written before agent ids were per owner: alice's agent in the global stream
/// `agent-old` stays hers (read, changed and run there); bob registers his own `old`.
async fn legacy_global_agent_stream_stays_its_owners(db: Db) {
    {
        let state = open_app(&db.url(), Settings::default(), ApiLimits::default()).await.expect("open the app");
        let ctx = Context::new(Utc::now(), Uuid::now_v7(), Actor::user("alice"), "alice");
        let register: RegisterAgent = serde_json::from_value(agent_input("old", "legacy")).expect("register");
        state
            .handler
            .execute_stream::<Agent>("agent-old", &AgentCommand::Register(register), &ctx)
            .await
            .expect("legacy agent");
        state.store.close().await;
    }
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let q = "{ agent(id: \"old\") { userId title } }";
    assert_eq!(s.data(Some(&alice), q, json!({})).await["agent"], json!({"userId": "alice", "title": "legacy"}));
    let update = "mutation { updateAgentConfig(id: \"old\", patch: {model: \"m2\"}) { position } }";
    s.data(Some(&alice), update, json!({})).await;
    let r = s.gql(Some(&bob), q, json!({})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let r = s.gql(Some(&bob), update, json!({})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let b = s.data(Some(&bob), REGISTER, json!({"i": agent_input("old", "bob's")})).await;
    assert_eq!(b["registerAgent"]["agent"]["userId"], "bob", "{b}");
    assert_eq!(s.data(Some(&alice), q, json!({})).await["agent"]["title"], "legacy");
    let db = s.stop();
    let log = support::read_log(&db).await;
    let streams = |t: &str| log.iter().filter(|e| e.event_type == t).map(|e| e.stream_id.clone()).collect::<Vec<_>>();
    assert_eq!(streams("agent.config_updated"), ["agent-old"], "alice's change lands in her global stream");
    let mut mine: Vec<String> = streams("agent.registered").into_iter().filter(|s| s.ends_with("old")).collect();
    mine.sort();
    assert_eq!(mine, ["agent-old", "agent@bob/old"]);
    support::verify_read_models(&db).await;
}

both!(
    agent_ids_are_per_owner as agent_ids_per_owner,
    legacy_global_agent_stream_stays_its_owners as legacy_agent_stream_stays_its_owners
);
