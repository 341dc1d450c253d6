//! `agentlog token create | list | revoke`, run on the database of a live server, as an operator
//! does when the only admin token is lost or leaked: a token made by the CLI is accepted, the
//! list names every token without a secret, and a revocation takes effect at the server's next
//! request.

use std::process::Command;

use serde_json::json;

use crate::support::{Db, Server, error_code};

/// `agentlog token …args --database url`: its status and standard output and error.
fn token_cli(url: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_agentlog"))
        .arg("token")
        .args(args)
        .args(["--database", url])
        .output()
        .expect("run agentlog token");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn the_token_cli_creates_lists_and_revokes(db: Db) {
    let s = Server::start(db).await;
    let url = s.db.url();
    // A user token from the CLI, then an admin one (the way back when the admin token is lost).
    let (ok, secret, err) = token_cli(&url, &["create", "--user", "alice", "--name", "laptop\tforged"]);
    assert!(ok, "{err}");
    let alice = secret.trim().to_string();
    let (ok, secret, err) = token_cli(&url, &["create", "--user", "ops", "--admin", "--name", "recovery"]);
    assert!(ok, "{err}");
    let ops = secret.trim().to_string();
    let who = s.data(Some(&alice), "{ tokens { userId role name } }", json!({})).await;
    assert_eq!(who["tokens"], json!([{"userId": "alice", "role": "user", "name": "laptop\tforged"}]));
    let all = s.data(Some(&ops), "{ tokens { tokenId userId role } }", json!({})).await;
    let alice_id = all["tokens"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["userId"] == "alice"))
        .and_then(|t| t["tokenId"].as_str())
        .expect("alice's token listed")
        .to_string();

    // The list: a header and one row per token, newest first; ids, never secrets; a tab in a
    // name cannot forge a column.
    let (ok, table, err) = token_cli(&url, &["list"]);
    assert!(ok, "{err}");
    let rows: Vec<Vec<&str>> = table.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows[0], ["TOKEN ID", "NAME", "USER", "ROLE", "CREATED", "LAST USED", "REVOKED"]);
    assert_eq!(rows.len(), 4, "{table}");
    assert!(rows.iter().all(|r| r.len() == 7), "{table}");
    assert_eq!((rows[1][2], rows[1][3], rows[1][1]), ("ops", "admin", "recovery"));
    assert_eq!((rows[2][0], rows[2][1], rows[2][2], rows[2][6]), (alice_id.as_str(), "laptop forged", "alice", "-"));
    assert_eq!(rows[3][2], "admin");
    for secret in [&alice, &ops, &s.admin_token] {
        assert!(!table.contains(secret.as_str()), "a secret in the list");
    }
    let (ok, table, err) = token_cli(&url, &["list", "--user", "alice"]);
    assert!(ok, "{err}");
    assert_eq!(table.lines().count(), 2, "{table}");

    // Revoked from the CLI: refused at the server's next request, shown revoked; again: an error.
    let (ok, out, err) = token_cli(&url, &["revoke", &alice_id]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), format!("revoked {alice_id}"));
    let r = s.gql(Some(&alice), "{ tokens { tokenId } }", json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("UNAUTHENTICATED"), "{r}");
    let (_, table, _) = token_cli(&url, &["list", "--user", "alice"]);
    assert_ne!(table.lines().nth(1).and_then(|l| l.split('\t').nth(6)), Some("-"), "{table}");
    let (ok, _, err) = token_cli(&url, &["revoke", &alice_id]);
    assert!(!ok);
    assert!(err.contains(&format!("no live token {alice_id}")), "{err}");
    // Listing or revoking on a log that does not exist refuses and leaves no file behind.
    let missing = std::env::temp_dir().join(format!("agentlog-no-log-{}.db", uuid::Uuid::now_v7().simple()));
    for args in [&["list"][..], &["revoke", &alice_id][..]] {
        let (ok, _, err) = token_cli(&format!("sqlite:{}", missing.display()), args);
        assert!(!ok && err.contains("no log at"), "{err}");
        assert!(!missing.exists(), "{args:?} made a log");
    }
    // The others still work.
    s.data(Some(&ops), "{ headPosition }", json!({})).await;
    s.data(Some(&s.admin_token), "{ headPosition }", json!({})).await;
}

/// `sql` on the database at `url`; the first column of its first row when it has one.
async fn sql(url: &str, sql: &str) -> Option<String> {
    use sqlx::{Connection, Row};
    let row = if url.starts_with("sqlite:") {
        let mut conn = sqlx::SqliteConnection::connect(url).await.expect("connect");
        sqlx::query(sql).fetch_optional(&mut conn).await.expect(sql).map(|r| r.try_get::<String, _>(0).ok())
    } else {
        let mut conn = sqlx::PgConnection::connect(url).await.expect("connect");
        sqlx::query(sql).fetch_optional(&mut conn).await.expect(sql).map(|r| r.try_get::<String, _>(0).ok())
    };
    row.flatten()
}

/// `list` and `revoke` never change the schema: on a log an older server serves (one lacking
/// this build's migration 0040) they are refused and leave it as it was; `create` migrates, as
/// the `serve` it precedes would.
async fn list_and_revoke_leave_an_older_schema_alone(db: Db) {
    let url = db.url();
    let (ok, _, err) = token_cli(&url, &["create", "--user", "ops", "--admin", "--name", "first"]);
    assert!(ok, "{err}");
    sql(&url, "DELETE FROM _sqlx_migrations WHERE version >= 40").await;
    sql(&url, "DROP TABLE budget_spend_rollups").await;
    sql(&url, "DROP TABLE server_secrets").await;
    let postgres = !url.starts_with("sqlite:");
    if postgres {
        sql(&url, "ALTER TABLE events ALTER COLUMN payload TYPE jsonb, ALTER COLUMN metadata TYPE jsonb").await;
    }
    let newest = "SELECT CAST(MAX(version) AS TEXT) FROM _sqlx_migrations";
    let payload = "SELECT format_type(atttypid, atttypmod) FROM pg_attribute \
                   WHERE attrelid = 'events'::regclass AND attname = 'payload'";
    for args in [&["list"][..], &["revoke", "tok_unknown"]] {
        let (ok, _, err) = token_cli(&url, args);
        assert!(!ok && err.contains("lacks this build's migration(s) 40"), "{args:?}: {err}");
        assert!(err.contains("agentlog serve"), "{args:?} says what to do: {err}");
    }
    assert_eq!(sql(&url, newest).await.as_deref(), Some("39"));
    if postgres {
        assert_eq!(sql(&url, payload).await.as_deref(), Some("jsonb"));
    }
    let (ok, _, err) = token_cli(&url, &["create", "--user", "ops", "--admin", "--name", "second"]);
    assert!(ok, "{err}");
    assert_eq!(sql(&url, newest).await.as_deref(), Some("42"));
    let (ok, out, err) = token_cli(&url, &["list"]);
    assert!(ok && out.contains("second"), "{err}");
}

/// A token command touches the tokens' table and nothing else: on a log whose read models are
/// behind it applies no projection (it used to start the server's projection runner).
async fn a_token_command_applies_no_projection(db: Db) {
    use agentlog_domain::envelope::{Actor, EventMetadata, NewEvent};
    use agentlog_eventlog::{ExpectedVersion, StoreOptions, open_store};
    let url = db.url();
    let store = open_store(&url, StoreOptions::default()).await.expect("open the log");
    let id = uuid::Uuid::now_v7();
    let created = NewEvent::new(
        id,
        "task.created",
        json!({"taskId": "t1", "identifier": "T-1", "instruction": "go"}),
        EventMetadata::source(id, Actor::user("alice"), "alice", "user:alice"),
    );
    store.append("task@alice/t1", ExpectedVersion::NoStream, vec![created]).await.expect("append");
    store.close().await;
    for args in [&["create", "--user", "ops", "--admin", "--name", "n"][..], &["list"]] {
        let (ok, _, err) = token_cli(&url, args);
        assert!(ok, "{args:?}: {err}");
    }
    let applied = sql(&url, "SELECT CAST(COUNT(*) AS TEXT) FROM projection_checkpoints WHERE position > 0").await;
    assert_eq!(applied.as_deref(), Some("0"), "a token command applied a read model");
}

both!(
    a_token_command_applies_no_projection as a_token_command_applies_no_projection,
    the_token_cli_creates_lists_and_revokes as the_token_cli_creates_lists_and_revokes,
    list_and_revoke_leave_an_older_schema_alone as list_and_revoke_leave_an_older_schema_alone
);
