//! Variables the operation needs, checked before execution: a non-null variable without a
//! default that the request leaves out (or sends as `null`) is a request error (VALIDATION,
//! nothing runs), as the GraphQL spec's variable coercion says. The engine would otherwise find it
//! only when a field reads it, as an execution error on that field.

use async_graphql::{
    Name, Request, ServerError, ServerResult, Value, Variables,
    parser::types::{DocumentOperations, ExecutableDocument, OperationDefinition},
};

/// Checks required variables (a hook of [`Hooks`](super::hooks::Hooks)).
pub struct RequiredVariables;

/// The operation a request runs: the document's only one, or the one `operation_name` names
/// (None when several exist and none is named, or the name is unknown: the engine answers that).
pub fn selected_operation<'d>(
    doc: &'d ExecutableDocument,
    operation_name: Option<&str>,
) -> Option<&'d OperationDefinition> {
    let op = match (&doc.operations, operation_name) {
        (DocumentOperations::Single(op), _) => op,
        (DocumentOperations::Multiple(ops), Some(name)) => ops.get(name)?,
        (DocumentOperations::Multiple(ops), None) if ops.len() == 1 => ops.values().next()?,
        (DocumentOperations::Multiple(_), None) => return None,
    };
    Some(&op.node)
}

/// The first required variable of the chosen operation that `request` does not give.
fn missing(doc: &ExecutableDocument, operation_name: Option<&str>, variables: &Variables) -> Option<String> {
    let op = selected_operation(doc, operation_name)?;
    op.variable_definitions.iter().find_map(|def| {
        let def = &def.node;
        let given = variables.get(&Name::new(def.name.node.as_str()));
        let absent = matches!(given, None | Some(Value::Null));
        (!def.var_type.node.nullable && def.default_value.is_none() && absent).then(|| def.name.node.to_string())
    })
}

impl RequiredVariables {
    /// VALIDATION when the operation `request` runs needs a variable it does not give.
    pub(crate) fn check(request: &mut Request) -> ServerResult<()> {
        let (operation_name, variables) = (request.operation_name.clone(), request.variables.clone());
        let doc = request.parsed_query()?;
        if let Some(name) = missing(doc, operation_name.as_deref(), &variables) {
            let mut e =
                ServerError::new(format!("variable `${name}` is required (a non-null type) and was not given"), None);
            e.extensions.get_or_insert_with(Default::default).set("code", "VALIDATION");
            return Err(e);
        }
        Ok(())
    }
}
