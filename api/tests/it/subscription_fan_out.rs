//! One event stream fanned out to many websockets of different owners at once: each socket
//! gets exactly its owner's events, in order, none twice (several at a time, so the server
//! writes them in batches), and an admin's socket gets every one of them. The websocket threads
//! (and only they) run `--websocket-nice` steps nicer than the process (5 by default) and still
//! deliver; a niceness out of range is refused before anything starts.

use crate::support;

use serde_json::{Value, json};
use support::{Db, Server, Ws};

const START: &str = "mutation($input: StartOperationInput!) { startOperation(input: $input) { position } }";
const SUB: &str = "subscription($from: Int) { events(fromPosition: $from) { position userId } }";
const USERS: [&str; 3] = ["ann", "bob", "cyd"];
const SOCKETS_PER_USER: usize = 3;
const OPERATIONS_PER_USER: usize = 4;

/// The positions after `from` that `token` may read, oldest first.
async fn visible_after(s: &Server, token: &str, from: i64) -> Vec<i64> {
    let d = s
        .data(
            Some(token),
            "query($a: String) { events(first: 500, after: $a) { edges { node { position } } } }",
            json!({"a": from.to_string()}),
        )
        .await;
    d["events"]["edges"].as_array().unwrap().iter().map(|e| e["node"]["position"].as_i64().unwrap()).collect()
}

/// Read `n` events from `ws`: their positions and owners.
async fn read(ws: &mut Ws, n: usize) -> Vec<(i64, String)> {
    let mut got = Vec::with_capacity(n);
    while got.len() < n {
        let p = ws.next_data().await;
        assert!(p.get("errors").is_none(), "{p}");
        let e = &p["data"]["events"];
        got.push((e["position"].as_i64().unwrap(), e["userId"].as_str().unwrap().to_string()));
    }
    got
}

async fn each_owner_sees_exactly_its_own(db: Db) {
    let s = Server::start(db).await;
    let admin = s.admin_token.clone();
    let head = s.data(Some(&admin), "{ headPosition }", json!({})).await["headPosition"].as_i64().unwrap();
    let mut tokens = Vec::new();
    for u in USERS {
        tokens.push(s.user_token(u).await);
    }
    let mut sockets: Vec<(usize, Ws)> = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        for k in 0..SOCKETS_PER_USER {
            let mut ws = Ws::connect(&s, t, "graphql-transport-ws").await;
            ws.subscribe(&format!("s{k}"), SUB, json!({"from": head})).await;
            sockets.push((i, ws));
        }
    }
    let mut admin_ws = Ws::connect(&s, &admin, "graphql-transport-ws").await;
    // Every subscription starts at `head`, so none depends on reaching the server before the writes.
    admin_ws.subscribe("all", SUB, json!({"from": head})).await;

    // The users write interleaved, so one stretch of the log holds every owner's events.
    for n in 0..OPERATIONS_PER_USER {
        for t in &tokens {
            let input = json!({"input": {"operationId": format!("op-{n}"), "kind": "TASK", "agentId": "inbox", "model": "m1", "provider": "p1"}});
            s.data(Some(t), START, input).await;
        }
    }

    let mut everyone: Vec<i64> = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let expected = visible_after(&s, t, head).await;
        assert!(expected.len() >= OPERATIONS_PER_USER, "{} has {expected:?}", USERS[i]);
        everyone.extend(&expected);
        for (_, ws) in sockets.iter_mut().filter(|(owner, _)| *owner == i) {
            let got = read(ws, expected.len()).await;
            assert!(got.iter().all(|(_, u)| u == USERS[i]), "{} saw another owner's event: {got:?}", USERS[i]);
            let positions: Vec<i64> = got.iter().map(|(p, _)| *p).collect();
            assert_eq!(positions, expected, "{}: each of its events once, in order", USERS[i]);
        }
    }
    // The admin: every user's events among everything (reactors may have written more).
    everyone.sort_unstable();
    let last = *everyone.last().unwrap();
    let mut seen: Vec<i64> = Vec::new();
    while seen.last().is_none_or(|p| *p < last) {
        let p: Value = admin_ws.next_data().await;
        seen.push(p["data"]["events"]["position"].as_i64().unwrap());
    }
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "in order, none twice: {seen:?}");
    assert!(everyone.iter().all(|p| seen.contains(p)), "the admin saw {seen:?}, missing some of {everyone:?}");
    s.stop();
}

/// Niceness per thread name of process `pid`, from `/proc` (field 19 of each thread's `stat`).
fn nice_by_thread(pid: u32) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("the server's threads") {
        let stat = std::fs::read_to_string(task.expect("a thread").path().join("stat")).unwrap_or_default();
        // `tid (comm) state …`: the name may hold spaces, the fields after it do not.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        out.push((stat[open + 1..close].to_string(), fields[16].parse().expect("nice")));
    }
    out
}

/// The websocket threads `steps` nicer than the process (its main thread: a test runner may
/// itself run nicer than 0), the requests' threads as the process; the process's niceness.
fn assert_niceness(threads: &[(String, i64)], steps: i64) -> i64 {
    let main = threads.iter().find(|(n, _)| n == "agentlog").map(|(_, v)| *v).expect("the main thread");
    let expected = (main + steps).clamp(-20, 19);
    let ws: Vec<i64> = threads.iter().filter(|(n, _)| n.starts_with("agentlog-ws")).map(|(_, v)| *v).collect();
    assert!(!ws.is_empty(), "the websocket runtime's threads: {threads:?}");
    assert!(ws.iter().all(|n| *n == expected), "each websocket thread at {expected}: {threads:?}");
    let requests: Vec<i64> =
        threads.iter().filter(|(n, _)| n.starts_with("tokio-rt-worker")).map(|(_, v)| *v).collect();
    assert!(
        !requests.is_empty() && requests.iter().all(|n| *n == main),
        "the requests' threads as the process ({main}): {threads:?}"
    );
    main
}

async fn websocket_threads_run_at_their_niceness(db: Db) {
    // By default 5 steps nicer than the process; `--websocket-nice 0`: as the process.
    let s = Server::start(db).await;
    assert_niceness(&nice_by_thread(s.pid()), 5);
    // They deliver: a subscriber gets the event a request appends.
    let token = s.user_token("ann").await;
    let head = s.data(Some(&token), "{ headPosition }", json!({})).await["headPosition"].as_i64().unwrap();
    let mut ws = Ws::connect(&s, &token, "graphql-transport-ws").await;
    ws.subscribe("n", SUB, json!({"from": head})).await;
    let at = s
        .data(
            Some(&token),
            START,
            json!({"input": {"operationId": "op-nice", "kind": "TASK", "agentId": "inbox", "model": "m1", "provider": "p1"}}),
        )
        .await["startOperation"]["position"]
        .as_i64()
        .unwrap();
    let got = read(&mut ws, 1).await;
    assert!(got[0].0 > head && got[0].0 <= at && got[0].1 == "ann", "{got:?} after {head}, up to {at}");
    drop(ws);
    let s = Server::start_with(s.stop(), &["--websocket-nice", "0"]).await;
    assert_niceness(&nice_by_thread(s.pid()), 0);
    let s = Server::start_with(s.stop(), &["--websocket-nice", "7"]).await;
    assert_niceness(&nice_by_thread(s.pid()), 7);
    s.stop();

    // Steps from the process's own niceness: a server started under `nice -n 3` runs them at 8.
    let dir = std::env::temp_dir().join(format!("agentlog-nice-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).expect("data dir");
    let mut child = std::process::Command::new("nice")
        .args(["-n", "3", env!("CARGO_BIN_EXE_agentlog"), "serve", "--bind", "127.0.0.1:0", "--database"])
        .arg(format!("sqlite:{}", dir.join("x.db").display()))
        .arg("--data-dir")
        .arg(&dir)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run agentlog under nice");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !nice_by_thread(child.id()).iter().any(|(n, _)| n.starts_with("agentlog-ws")) {
        assert!(child.try_wait().expect("the server").is_none(), "the server under nice exited");
        assert!(std::time::Instant::now() < deadline, "no websocket threads: {:?}", nice_by_thread(child.id()));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let threads = nice_by_thread(child.id());
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let main = assert_niceness(&threads, 5);
    assert!(main >= 3, "the process under nice -n 3: {threads:?}");

    // Out of range: refused by the command line, nothing started.
    let dir = std::env::temp_dir().join(format!("agentlog-nice-{}", uuid::Uuid::now_v7().simple()));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentlog"))
        .args(["serve", "--bind", "127.0.0.1:0", "--websocket-nice", "20", "--database"])
        .arg(format!("sqlite:{}", dir.join("x.db").display()))
        .arg("--data-dir")
        .arg(&dir)
        .output()
        .expect("run agentlog");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--websocket-nice") && stderr.contains("20"), "{stderr}");
    assert!(!dir.join("x.db").exists(), "nothing was created");
}

both!(each_owner_sees_exactly_its_own as subscription_fan_out_each_owner_sees_its_own);
both!(websocket_threads_run_at_their_niceness as websocket_threads_run_at_their_niceness);
