//! Admission: what a request may cost and who may send it, decided on the parsed document
//! before the GraphQL engine validates or executes anything.
//!
//! The engine's own depth and complexity checks walk fragment spreads inline, once per spread:
//! a document of a few hundred bytes whose fragments each spread the previous one ten times
//! expands to 10⁸ fields, and walking (and validating) that takes seconds and gigabytes before
//! any limit answers. Here every fragment is measured once and its expansion memoised, so the
//! check is linear in the document's size, and a document whose expansion passes a limit is
//! refused (LIMIT) before the engine sees it. Then a request without a valid token may only
//! introspect (UNAUTHENTICATED otherwise), so nothing else is reachable anonymously.
//! A document that only introspects has a depth allowance of its own
//! (`ApiLimits::max_introspection_depth`): the full introspection query GraphiQL and code
//! generators send nests type references deeper than the data depth limit.
//!
//! A query (not a mutation: its outcome must not be left in doubt) that runs longer than
//! `ApiLimits::query_timeout` is stopped — its futures dropped, so the database connections
//! it held go back to the pool — and answered with LIMIT.

use std::collections::HashMap;

use async_graphql::{
    Request, Response, ServerError, ServerResult,
    extensions::ExtensionContext,
    parser::types::{ExecutableDocument, OperationType, Selection, SelectionSet},
};

use super::snapshot::RequestSnapshot;
use crate::{
    auth::Caller,
    graphql::parsed::ParsedDocuments,
    state::{ApiLimits, AppState},
};

/// Fragment spreads and selection sets nested deeper than this are refused whatever they
/// expand to: the measure recurses, and its stack must stay small.
const MAX_NESTING: usize = 64;

/// What a document expands to: every fragment spread counted as the fields it stands for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Expansion {
    /// Fields selected, counting each spread of a fragment as that fragment's fields, over
    /// every operation and fragment definition (the engine validates them all).
    pub selections: usize,
    /// The deepest field nesting of any operation.
    pub depth: usize,
}

/// Why a document was refused before validation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Expands past a limit.
    #[error("{0}")]
    Limit(String),
    /// A fragment spreads itself (directly or through others).
    #[error("fragment `{0}` spreads itself")]
    Cycle(String),
    /// Not introspection, and no valid token.
    #[error("authentication required: send `Authorization: Bearer <token>`")]
    Unauthenticated,
}

impl Refusal {
    fn code(&self) -> &'static str {
        match self {
            Self::Limit(_) => "LIMIT",
            Self::Cycle(_) => "VALIDATION",
            Self::Unauthenticated => "UNAUTHENTICATED",
        }
    }
}

enum Memo {
    InProgress,
    Done(Expansion),
}

struct Measure<'d> {
    doc: &'d ExecutableDocument,
    fragments: HashMap<&'d str, Memo>,
    max_selections: usize,
}

impl<'d> Measure<'d> {
    fn fragment(&mut self, name: &'d str, nesting: usize) -> Result<Expansion, Refusal> {
        match self.fragments.get(name) {
            Some(Memo::Done(e)) => return Ok(*e),
            Some(Memo::InProgress) => return Err(Refusal::Cycle(name.to_string())),
            None => {}
        }
        // An unknown fragment selects nothing here; the engine's validation names it.
        let Some(def) = self.doc.fragments.get(name) else { return Ok(Expansion::default()) };
        self.fragments.insert(name, Memo::InProgress);
        let e = self.set(&def.node.selection_set.node, nesting + 1)?;
        self.fragments.insert(name, Memo::Done(e));
        Ok(e)
    }

    fn set(&mut self, set: &'d SelectionSet, nesting: usize) -> Result<Expansion, Refusal> {
        if nesting > MAX_NESTING {
            return Err(Refusal::Limit(format!("selections and fragments may nest at most {MAX_NESTING} deep")));
        }
        let mut total = Expansion::default();
        for item in &set.items {
            let e = match &item.node {
                Selection::Field(f) => {
                    let inner = self.set(&f.node.selection_set.node, nesting + 1)?;
                    Expansion { selections: inner.selections.saturating_add(1), depth: inner.depth + 1 }
                }
                Selection::FragmentSpread(s) => self.fragment(s.node.fragment_name.node.as_str(), nesting)?,
                Selection::InlineFragment(i) => self.set(&i.node.selection_set.node, nesting + 1)?,
            };
            total.selections = total.selections.saturating_add(e.selections);
            total.depth = total.depth.max(e.depth);
            if total.selections > self.max_selections {
                return Err(self.too_many());
            }
        }
        Ok(total)
    }

    fn too_many(&self) -> Refusal {
        Refusal::Limit(format!(
            "the query is too large: it selects more than {} fields, counting each fragment spread as the fields it stands for",
            self.max_selections
        ))
    }
}

/// Measure `doc`'s expansion, refusing it as soon as it passes `max_selections` (so the work is
/// bounded by the document's size whatever it would expand to).
pub fn measure(doc: &ExecutableDocument, max_selections: usize) -> Result<Expansion, Refusal> {
    let mut m = Measure { doc, fragments: HashMap::new(), max_selections };
    let mut total = Expansion::default();
    let mut add = |m: &Measure<'_>, e: Expansion, deepest: bool| {
        total.selections = total.selections.saturating_add(e.selections);
        if deepest {
            total.depth = total.depth.max(e.depth);
        }
        if total.selections > max_selections { Err(m.too_many()) } else { Ok(()) }
    };
    for (_, op) in doc.operations.iter() {
        let e = m.set(&op.node.selection_set.node, 0)?;
        add(&m, e, true)?;
    }
    for name in doc.fragments.keys() {
        let e = m.fragment(name.as_str(), 0)?;
        add(&m, e, false)?;
    }
    Ok(total)
}

/// Does every operation of `doc` select only introspection (`__schema`, `__type`,
/// `__typename`) at its root, through fragments too?
pub fn introspection_only(doc: &ExecutableDocument) -> bool {
    fn root_only<'d>(doc: &'d ExecutableDocument, set: &'d SelectionSet, seen: &mut Vec<&'d str>) -> bool {
        set.items.iter().all(|item| match &item.node {
            Selection::Field(f) => f.node.name.node.starts_with("__"),
            Selection::InlineFragment(i) => root_only(doc, &i.node.selection_set.node, seen),
            Selection::FragmentSpread(s) => {
                let name = s.node.fragment_name.node.as_str();
                // Each fragment once: `measure` has refused cycles and bounded the size already.
                if seen.contains(&name) {
                    return true;
                }
                seen.push(name);
                doc.fragments.get(name).is_none_or(|d| root_only(doc, &d.node.selection_set.node, seen))
            }
        })
    }
    let mut seen = Vec::new();
    doc.operations.iter().all(|(_, op)| root_only(doc, &op.node.selection_set.node, &mut seen))
}

/// Admit or refuse a parsed document: its expansion within `limits`, then a caller unless it only
/// introspects.
pub fn admit(doc: &ExecutableDocument, limits: &ApiLimits, authenticated: bool) -> Result<Expansion, Refusal> {
    let e = measure(doc, limits.max_selections)?;
    let introspects = introspection_only(doc);
    // Introspection's type references nest deeper than any data query needs to.
    let (max, what) = if introspects {
        (limits.max_introspection_depth, "an introspection query")
    } else {
        (limits.max_depth, "a query")
    };
    if e.depth > max {
        return Err(Refusal::Limit(format!(
            "the query is nested too deep: {} levels, at most {max} for {what} (fragment spreads counted as what they stand for)",
            e.depth
        )));
    }
    if !authenticated && !introspects {
        return Err(Refusal::Unauthenticated);
    }
    Ok(e)
}

/// Runs [`admit`] on every request and subscription (a hook of [`Hooks`](super::hooks::Hooks)),
/// before the engine's own checks (which walk each fragment spread again) run on it. It gives
/// the request its document from [`ParsedDocuments`] (parsed once per text, not per request).
pub struct Admission(pub ApiLimits, pub std::sync::Arc<ParsedDocuments>);

/// Marks a request whose every operation is a query: it runs under the query timeout (and
/// reads one snapshot of the read models, `snapshot`).
struct QueryOnly;

fn refused(r: &Refusal) -> ServerError {
    let mut e = ServerError::new(r.to_string(), None);
    e.extensions.get_or_insert_with(Default::default).set("code", r.code());
    e
}

impl Admission {
    /// Admit `request` (or refuse it) and give it its parsed document; a request of queries
    /// only is marked for the query timeout and given its read snapshot.
    pub(crate) fn prepare(&self, ctx: &ExtensionContext<'_>, mut request: Request) -> ServerResult<Request> {
        // The caller comes with the request (HTTP) or with the websocket's connection_init.
        let authenticated =
            request.data.contains_key(&std::any::TypeId::of::<Caller>()) || ctx.data_opt::<Caller>().is_some();
        // Parsed (or taken from the documents parsed lately) once here and kept in the
        // request: the engine uses this document.
        let parsed = self.1.parse(&request.query)?;
        if let Err(r) = admit(&parsed.doc, &self.0, authenticated) {
            tracing::debug!(refusal = %r, "request refused before validation");
            return Err(refused(&r));
        }
        if !parsed.reused && authenticated {
            self.1.keep(&request.query, &parsed.doc);
        }
        let queries_only = parsed.doc.operations.iter().all(|(_, op)| op.node.ty == OperationType::Query);
        request.set_parsed_query(parsed.doc);
        if queries_only {
            request = request.data(QueryOnly);
            if let Some(app) = ctx.data_opt::<AppState>() {
                request = request.data(RequestSnapshot::of(app));
            }
        }
        Ok(request)
    }

    /// Run `execution`, stopped at the query timeout when the request is queries only.
    pub(crate) async fn execute(
        &self,
        ctx: &ExtensionContext<'_>,
        execution: impl std::future::Future<Output = Response>,
    ) -> Response {
        if ctx.data_opt::<QueryOnly>().is_none() {
            return execution.await;
        }
        let limit = self.0.query_timeout;
        match tokio::time::timeout(limit, execution).await {
            Ok(response) => response,
            Err(_) => {
                tracing::info!(?limit, "a query ran past the query timeout; stopped");
                let r = Refusal::Limit(format!(
                    "the query ran longer than {} ms and was stopped; ask for less (fewer fields, smaller pages)",
                    limit.as_millis()
                ));
                Response::from_errors(vec![refused(&r)])
            }
        }
    }
}
