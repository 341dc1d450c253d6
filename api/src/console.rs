//! The operator console (`console/`, a single-page app) and GraphiQL, served by the binary
//! itself: their built files are embedded here, so nothing is fetched from elsewhere and no
//! Node runs with the server. Every console route answers the same page; the page reads the
//! route and talks to the server only through `/graphql`.

use axum::{
    Router,
    extract::Path,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};

/// The paths of the console's pages (the page itself picks what to show).
pub const PAGES: &[&str] = &[
    "/",
    "/runs",
    "/runs/{id}",
    "/tasks",
    "/tasks/{id}",
    "/conversations",
    "/conversations/{id}",
    "/inbox",
    "/schedules",
    "/analytics",
    "/log",
];

/// What a page may load: only this server (GraphiQL's stylesheet sets inline styles, its
/// fonts and icons are `data:` URLs; subscriptions are websockets to the same origin).
const PAGE_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
    img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
    form-action 'self'";

const INDEX: &[u8] = include_bytes!("../../console/dist/index.html");
const GRAPHIQL: &[u8] = include_bytes!("../../console/dist/graphiql.html");

/// The built files under `/console/`, by name, with their media types.
const ASSETS: &[(&str, &str, &[u8])] = &[
    ("console.js", "text/javascript; charset=utf-8", include_bytes!("../../console/dist/console.js")),
    ("console.css", "text/css; charset=utf-8", include_bytes!("../../console/dist/console.css")),
    ("graphiql-start.js", "text/javascript; charset=utf-8", include_bytes!("../../console/dist/graphiql-start.js")),
    ("graphiql.min.js", "text/javascript; charset=utf-8", include_bytes!("../../console/dist/graphiql.min.js")),
    ("graphiql.min.css", "text/css; charset=utf-8", include_bytes!("../../console/dist/graphiql.min.css")),
    (
        "react.production.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../console/dist/react.production.min.js"),
    ),
    (
        "react-dom.production.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../console/dist/react-dom.production.min.js"),
    ),
];

/// The console's routes: its pages and `/console/<file>`.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let mut router = Router::new().route("/console/{name}", get(asset));
    for page in PAGES {
        router = router.route(page, get(index));
    }
    router
}

async fn index() -> Response {
    page(INDEX)
}

/// GraphiQL's page (what a browser's GET of `/graphql` answers).
pub fn graphiql() -> Response {
    page(GRAPHIQL)
}

fn page(body: &'static [u8]) -> Response {
    let mut r = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(PAGE_POLICY));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    r
}

async fn asset(Path(name): Path<String>) -> Response {
    let Some((_, content_type, body)) = ASSETS.iter().find(|(n, _, _)| *n == name) else {
        return (StatusCode::NOT_FOUND, "no such file").into_response();
    };
    let mut r = ([(header::CONTENT_TYPE, *content_type)], *body).into_response();
    let h = r.headers_mut();
    // Fixed names: the browser asks again each load (a new binary may bring new files).
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    r
}
