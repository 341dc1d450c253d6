//! GraphQL over HTTP as its spec says (graphql-http's `serverAudits` check it, see
//! `api/tests/it/clients.rs`): which media type an answer has, which status a refused request
//! gets, and what a GET may do.
//!
//! - The answer's type follows `Accept`: `application/graphql-response+json` when the client
//!   accepts it (at least as much as `application/json`), else `application/json` (also for no
//!   `Accept`, `*/*` or only types agentlog does not write).
//! - With `application/graphql-response+json`, a *request error* (the document does not parse or
//!   validate, a variable does not coerce, the request is refused before execution: no error has
//!   a path and there is no data) is a 400 whose body has no `data`. With `application/json` every
//!   GraphQL answer is a 200, as clients written before the spec expect.
//! - A POST must say `Content-Type: application/json`: anything else, or none, is a 415.
//! - A GET with a `query` parameter executes it when its operation is a query; a mutation or
//!   subscription over GET is a 405 (`Allow: POST`). A GET without `query` from a browser asking
//!   for `text/html` is GraphiQL; any other GET without `query` is a 400.

use async_graphql::{Request, Response as GqlResponse, Variables, parser::types::OperationType};
use axum::{
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::Deserialize;

/// The media type of an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnswerType {
    /// `application/json`: every GraphQL answer is a 200.
    Json,
    /// `application/graphql-response+json`: request errors are 400 without `data`.
    GraphqlResponse,
}

const GRAPHQL_RESPONSE: &str = "application/graphql-response+json";
const JSON: &str = "application/json";

impl AnswerType {
    /// The type the client's `Accept` header asks for.
    pub fn from_headers(headers: &HeaderMap) -> Self {
        let accept = headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()).collect::<Vec<_>>();
        let (mut graphql, mut json) = (None::<f32>, None::<f32>);
        for range in accept.iter().flat_map(|a| a.split(',')) {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q=").and_then(|q| q.trim().parse::<f32>().ok()))
                .next()
                .unwrap_or(1.0);
            let slot = match media.as_str() {
                GRAPHQL_RESPONSE => &mut graphql,
                JSON => &mut json,
                _ => continue,
            };
            *slot = Some(slot.map_or(q, |old| old.max(q)));
        }
        match (graphql, json) {
            (Some(g), j) if g > 0.0 && g >= j.unwrap_or(0.0) => Self::GraphqlResponse,
            _ => Self::Json,
        }
    }

    /// The `Content-Type` of the answer.
    pub fn content_type(self) -> HeaderValue {
        match self {
            Self::Json => HeaderValue::from_static("application/json; charset=utf-8"),
            Self::GraphqlResponse => HeaderValue::from_static("application/graphql-response+json; charset=utf-8"),
        }
    }
}

/// Whether `response` is a request error: refused before execution, so there is nothing to put
/// in `data` (every error without a path, and no data).
pub fn is_request_error(response: &GqlResponse) -> bool {
    !response.errors.is_empty()
        && matches!(response.data, async_graphql::Value::Null)
        && response.errors.iter().all(|e| e.path.is_empty())
}

/// The status and body of a request error answered as `application/graphql-response+json`: 400,
/// and the body without `data`.
pub fn request_error_body(response: &GqlResponse) -> Result<Vec<u8>, serde_json::Error> {
    let mut body = serde_json::Map::new();
    body.insert("errors".into(), serde_json::to_value(&response.errors)?);
    if !response.extensions.is_empty() {
        body.insert("extensions".into(), serde_json::to_value(&response.extensions)?);
    }
    serde_json::to_vec(&body)
}

/// `Err(415)` unless a POST says its body is JSON.
pub fn check_post_content_type(headers: &HeaderMap) -> Result<(), &'static str> {
    let Some(value) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return Err("a POST to /graphql needs `Content-Type: application/json`");
    };
    let media = value.split(';').next().unwrap_or("").trim();
    if media.eq_ignore_ascii_case(JSON) {
        Ok(())
    } else {
        Err("a POST to /graphql must be `Content-Type: application/json`")
    }
}

/// The parameters of a GraphQL GET.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GetParams {
    query: Option<String>,
    operation_name: Option<String>,
    variables: Option<String>,
    extensions: Option<String>,
}

/// What a GET of `/graphql` (not a websocket upgrade) asks for.
pub enum Get {
    /// A browser's page load: GraphiQL.
    Graphiql,
    /// A query to execute.
    Execute(Box<Request>),
    /// Refused before execution: the answer to send.
    Refused(Response),
}

/// Reads a GET's query string (`query`, `operationName`, `variables` and `extensions` as JSON).
pub fn read_get(query_string: Option<&str>, headers: &HeaderMap, answer: AnswerType) -> Get {
    let refuse =
        |status: StatusCode, message: String| Get::Refused(error_answer(status, answer, "BAD_REQUEST", message));
    let params: GetParams = match serde_urlencoded::from_str(query_string.unwrap_or("")) {
        Ok(p) => p,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, format!("the query string does not parse: {e}")),
    };
    let Some(query) = params.query else {
        let wants_html = headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.split(',').any(|r| r.trim().starts_with("text/html")));
        if wants_html {
            return Get::Graphiql;
        }
        return refuse(StatusCode::BAD_REQUEST, "a GET of /graphql needs a `query` parameter".into());
    };
    let doc = match async_graphql::parser::parse_query(&query) {
        Ok(doc) => doc,
        // The engine reports it in GraphQL's shape (as for a POST); nothing runs.
        Err(_) => return Get::Execute(Box::new(Request::new(query))),
    };
    let ty = crate::graphql::variables::selected_operation(&doc, params.operation_name.as_deref()).map(|op| op.ty);
    if matches!(ty, Some(OperationType::Mutation | OperationType::Subscription)) {
        let mut response = error_answer(
            StatusCode::METHOD_NOT_ALLOWED,
            answer,
            "BAD_REQUEST",
            "only queries may be sent with GET; send mutations (and subscriptions over a websocket) with POST".into(),
        );
        response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, POST"));
        return Get::Refused(response);
    }
    let mut request = Request::new(query);
    if let Some(name) = params.operation_name {
        request = request.operation_name(name);
    }
    if let Some(variables) = params.variables.filter(|v| !v.is_empty()) {
        match serde_json::from_str::<serde_json::Value>(&variables) {
            Ok(v @ serde_json::Value::Object(_)) => request = request.variables(Variables::from_json(v)),
            Ok(serde_json::Value::Null) => {}
            Ok(_) => return refuse(StatusCode::BAD_REQUEST, "`variables` must be a JSON object".into()),
            Err(e) => return refuse(StatusCode::BAD_REQUEST, format!("`variables` is not JSON: {e}")),
        }
    }
    if let Some(extensions) = params.extensions.filter(|v| !v.is_empty()) {
        match serde_json::from_str::<serde_json::Value>(&extensions) {
            Ok(v @ serde_json::Value::Object(_)) => match serde_json::from_value(v) {
                Ok(ext) => request.extensions = ext,
                Err(e) => return refuse(StatusCode::BAD_REQUEST, format!("`extensions` does not read: {e}")),
            },
            Ok(serde_json::Value::Null) => {}
            Ok(_) => return refuse(StatusCode::BAD_REQUEST, "`extensions` must be a JSON object".into()),
            Err(e) => return refuse(StatusCode::BAD_REQUEST, format!("`extensions` is not JSON: {e}")),
        }
    }
    Get::Execute(Box::new(request))
}

/// An error answer in GraphQL's shape (`errors[].extensions.code`) with the given status.
pub fn error_answer(status: StatusCode, answer: AnswerType, code: &str, message: String) -> Response {
    let body = serde_json::json!({"errors": [{"message": message, "extensions": {"code": code}}]});
    let mut response = (status, axum::Json(body)).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, answer.content_type());
    response
}
