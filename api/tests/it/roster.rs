//! The roster: upstream's built-in agents exist from the first start, once, whatever the
//! restarts and instances; their ids are reserved.

use crate::support;

use serde_json::json;
use support::{Db, Server};

const AGENTS: &str = "{ agents(first: 100) { edges { node { id builtin userId title } } } }";
const AGENT_EVENTS: &str =
    "{ events(first: 500, filter: {eventTypes: [\"agent.registered\"]}) { edges { node { streamId } } } }";

async fn registered(s: &Server) -> Vec<String> {
    let d = s.data(Some(&s.admin_token), AGENT_EVENTS, json!({})).await;
    let mut streams: Vec<String> = d["events"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["node"]["streamId"].as_str().map(str::to_string))
        .collect();
    streams.sort();
    streams
}

async fn built_in_agents_exist_from_the_first_start_once(db: Db) {
    let mut s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let d = s.eventually(&alice, AGENTS, |d| d["agents"]["edges"].as_array().is_some_and(|e| e.len() >= 12)).await;
    let agents = d["agents"]["edges"].as_array().unwrap().clone();
    assert_eq!(agents.len(), 12, "upstream's twelve built-ins: {d}");
    assert!(agents.iter().all(|a| a["node"]["builtin"] == true && a["node"]["userId"] == "system"), "{d}");
    let inbox = agents.iter().find(|a| a["node"]["id"] == "inbox").expect("the inbox agent");
    assert_eq!(inbox["node"]["title"], "Inbox");
    let first = registered(&s).await;
    assert_eq!(first.len(), 12, "{first:?}");
    // A restart and a second instance on the same database register nothing more.
    s.restart().await;
    let sibling = s.sibling().await;
    assert_eq!(registered(&s).await, first, "registered once");
    let d = sibling.data(Some(&alice), AGENTS, json!({})).await;
    assert_eq!(d["agents"]["edges"].as_array().map(Vec::len), Some(12), "{d}");
    // A user cannot change or archive a built-in.
    let r = s.gql(Some(&alice), "mutation { archiveAgent(id: \"inbox\") { position } }", json!({})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    sibling.stop();
    s.stop();
}

both!(built_in_agents_exist_from_the_first_start_once as built_in_agents_exist_from_the_first_start_once);
