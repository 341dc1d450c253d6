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
    extensions::{Extension, ExtensionContext, ExtensionFactory, NextExecute, NextPrepareRequest},
    parser::types::{ExecutableDocument, OperationType, Selection, SelectionSet},
};

use crate::{auth::Caller, state::ApiLimits};

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

/// The engine extension that runs [`admit`] on every request and subscription, before the
/// engine's own checks (which walk each fragment spread again) run on it.
pub struct Admission(pub ApiLimits);

impl ExtensionFactory for Admission {
    fn create(&self) -> std::sync::Arc<dyn Extension> {
        std::sync::Arc::new(Admission(self.0.clone()))
    }
}

/// Marks a request whose every operation is a query: it runs under the query timeout.
struct QueryOnly;

fn refused(r: &Refusal) -> ServerError {
    let mut e = ServerError::new(r.to_string(), None);
    e.extensions.get_or_insert_with(Default::default).set("code", r.code());
    e
}

#[async_graphql::async_trait::async_trait]
impl Extension for Admission {
    async fn prepare_request(
        &self,
        ctx: &ExtensionContext<'_>,
        mut request: Request,
        next: NextPrepareRequest<'_>,
    ) -> ServerResult<Request> {
        // The caller comes with the request (HTTP) or with the websocket's connection_init.
        let authenticated =
            request.data.contains_key(&std::any::TypeId::of::<Caller>()) || ctx.data_opt::<Caller>().is_some();
        // Parsed once here and kept in the request: the engine uses this document.
        let doc = request.parsed_query()?;
        if let Err(r) = admit(doc, &self.0, authenticated) {
            tracing::debug!(refusal = %r, "request refused before validation");
            return Err(refused(&r));
        }
        let queries_only = doc.operations.iter().all(|(_, op)| op.node.ty == OperationType::Query);
        if queries_only {
            request = request.data(QueryOnly);
        }
        next.run(ctx, request).await
    }

    async fn execute(
        &self,
        ctx: &ExtensionContext<'_>,
        operation_name: Option<&str>,
        next: NextExecute<'_>,
    ) -> Response {
        if ctx.data_opt::<QueryOnly>().is_none() {
            return next.run(ctx, operation_name).await;
        }
        let limit = self.0.query_timeout;
        match tokio::time::timeout(limit, next.run(ctx, operation_name)).await {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn bomb(levels: usize) -> String {
        let mut q = format!("query {{ ...F{} }} fragment F0 on Query {{ __typename }}", levels - 1);
        for i in 1..levels {
            let spreads: Vec<String> = (0..10).map(|_| format!("...F{}", i - 1)).collect();
            q.push_str(&format!(" fragment F{i} on Query {{ {} }}", spreads.join(" ")));
        }
        q
    }

    fn parse(q: &str) -> ExecutableDocument {
        async_graphql::parser::parse_query(q).expect("parses")
    }

    #[test]
    fn spreads_count_as_their_expansion() {
        let doc = parse(&bomb(3));
        // F0 = 1, F1 = 10, F2 = 100; the operation 100; the definitions 111.
        assert_eq!(measure(&doc, 10_000), Ok(Expansion { selections: 211, depth: 1 }));
        let doc = parse(&bomb(9));
        assert!(matches!(measure(&doc, 2_000), Err(Refusal::Limit(_))));
    }

    #[test]
    fn depth_counts_fields_through_fragments() {
        let doc = parse("{ a { ...B } } fragment B on X { b { c { d } } }");
        assert_eq!(measure(&doc, 100).map(|e| e.depth), Ok(4));
    }

    #[test]
    fn cycles_and_deep_nesting_are_refused_without_recursing_forever() {
        let doc = parse("{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }");
        assert!(matches!(measure(&doc, 100), Err(Refusal::Cycle(_))));
        let mut q = String::from("{ ...F0 }");
        for i in 0..200 {
            q.push_str(&format!(" fragment F{i} on Query {{ ...F{} }}", i + 1));
        }
        q.push_str(" fragment F200 on Query { __typename }");
        assert!(matches!(measure(&parse(&q), 10_000), Err(Refusal::Limit(_))));
    }

    /// graphql-js's `getIntrospectionQuery()` (what GraphiQL sends), with descriptions.
    const INTROSPECTION: &str = "query IntrospectionQuery { __schema { queryType { name } mutationType { name } \
        subscriptionType { name } types { ...FullType } directives { name description locations args { ...InputValue } } } } \
        fragment FullType on __Type { kind name description fields(includeDeprecated: true) { name description \
        args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason } inputFields { ...InputValue } \
        interfaces { ...TypeRef } enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason } \
        possibleTypes { ...TypeRef } } \
        fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue } \
        fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { \
        kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } }";

    #[test]
    fn introspection_is_measured_like_the_engine_measures_it() {
        // Small once expanded; 13 deep, as the engine's own depth check counts it.
        let doc = parse(INTROSPECTION);
        let e = measure(&doc, 2_000).expect("measured");
        assert!(e.selections < 500, "{e:?}");
        assert_eq!(e.depth, 13);
        // Admitted under its own allowance, with or without a token, at the default depth of 12.
        assert!(admit(&doc, &ApiLimits::default(), false).is_ok());
        let stricter = ApiLimits { max_introspection_depth: 12, ..ApiLimits::default() };
        assert!(matches!(admit(&doc, &stricter, true), Err(Refusal::Limit(_))));
        // The same depth in a data query is refused.
        let data = parse("{ a { b { c { d { e { f { g { h { i { j { k { l { m } } } } } } } } } } } } }");
        assert!(matches!(admit(&data, &ApiLimits::default(), true), Err(Refusal::Limit(_))));
    }

    #[test]
    fn only_introspection_is_anonymous() {
        let limits = ApiLimits::default();
        let intro = parse("{ __schema { types { name } } ...T } fragment T on Query { __typename }");
        assert!(admit(&intro, &limits, false).is_ok());
        let data = parse("{ __typename ...T } fragment T on Query { headPosition }");
        assert_eq!(admit(&data, &limits, false), Err(Refusal::Unauthenticated));
        assert!(admit(&data, &limits, true).is_ok());
    }
}
