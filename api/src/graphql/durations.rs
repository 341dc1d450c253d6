//! How long each GraphQL request over HTTP took, from its arrival to its answer (the token's
//! lookup, admission, validation, execution, a mutation's wait for its read models): the
//! histogram `agentlog_graphql_request_duration_seconds` on `/metrics`, by `operation_type`
//! (`query`, `mutation`) and `field`, the operation's root field (`several` when it selects more
//! than one). A request that never ran (refused, unparsable, invalid) is counted under
//! `operation_type="none", field="none"`. Labels are taken only from requests the engine
//! validated, so every value is a field of the schema: no client can add series. Requests over
//! websockets (subscriptions, and operations sent on one) are not counted.
//!
//! ```text
//! agentlog_graphql_request_duration_seconds_bucket{operation_type="mutation",field="reportStep",le="0.005"} 41
//! ```

use std::{
    collections::{BTreeMap, HashSet},
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};

use async_graphql::{
    Request,
    extensions::ExtensionContext,
    parser::types::{ExecutableDocument, OperationType, Selection, SelectionSet},
};

use crate::histogram::{Histogram, Labels, render_histogram};

/// Bucket bounds in seconds: a durable commit takes about a millisecond, a query's timeout ten
/// seconds by default.
const BUCKETS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// A request's operation, as its duration is labelled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    /// `query`, `mutation` or `subscription`.
    pub kind: &'static str,
    /// The root field it selects, or `several`.
    pub field: String,
}

impl Operation {
    /// The operation `operation_name` selects in `doc` (None when it selects none, or no field).
    pub fn of(doc: &ExecutableDocument, operation_name: Option<&str>) -> Option<Self> {
        let op = super::variables::selected_operation(doc, operation_name)?;
        let kind = match op.ty {
            OperationType::Query => "query",
            OperationType::Mutation => "mutation",
            OperationType::Subscription => "subscription",
        };
        let mut fields = HashSet::new();
        root_fields(doc, &op.selection_set.node, &mut HashSet::new(), &mut fields);
        let field = match fields.len() {
            0 => return None,
            1 => fields.into_iter().next()?.to_string(),
            _ => "several".to_string(),
        };
        Some(Self { kind, field })
    }
}

/// The names of the fields `set` selects at its own level, through its fragments (each fragment
/// once: this runs before validation, which refuses cycles). `__typename` is left out.
fn root_fields<'d>(
    doc: &'d ExecutableDocument,
    set: &'d SelectionSet,
    seen: &mut HashSet<&'d str>,
    fields: &mut HashSet<&'d str>,
) {
    for item in &set.items {
        match &item.node {
            Selection::Field(f) if f.node.name.node.as_str() == "__typename" => {}
            Selection::Field(f) => {
                fields.insert(f.node.name.node.as_str());
            }
            Selection::InlineFragment(inline) => root_fields(doc, &inline.node.selection_set.node, seen, fields),
            Selection::FragmentSpread(spread) => {
                let name = spread.node.fragment_name.node.as_str();
                if seen.insert(name)
                    && let Some(fragment) = doc.fragments.get(&spread.node.fragment_name.node)
                {
                    root_fields(doc, &fragment.node.selection_set.node, seen, fields);
                }
            }
        }
    }
}

/// What a request ran: the HTTP layer gives each request one, [`Durations`] fills it in once the
/// engine has validated the request.
#[derive(Debug, Default)]
pub struct Ran(OnceLock<Operation>);

impl Ran {
    /// The operation, when the request ran.
    pub fn get(&self) -> Option<&Operation> {
        self.0.get()
    }
}

/// The operation a request would run, found before validation: kept only if it runs.
struct Pending(Operation);

/// Labels each request's duration (see the module docs): hooks of [`Hooks`](super::hooks::Hooks).
pub struct Durations;

impl Durations {
    /// Find the operation `request` would run (the document admission parsed; a text that does
    /// not parse is left for the engine to refuse), kept only if it runs.
    pub(crate) fn prepare(mut request: Request) -> Request {
        let name = request.operation_name.clone();
        let operation = request.parsed_query().ok().and_then(|doc| Operation::of(doc, name.as_deref()));
        if let Some(operation) = operation {
            request = request.data(Pending(operation));
        }
        request
    }

    /// The request runs: execution begins only after validation, so the labels are the schema's
    /// own names.
    pub(crate) fn executing(ctx: &ExtensionContext<'_>) {
        if let (Some(ran), Some(Pending(operation))) = (ctx.data_opt::<Arc<Ran>>(), ctx.data_opt::<Pending>()) {
            let _ = ran.0.set(operation.clone());
        }
    }
}

/// The request-duration histogram of this instance.
#[derive(Debug, Default)]
pub struct RequestDurations(Mutex<BTreeMap<Labels, Histogram>>);

impl RequestDurations {
    /// Count one request that ran `ran` (None: it did not run) and took `took`.
    pub fn observe(&self, ran: Option<&Operation>, took: Duration) {
        let labels: Labels = match ran {
            Some(op) => vec![("operation_type", op.kind.to_string()), ("field", op.field.clone())],
            None => vec![("operation_type", "none".to_string()), ("field", "none".to_string())],
        };
        // A poisoned lock only means another thread panicked mid-update: the figures stand.
        let mut series = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        series.entry(labels).or_default().observe(BUCKETS, took.as_secs_f64());
    }

    /// Append the histogram in Prometheus text format.
    pub fn render(&self, out: &mut String) {
        let series = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        render_histogram(
            out,
            "agentlog_graphql_request_duration_seconds",
            "GraphQL requests over HTTP, from arrival to answer, by operation type and root field.",
            BUCKETS,
            &series,
        );
    }
}
