//! The checked-in SDL (`api/schema.graphql`) must match the code.

#[test]
fn checked_in_schema_matches_the_code() {
    let code = agentlog_api::graphql::sdl();
    let file = include_str!("../../schema.graphql");
    assert!(
        code == file,
        "api/schema.graphql is out of date; regenerate it with `cargo run -p agentlog-api -- schema > api/schema.graphql`"
    );
}
