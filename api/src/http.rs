//! The HTTP surface: `/graphql` (POST, GET for GraphiQL, websocket upgrade for subscriptions
//! over graphql-transport-ws and graphql-ws), `/healthz`, `/readyz`, `/metrics`.

use async_graphql::{Data, ErrorExtensions, http::ALL_WEBSOCKET_PROTOCOLS};
use async_graphql_axum::{GraphQLProtocol, GraphQLWebSocket};
use axum::{
    Router,
    body::Bytes,
    extract::{DefaultBodyLimit, State, WebSocketUpgrade},
    http::{HeaderMap, StatusCode, header},
    response::{Html, IntoResponse, Response},
    routing::get,
};
use tracing::Instrument;

use crate::{
    auth::{Caller, bearer},
    error::{ApiError, UNAVAILABLE},
    graphql::{AppSchema, raw_json::RawJson},
    metrics::{Gauges, Metrics},
    state::AppState,
};

/// What the router needs.
#[derive(Clone)]
pub struct Http {
    /// The application.
    pub state: AppState,
    /// The GraphQL schema.
    pub schema: AppSchema,
}

/// The router.
pub fn router(http: Http) -> Router {
    let limit = http.state.limits.max_body_bytes;
    Router::new()
        .route("/graphql", get(graphql_get).post(graphql_post))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(http)
}

/// The caller a request's bearer token names (None: no token or an unknown one). Fails only
/// when the token could not be looked up — the database is unreachable — which must not be
/// answered as UNAUTHENTICATED.
async fn caller_from(state: &AppState, headers: &HeaderMap) -> Result<Option<Caller>, ApiError> {
    let Some(secret) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(bearer) else {
        return Ok(None);
    };
    state.tokens.authenticate(secret).await
}

/// A refused request body, answered in GraphQL's error shape so clients show it like any other.
fn refused(status: StatusCode, message: String) -> Response {
    error_response(status, "BAD_REQUEST", message)
}

/// An error answer in GraphQL's shape, with `extensions.code`.
fn error_response(status: StatusCode, code: &str, message: String) -> Response {
    let body = serde_json::json!({"errors": [{"message": message, "extensions": {"code": code}}]});
    (status, axum::Json(body)).into_response()
}

/// A token lookup that failed: the database is unreachable (503, UNAVAILABLE, retry later).
fn lookup_failed(e: &ApiError) -> Response {
    tracing::warn!(error = %e, "token lookup failed");
    let code = if e.code() == UNAVAILABLE { UNAVAILABLE } else { "INTERNAL" };
    error_response(StatusCode::SERVICE_UNAVAILABLE, code, format!("the token could not be checked: {e}"))
}

// The body is read as bytes first (not through async-graphql's extractor) so that an oversized
// body is a 413 and malformed JSON a 400 with a message, before anything else happens.
async fn graphql_post(
    State(http): State<Http>,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    Metrics::inc(&http.state.metrics.http_requests);
    Metrics::inc(&http.state.metrics.graphql_requests);
    let body = match body {
        Ok(b) => b,
        Err(e) => {
            Metrics::inc(&http.state.metrics.graphql_errors);
            return refused(e.status(), format!("request body refused: {}", e.body_text()));
        }
    };
    let mut request: async_graphql::Request = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            Metrics::inc(&http.state.metrics.graphql_errors);
            return refused(StatusCode::BAD_REQUEST, format!("request body is not a GraphQL JSON request: {e}"));
        }
    };
    let operation = request.operation_name.clone().unwrap_or_else(|| "anonymous".into());
    match caller_from(&http.state, &headers).await {
        Ok(Some(caller)) => request = request.data(caller),
        Ok(None) => {}
        Err(e) => {
            Metrics::inc(&http.state.metrics.graphql_errors);
            return lookup_failed(&e);
        }
    }
    // Cached conversation trees are spliced into the answer as written JSON (`raw_json`).
    let raw = std::sync::Arc::new(RawJson::default());
    request = request.data(std::sync::Arc::clone(&raw));
    let span = tracing::info_span!("graphql", operation = %operation);
    let response = http.schema.execute(request).instrument(span).await;
    if response.is_err() {
        Metrics::inc(&http.state.metrics.graphql_errors);
    }
    bounded(raw.respond(response), http.state.limits.max_response_bytes)
}

/// The answer, or LIMIT when its body is larger than `max` bytes (a client asked for more than
/// one answer may carry; it gets a message, not megabytes). Both answer forms are whole bodies
/// of a known length.
fn bounded(answer: Response, max: usize) -> Response {
    use axum::body::HttpBody as _;
    match answer.body().size_hint().exact() {
        Some(bytes) if bytes > max as u64 => {
            tracing::info!(bytes, max, "an answer over the response limit was replaced by LIMIT");
            let message = format!(
                "the answer is {bytes} bytes, more than the {max} one answer may carry; ask for less (smaller pages, fewer fields)"
            );
            error_response(StatusCode::OK, "LIMIT", message)
        }
        _ => answer,
    }
}

async fn graphql_get(
    State(http): State<Http>,
    headers: HeaderMap,
    protocol: Result<GraphQLProtocol, StatusCode>,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    Metrics::inc(&http.state.metrics.http_requests);
    match (upgrade, protocol) {
        (Ok(upgrade), Ok(protocol)) => {
            let from_header = match caller_from(&http.state, &headers).await {
                Ok(c) => c,
                Err(e) => return lookup_failed(&e),
            };
            let state = http.state.clone();
            let schema = http.schema.clone();
            upgrade.protocols(ALL_WEBSOCKET_PROTOCOLS).on_upgrade(move |socket| async move {
                GraphQLWebSocket::new(socket, schema, protocol)
                    .on_connection_init(move |payload| async move {
                        let mut data = Data::default();
                        // The token may come in the upgrade request or in connection_init.
                        let token = payload
                            .get("authorization")
                            .or_else(|| payload.get("Authorization"))
                            .and_then(|v| v.as_str())
                            .and_then(bearer)
                            .map(str::to_string)
                            .or_else(|| payload.get("token").and_then(|v| v.as_str()).map(str::to_string));
                        let caller = match token {
                            Some(t) => state.tokens.authenticate(&t).await.ok().flatten(),
                            None => from_header,
                        };
                        if let Some(c) = caller {
                            // Held in the connection's data: released when the socket closes.
                            let max = state.limits.max_connections_per_user;
                            let Some(hold) = state.connections.admit(&c.user_id, max) else {
                                return Err(async_graphql::Error::new(format!(
                                    "you hold {max} websocket connections, the most one user may; close one first"
                                ))
                                .extend_with(|_, e| e.set("code", "LIMIT")));
                            };
                            data.insert(hold);
                            data.insert(c);
                        }
                        Ok(data)
                    })
                    // No `keepalive_timeout`: it closes a connection whose client sent nothing for
                    // that long, and a subscriber that only listens (graphql-ws clients send no
                    // pings by default) must not be cut off on a quiet stream or a slow machine.
                    .serve()
                    .await
            })
        }
        _ => Html(GRAPHIQL_PAGE).into_response(),
    }
}

/// GraphiQL, as async-graphql's `GraphiQLSource` renders it for `/graphql`, kept as a static
/// page: the renderer's `graphiql` feature compiles a template engine (handlebars, pest,
/// derive_builder) for one fixed string.
const GRAPHIQL_PAGE: &str = include_str!("graphiql.html");

async fn healthz() -> &'static str {
    "ok"
}

async fn gauges(state: &AppState) -> Result<Gauges, String> {
    let head = state.store.head_position().await.map_err(|e| e.to_string())?;
    let status = state.runner.status();
    Ok(Gauges {
        head_position: head,
        projection_position: state.runner.position().min(head),
        failed_projections: status.iter().filter(|s| s.failed.is_some()).count(),
    })
}

/// How long `/readyz` waits for the database: a probe must get an answer, not a hang, when
/// the database is down (a checkout then waits for the pool's whole acquire timeout).
const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

async fn readyz(State(http): State<Http>) -> Response {
    let gauges = match tokio::time::timeout(READY_TIMEOUT, gauges(&http.state)).await {
        Ok(g) => g,
        Err(_) => Err(format!("no answer within {READY_TIMEOUT:?}")),
    };
    match gauges {
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: database unreachable: {e}\n")).into_response(),
        Ok(g) if g.failed_projections > 0 => {
            (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {} projection(s) failed\n", g.failed_projections))
                .into_response()
        }
        Ok(g) if g.head_position - g.projection_position > http.state.limits.ready_lag_events => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: projections {} events behind\n", g.head_position - g.projection_position),
        )
            .into_response(),
        Ok(_) => "ready\n".into_response(),
    }
}

async fn metrics(State(http): State<Http>) -> Response {
    let g = gauges(&http.state).await.unwrap_or_default();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], http.state.metrics.render(g)).into_response()
}
