//! The HTTP surface: `/graphql` (POST; GET for queries, GraphiQL for a browser, and the websocket
//! upgrade for subscriptions over graphql-transport-ws and graphql-ws; the rules of GraphQL over
//! HTTP are in `over_http`), `/healthz`, `/readyz`, `/metrics`, and the console's pages and
//! files (`console`).

use async_graphql::{Data, ErrorExtensions, http::ALL_WEBSOCKET_PROTOCOLS};
use async_graphql_axum::{GraphQLProtocol, GraphQLWebSocket};
use axum::{
    Router,
    body::Bytes,
    extract::{
        ConnectInfo, DefaultBodyLimit, RawQuery, State, WebSocketUpgrade,
        ws::{CloseFrame, Message},
    },
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use std::{
    net::SocketAddr,
    sync::{Arc, Mutex, OnceLock},
    time::Instant,
};

use futures_util::{FutureExt, SinkExt, StreamExt};
use tokio::sync::broadcast;
use tracing::Instrument;

use crate::{
    auth::{Caller, bearer},
    error::{ApiError, UNAVAILABLE},
    feed,
    graphql::{AppSchema, durations::Ran, raw_json::RawJson},
    metrics::{Gauges, Metrics},
    over_http::{self, AnswerType},
    oversized::bounded_message,
    quota::QuotaHold,
    state::AppState,
};

/// What the router needs.
#[derive(Clone)]
pub struct Http {
    /// The application.
    pub state: AppState,
    /// The GraphQL schema.
    pub schema: AppSchema,
    /// The `events` feed's renders, shared by its subscribers.
    renders: Arc<feed::shared::Renders>,
}

impl Http {
    /// What the router serves: `state` through `schema`.
    pub fn new(state: AppState, schema: AppSchema) -> Self {
        Self { state, schema, renders: Arc::default() }
    }
}

/// The router.
pub fn router(http: Http) -> Router {
    let limit = http.state.limits.max_body_bytes;
    Router::new()
        .route(
            "/graphql",
            get(graphql_get).post(graphql_post).layer(axum::middleware::from_fn_with_state(http.clone(), admitted)),
        )
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .merge(crate::console::routes())
        .layer(DefaultBodyLimit::max(limit))
        .with_state(http)
}

/// Every `/graphql` request is counted from its headers until its answer is built (a request
/// whose body is still arriving is in flight, and the shutdown waits for it); one that comes
/// after the shutdown began is refused with UNAVAILABLE.
async fn admitted(State(http): State<Http>, request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let Some(_in_flight) = http.state.shutdown.admit() else {
        Metrics::inc(&http.state.metrics.http_requests);
        return shutting_down();
    };
    next.run(request).await
}

/// The caller a request's bearer token names (None: no token or an unknown one). Fails only
/// when the token could not be looked up — the database is unreachable — which must not be
/// answered as UNAUTHENTICATED.
async fn caller_from(state: &AppState, headers: &HeaderMap) -> Result<Option<Caller>, ApiError> {
    Ok(token_caller_from(state, headers).await?.map(|(caller, _)| caller))
}

/// The caller of the request's bearer token, with the token's id.
async fn token_caller_from(state: &AppState, headers: &HeaderMap) -> Result<Option<(Caller, String)>, ApiError> {
    let Some(secret) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(bearer) else {
        return Ok(None);
    };
    state.tokens.authenticate_token(secret).await
}

/// Resolves when the token in `slot` is revoked: at once for a revocation in this process,
/// within [`crate::auth::REVOCATION_CHECK_EVERY`] for one in another (`Tokens::follow_revocations`).
async fn revoked(state: AppState, slot: Arc<Mutex<Option<String>>>) {
    let mut revocations = state.tokens.revocations();
    let current = || slot.lock().ok().and_then(|s| s.clone());
    loop {
        match revocations.recv().await {
            Ok(id) if Some(&id) == current().as_ref() => return,
            Ok(_) => {}
            // Some announcements were missed: ask the database about this one.
            Err(broadcast::error::RecvError::Lagged(_)) => {
                if let Some(id) = current()
                    && matches!(state.tokens.is_live(&id).await, Ok(false))
                {
                    return;
                }
            }
            Err(broadcast::error::RecvError::Closed) => std::future::pending::<()>().await,
        }
    }
}

/// `/metrics` carries users' agent ids, models and error types in its labels: an admin token or
/// the `--metrics-token` secret reads it (401 UNAUTHENTICATED without either, 403 FORBIDDEN for
/// a user's token).
async fn may_read_metrics(state: &AppState, headers: &HeaderMap) -> Result<(), Response> {
    let secret = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(bearer);
    let Some(secret) = secret else {
        return Err(error_response(
            StatusCode::UNAUTHORIZED,
            "UNAUTHENTICATED",
            "/metrics needs an admin token or the metrics token (Authorization: Bearer …)".into(),
        ));
    };
    if state.settings.metrics_token_sha256.is_some_and(|expected| crate::auth::secret_sha256(secret) == expected) {
        return Ok(());
    }
    match state.tokens.authenticate(secret).await {
        Ok(Some(caller)) if caller.admin => Ok(()),
        Ok(Some(_)) => Err(error_response(
            StatusCode::FORBIDDEN,
            "FORBIDDEN",
            "/metrics is read with an admin token or the metrics token".into(),
        )),
        Ok(None) => Err(error_response(StatusCode::UNAUTHORIZED, "UNAUTHENTICATED", "unknown or revoked token".into())),
        Err(e) => Err(lookup_failed(&e)),
    }
}

/// An error answer in GraphQL's shape, with `extensions.code`.
fn error_response(status: StatusCode, code: &str, message: String) -> Response {
    over_http::error_answer(status, AnswerType::Json, code, message)
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
    let answer = AnswerType::from_headers(&headers);
    if let Err(message) = over_http::check_post_content_type(&headers) {
        Metrics::inc(&http.state.metrics.graphql_errors);
        return over_http::error_answer(StatusCode::UNSUPPORTED_MEDIA_TYPE, answer, "BAD_REQUEST", message.into());
    }
    let body = match body {
        Ok(b) => b,
        Err(e) => {
            Metrics::inc(&http.state.metrics.graphql_errors);
            return over_http::error_answer(
                e.status(),
                answer,
                "BAD_REQUEST",
                format!("request body refused: {}", e.body_text()),
            );
        }
    };
    let request: async_graphql::Request = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            Metrics::inc(&http.state.metrics.graphql_errors);
            return over_http::error_answer(
                StatusCode::BAD_REQUEST,
                answer,
                "BAD_REQUEST",
                format!("request body is not a GraphQL JSON request: {e}"),
            );
        }
    };
    if request.query.trim().is_empty() {
        Metrics::inc(&http.state.metrics.graphql_errors);
        return over_http::error_answer(
            StatusCode::BAD_REQUEST,
            answer,
            "BAD_REQUEST",
            "the request has no `query` (a GraphQL document as a string)".into(),
        );
    }
    execute(&http, &headers, request, answer).await
}

/// Run one GraphQL request from HTTP (a POST, or a GET's query) and write its answer; its
/// duration is counted (`graphql::durations`).
async fn execute(http: &Http, headers: &HeaderMap, request: async_graphql::Request, answer: AnswerType) -> Response {
    let started = Instant::now();
    let ran = Arc::new(Ran::default());
    let response = run(http, headers, request.data(Arc::clone(&ran)), answer).await;
    let took = started.elapsed();
    http.state.metrics.requests.observe(ran.get(), took);
    if http.state.settings.slow_request.is_some_and(|over| took >= over) {
        let (kind, field) = ran.get().map_or(("none", "none"), |op| (op.kind, op.field.as_str()));
        tracing::warn!(operation_type = kind, field, millis = took.as_millis() as u64, "slow request");
    }
    response
}

/// [`execute`]'s work: the caller, the engine, the answer.
async fn run(http: &Http, headers: &HeaderMap, mut request: async_graphql::Request, answer: AnswerType) -> Response {
    let operation = request.operation_name.clone().unwrap_or_else(|| "anonymous".into());
    match caller_from(&http.state, headers).await {
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
    if answer == AnswerType::GraphqlResponse && over_http::is_request_error(&response) {
        let body = over_http::request_error_body(&response);
        return bounded(response, body, http.state.limits.max_response_bytes, answer, StatusCode::BAD_REQUEST);
    }
    let body = raw.body(&response);
    bounded(response, body, http.state.limits.max_response_bytes, answer, StatusCode::OK)
}

/// The answer's JSON `body` (cached trees spliced in) with `status`, or LIMIT when it is larger
/// than `max` bytes (a client asked for more than one answer may carry; it gets a message, not a
/// stream of megabytes).
fn bounded(
    response: async_graphql::Response,
    body: Result<Vec<u8>, serde_json::Error>,
    max: usize,
    answer: AnswerType,
    status: StatusCode,
) -> Response {
    let headers = response.http_headers.clone();
    let body = match body {
        Ok(b) => b,
        Err(e) => {
            return error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "INTERNAL",
                format!("the answer did not serialise: {e}"),
            );
        }
    };
    if body.len() > max {
        tracing::info!(bytes = body.len(), max, "an answer over the response limit was replaced by LIMIT");
        let message = format!(
            "the answer is {} bytes, more than the {max} one answer may carry; ask for less (smaller pages, fewer fields)",
            body.len()
        );
        return over_http::error_answer(StatusCode::OK, answer, "LIMIT", message);
    }
    let mut out = (status, [(header::CONTENT_TYPE, answer.content_type())], body).into_response();
    if response.is_ok()
        && let Some(cc) = response.cache_control.value()
        && let Ok(v) = axum::http::HeaderValue::from_str(&cc)
    {
        out.headers_mut().insert(header::CACHE_CONTROL, v);
    }
    out.headers_mut().extend(headers);
    out
}

/// The quota key all anonymous websockets share (addresses are keyed by their IP).
const ANONYMOUS_TOTAL: &str = "*";

/// A place for one websocket that has no known caller yet: one of its address's and one of the
/// server's, or why not (the cap that is full).
fn anonymous_hold(state: &AppState, peer: Option<std::net::IpAddr>) -> Result<[QuotaHold; 2], String> {
    let limits = &state.limits;
    let address = peer.map_or_else(|| "unknown".to_string(), |ip| ip.to_string());
    let Some(mine) = state.anonymous.admit(&address, limits.max_anonymous_connections_per_address) else {
        return Err(format!(
            "{address} holds {} websockets without a token, the most one address may; send the token in the upgrade request or finish connection_init first",
            limits.max_anonymous_connections_per_address
        ));
    };
    let Some(all) = state.anonymous.admit(ANONYMOUS_TOTAL, limits.max_anonymous_connections) else {
        return Err(format!(
            "the server holds {} websockets without a token, the most it keeps; send the token in the upgrade request",
            limits.max_anonymous_connections
        ));
    };
    Ok([mine, all])
}

async fn graphql_get(
    State(http): State<Http>,
    headers: HeaderMap,
    RawQuery(query_string): RawQuery,
    extensions: axum::http::Extensions,
    protocol: Result<GraphQLProtocol, StatusCode>,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    Metrics::inc(&http.state.metrics.http_requests);
    match (upgrade, protocol) {
        (Ok(upgrade), Ok(protocol)) => {
            // Held for the connection's life, so the shutdown waits for its close frame.
            let Some(in_flight) = http.state.shutdown.admit() else { return shutting_down() };
            let from_header = match token_caller_from(&http.state, &headers).await {
                Ok(c) => c,
                Err(e) => return lookup_failed(&e),
            };
            // A socket with no valid token yet takes an anonymous place until its
            // connection_init succeeds (so a flood of them cannot grow without bound).
            let anonymous = match from_header {
                Some(_) => None,
                None => {
                    let peer = extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
                    match anonymous_hold(&http.state, peer) {
                        Ok(hold) => Some(hold),
                        Err(why) => return error_response(StatusCode::TOO_MANY_REQUESTS, "LIMIT", why),
                    }
                }
            };
            let anonymous = Arc::new(Mutex::new(anonymous));
            // The protocol the engine speaks on this socket (its extractor's choice, which keeps it private).
            let Some(feed_protocol) = feed::protocol(&headers) else {
                return error_response(StatusCode::BAD_REQUEST, "VALIDATION", "no GraphQL websocket protocol".into());
            };
            let (initialised, mut init_seen) = tokio::sync::watch::channel(false);
            let init_timeout = http.state.limits.connection_init_timeout;
            let state = http.state.clone();
            let schema = http.schema.clone();
            let shutdown = http.state.shutdown.clone();
            // A small read buffer: the codec zeroes the whole free part of it before every read
            // attempt, and a subscription's connection is polled (and tries a read) for every event
            // it is sent; clients send only small messages (connection_init, subscribe, pings).
            let sockets = http.state.sockets.clone();
            let renders = Arc::clone(&http.renders);
            let upgraded = upgrade.protocols(ALL_WEBSOCKET_PROTOCOLS).read_buffer_size(WS_READ_BUFFER);
            // The connection runs on the websockets' runtime (`sockets`): its sends must not
            // queue ahead of requests.
            upgraded.on_upgrade(move |socket| {
                let connection = async move {
                    let _in_flight = in_flight;
                    let (mut sink, stream) = socket.split();
                    // The token the connection authenticated with: revoking it closes the socket.
                    let slot: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
                    let init_slot = slot.clone();
                    let watch = revoked(state.clone(), slot);
                    // The protocol writes through a channel, so this task can still close the socket.
                    let (tx, mut rx) = tokio::sync::mpsc::channel::<Message>(16);
                    // `events` subscriptions the feed can serve skip the engine (crate::feed).
                    let accepted: Arc<OnceLock<Caller>> = Arc::new(OnceLock::new());
                    let (mut intercept, commands) = feed::Intercept::new(state.clone(), renders, feed_protocol, accepted.clone());
                    let stream = stream.filter(move |item| {
                        let fed = matches!(item, Ok(message) if intercept.take(message));
                        std::future::ready(!fed)
                    });
                    let mut fed = feed::Fed::new(commands, state.limits.max_response_bytes);
                    // async-graphql closes a refused connection_init with 1002; graphql-ws says 4401.
                    let max_bytes = state.limits.max_response_bytes;
                    let out = Box::pin(futures_util::sink::unfold(tx, move |tx, msg: Message| async move {
                        tx.send(bounded_message(unauthorized_close(msg), max_bytes)).await.map_err(axum::Error::new)?;
                        Ok::<_, axum::Error>(tx)
                    }));
                    let serve = GraphQLWebSocket::new_with_pair(out, stream, schema, protocol)
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
                                Some(t) => match state.tokens.authenticate_token(t.as_str()).await {
                                    Ok(c) => c,
                                    Err(e) => return Err(async_graphql::Error::new(e.to_string())),
                                },
                                None => from_header,
                            };
                            // No token, or one that is unknown or revoked: closed with 4401.
                            let Some((c, token_id)) = caller else { return Err(async_graphql::Error::new(UNAUTHORIZED)) };
                            // Held in the connection's data: released when the socket closes.
                            let max = state.limits.max_connections_per_user;
                            let Some(hold) = state.connections.admit(&c.user_id, max) else {
                                return Err(async_graphql::Error::new(format!(
                                    "you hold {max} websocket connections, the most one user may; close one first"
                                ))
                                .extend_with(|_, e| e.set("code", "LIMIT")));
                            };
                            data.insert(hold);
                            if let Ok(mut s) = init_slot.lock() {
                                *s = Some(token_id.clone());
                            }
                            // Watched from here on; a revocation before (the upgrade's token is
                            // checked when the socket opens, maybe seconds earlier, on any
                            // instance) is found by asking once more.
                            match state.tokens.is_live(&token_id).await {
                                Ok(true) => {}
                                Ok(false) => return Err(async_graphql::Error::new(UNAUTHORIZED)),
                                Err(e) => return Err(async_graphql::Error::new(e.to_string())),
                            }
                            // Known now: its anonymous place is free again.
                            if let Ok(mut a) = anonymous.lock() {
                                a.take();
                            }
                            let _ = initialised.send(true);
                            let _ = accepted.set(c.clone());
                            data.insert(c);
                            Ok(data)
                        })
                        // No `keepalive_timeout`: it closes a connection whose client sent nothing for
                        // that long, and a subscriber that only listens (graphql-ws clients send no
                        // pings by default) must not be cut off on a quiet stream or a slow machine.
                        .serve();
                    // What queued while the socket was busy goes out in one write: a subscriber handed
                    // several events at once costs one flush, not one per event.
                    // The engine's messages and the feed's (crate::feed) go out through one writer; it
                    // ends when the engine's output does (the connection is closing).
                    let forward = async {
                        'forward: loop {
                            let first = tokio::select! {
                                biased;
                                message = rx.recv() => match message {
                                    Some(m) => m,
                                    None => break,
                                },
                                message = fed.next() => message,
                            };
                            let mut queued = Some(first);
                            while let Some(msg) = queued {
                                if sink.feed(msg).await.is_err() {
                                    break 'forward;
                                }
                                queued = match rx.try_recv() {
                                    Ok(m) => Some(m),
                                    Err(_) => fed.next().now_or_never(),
                                };
                            }
                            if sink.flush().await.is_err() {
                                break;
                            }
                        }
                    };
                    // graphql-ws closes a socket whose connection_init did not come in time with 4408.
                    let init_late = async {
                        let late = tokio::time::timeout(init_timeout, init_seen.wait_for(|done| *done)).await.is_err();
                        if !late {
                            std::future::pending::<()>().await;
                        }
                    };
                    let closing = tokio::select! {
                        _ = async { tokio::join!(serve, forward) } => None,
                        () = watch => Some(CloseFrame { code: WS_UNAUTHORIZED, reason: "token revoked".into() }),
                        () = init_late => Some(CloseFrame { code: WS_INIT_TIMEOUT, reason: "Connection initialisation timeout".into() }),
                        () = shutdown.begun() => Some(CloseFrame { code: WS_GOING_AWAY, reason: "server shutting down".into() }),
                    };
                    if let Some(frame) = closing {
                        // Bounded: a client that reads nothing must not hold the shutdown.
                        let _ = tokio::time::timeout(CLOSE_SEND_TIMEOUT, sink.send(Message::Close(Some(frame)))).await;
                    }
                };
                async move {
                    // A connection that panicked is gone either way; the log says so.
                    if let Err(e) = sockets.spawn(connection).await {
                        tracing::warn!(error = %e, "a websocket connection ended abnormally");
                    }
                }
            })
        }
        _ => {
            let answer = AnswerType::from_headers(&headers);
            match over_http::read_get(query_string.as_deref(), &headers, answer) {
                over_http::Get::Graphiql => crate::console::graphiql(),
                over_http::Get::Refused(response) => {
                    Metrics::inc(&http.state.metrics.graphql_errors);
                    response
                }
                over_http::Get::Execute(request) => {
                    Metrics::inc(&http.state.metrics.graphql_requests);
                    execute(&http, &headers, *request, answer).await
                }
            }
        }
    }
}

/// The close code of a websocket whose `connection_init` is not authenticated (graphql-ws's
/// `4401: Unauthorized`).
pub const WS_UNAUTHORIZED: u16 = 4401;

/// The close code of a websocket whose `connection_init` did not come within
/// `ApiLimits::connection_init_timeout` (graphql-ws's `4408: Connection initialisation timeout`).
pub const WS_INIT_TIMEOUT: u16 = 4408;
/// The close code of every websocket when the server shuts down (RFC 6455 `1001 Going Away`):
/// the client reconnects, to this server once it is back or to another instance.
pub const WS_GOING_AWAY: u16 = 1001;

/// A websocket's read buffer (tungstenite's default is 128 KiB, zeroed on each read attempt).
const WS_READ_BUFFER: usize = 4 * 1024;

/// Longest wait to hand a websocket its close frame.
const CLOSE_SEND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// A request that came after the shutdown began: 503 UNAVAILABLE, nothing done, and the
/// connection closed so the client's next attempt opens a new one (to another instance, or to
/// this one once it is back).
fn shutting_down() -> Response {
    let mut response = error_response(
        StatusCode::SERVICE_UNAVAILABLE,
        UNAVAILABLE,
        "the server is shutting down; nothing was done: send the request again".into(),
    );
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, axum::http::HeaderValue::from_static("close"));
    headers.insert(header::RETRY_AFTER, axum::http::HeaderValue::from_static("1"));
    response
}

/// The reason a refused `connection_init` carries (the marker [`unauthorized_close`] looks for).
const UNAUTHORIZED: &str = "Unauthorized";

/// Turn async-graphql's close of a refused `connection_init` into graphql-ws's 4401.
fn unauthorized_close(msg: Message) -> Message {
    match msg {
        Message::Close(Some(frame)) if frame.reason.as_str() == UNAUTHORIZED => {
            Message::Close(Some(CloseFrame { code: WS_UNAUTHORIZED, reason: frame.reason }))
        }
        other => other,
    }
}

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
        projection_resumes: state.runner.timings().resumes,
        commands: state.handler.counts(),
        documents: state.parsed.counts(),
        wal_checkpoints: state.store.wal_checkpoints().map(|c| (c.passes(), c.frames(), c.failures())),
    })
}

/// How long `/readyz` waits for the database: a probe must get an answer, not a hang, when
/// the database is down (a checkout then waits for the pool's whole acquire timeout).
const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

async fn readyz(State(http): State<Http>) -> Response {
    if http.state.shutdown.is_draining() {
        return (StatusCode::SERVICE_UNAVAILABLE, "not ready: shutting down\n").into_response();
    }
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

async fn metrics(State(http): State<Http>, headers: HeaderMap) -> Response {
    if let Err(refused) = may_read_metrics(&http.state, &headers).await {
        return refused;
    }
    let g = gauges(&http.state).await.unwrap_or_default();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], http.state.metrics.render(g)).into_response()
}
