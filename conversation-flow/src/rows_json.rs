//! The flat list's rows as JSON: embedded items, assistant groups and supervisor bubbles, computed
//! from the input when written (rows embed groups and groups embed rows, so they live together).
//!
//! Shapes follow upstream key for key: a group is the chain head spread with `role` replaced,
//! `content: ''`, one content block per step, and the keys upstream deletes removed; keys
//! upstream leaves `undefined` are simply absent.

use crate::value::{Map, Value};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use super::indexing::NONE;
use super::js::{field, non_empty, truthy};
use super::message::sub_agent_override;
use super::rows::{BranchJson, BuiltRow, GroupRow, Item, MessageJson, Mode, Row, Shape, id_of, object};
use super::usage::{Aggregate, UsageView, is_usage_key, step_usage};

/// Keys of the head message a group or supervisor row deletes.
const DELETED_KEYS: [&str; 4] = ["imageList", "metadata", "reasoning", "tools"];

type Entries<'r> = Vec<(&'r str, &'r Value)>;

/// `content || ''`.
fn content_or_empty(v: Option<&Value>) -> &Value {
    static EMPTY: Value = Value::String(String::new());
    match v {
        Some(c) if truthy(Some(c)) => c,
        _ => &EMPTY,
    }
}

/// `content ?? ''`.
fn content_or_empty_nullish(v: Option<&Value>) -> &Value {
    static EMPTY: Value = Value::String(String::new());
    match v {
        None | Some(Value::Null) => &EMPTY,
        Some(c) => c,
    }
}

/// Metadata entries that are not usage/performance.
fn other_metadata(meta: Option<&Value>) -> impl Iterator<Item = (&str, &Value)> {
    meta.and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.iter())
        .filter(|(k, _)| !is_usage_key(k))
        .map(|(k, v)| (k.as_str(), v))
}

/// A JSON object from entries (keys unique, in order).
struct EntriesJson<'e, 'r>(&'e [(&'r str, &'r Value)]);

impl Serialize for EntriesJson<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// Entries with the supervisor flags: `flags_win` = the flags are set after the entries.
struct SupervisorMetadata<'e, 'r> {
    entries: &'e [(&'r str, &'r Value)],
    flags_win: bool,
}

impl Serialize for SupervisorMetadata<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        static TRUE: Value = Value::Bool(true);
        const FLAGS: [&str; 2] = ["isSupervisor", "orchestrationRole"];
        let own = |k: &str| self.entries.iter().find(|(e, _)| *e == k).map(|(_, v)| *v);
        let flag = |m: &mut S::SerializeMap, k: &str| match own(k) {
            Some(v) if !self.flags_win => m.serialize_entry(k, v),
            _ if k == "isSupervisor" => m.serialize_entry(k, &TRUE),
            _ => m.serialize_entry(k, "supervisor"),
        };
        let mut m = s.serialize_map(None)?;
        if self.flags_win {
            // `{...metadata, isSupervisor: true, orchestrationRole: 'supervisor'}`.
            for &(k, v) in self.entries {
                if FLAGS.contains(&k) { flag(&mut m, k)? } else { m.serialize_entry(k, v)? }
            }
            for k in FLAGS.into_iter().filter(|k| own(k).is_none()) {
                flag(&mut m, k)?;
            }
        } else {
            // `{isSupervisor: true, orchestrationRole: 'supervisor', ...metadata}`.
            for k in FLAGS {
                flag(&mut m, k)?;
            }
            for &(k, v) in self.entries.iter().filter(|(k, _)| !FLAGS.contains(k)) {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

/// One step's block inputs.
struct Step<'r> {
    map: &'r Map<String, Value>,
    usage: Option<UsageView<'r>>,
    perf: Option<UsageView<'r>>,
}

impl<'r> Step<'r> {
    fn of(map: &'r Map<String, Value>) -> Step<'r> {
        let (usage, perf) = step_usage(map);
        Step { map, usage, perf }
    }
}

/// The block fields shared by steps, supervisor bubbles and task completions, in upstream's
/// order: `{content, id}`, then `error`, `fileList`, `imageList` when present.
fn base_keys<'b>(msg: &Map<String, Value>, shape: &mut Shape<'b>) {
    shape.set("content");
    shape.set("id");
    if truthy(msg.get("error")) {
        shape.set("error");
    }
    for key in ["fileList", "imageList"] {
        if non_empty(msg.get(key)) {
            shape.set(key);
        }
    }
}

/// A step block (or a supervisor bubble's one block).
struct StepJson<'s, 'r> {
    input: &'r [Value],
    step: &'s Step<'r>,
    /// Answers for this step's calls (`NONE`: written as given); empty for bubbles.
    results: &'s [u32],
    /// The block's metadata (the merged group metadata on the first block only).
    metadata: &'s [(&'r str, &'r Value)],
}

impl Serialize for StepJson<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let msg = self.step.map;
        let tools = msg.get("tools").and_then(Value::as_array).filter(|t| !t.is_empty());
        let mut shape = Shape::empty();
        base_keys(msg, &mut shape);
        if self.step.perf.is_some() {
            shape.set("performance");
        }
        if truthy(msg.get("reasoning")) {
            shape.set("reasoning");
        }
        if tools.is_some() {
            shape.set("tools");
        }
        if self.step.usage.is_some() {
            shape.set("usage");
        }
        if !self.metadata.is_empty() {
            shape.set("metadata");
        }
        let mut m = s.serialize_map(None)?;
        shape.write(&mut m, |m, k| match k {
            "content" => m.serialize_entry(k, content_or_empty(msg.get("content"))),
            "id" => m.serialize_entry(k, &msg.get(k)),
            "performance" => m.serialize_entry(k, &self.step.perf),
            "usage" => m.serialize_entry(k, &self.step.usage),
            "tools" => m.serialize_entry(
                k,
                &ToolsJson { input: self.input, calls: tools.map_or(&[][..], Vec::as_slice), results: self.results },
            ),
            "metadata" => m.serialize_entry(k, &EntriesJson(self.metadata)),
            _ => m.serialize_entry(k, &msg.get(k)),
        })?;
        m.end()
    }
}

/// A step's `tools`, each answered call with its result.
struct ToolsJson<'r> {
    input: &'r [Value],
    calls: &'r [Value],
    results: &'r [u32],
}

impl Serialize for ToolsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.calls.len()))?;
        for (i, call) in self.calls.iter().enumerate() {
            match (self.results.get(i).copied().unwrap_or(NONE), call.as_object()) {
                (NONE, _) | (_, None) => seq.serialize_element(call)?,
                (t, Some(raw)) => seq.serialize_element(&AnsweredCall { raw, tool: object(self.input, t) })?,
            }
        }
        seq.end()
    }
}

/// `{...call, intervention: tool.pluginIntervention, result: {...}, result_msg_id}`.
struct AnsweredCall<'r> {
    raw: &'r Map<String, Value>,
    tool: &'r Map<String, Value>,
}

impl Serialize for AnsweredCall<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let intervention = self.tool.get("pluginIntervention");
        let mut shape = Shape::spread(self.raw.iter().map(|(k, v)| (k.as_str(), v)));
        for k in ["intervention", "result", "result_msg_id"] {
            shape.set(k);
        }
        let mut m = s.serialize_map(None)?;
        shape.write(&mut m, |m, k| match k {
            "intervention" => match intervention {
                Some(v) => m.serialize_entry(k, v),
                None => Ok(()),
            },
            "result" => m.serialize_entry(k, &ToolResult(self.tool)),
            _ => m.serialize_entry(k, &self.tool.get("id")),
        })?;
        m.end()
    }
}

/// `{content, id, error?, state?}` of a tool message.
struct ToolResult<'r>(&'r Map<String, Value>);

impl Serialize for ToolResult<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let tm = self.0;
        let error = tm.get("pluginError").filter(|e| truthy(Some(e))).or(tm.get("error").filter(|e| truthy(Some(e))));
        let state = tm.get("pluginState").filter(|e| truthy(Some(e)));
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("content", content_or_empty(tm.get("content")))?;
        m.serialize_entry("id", &tm.get("id"))?;
        if let Some(e) = error {
            m.serialize_entry("error", e)?;
        }
        if let Some(st) = state {
            m.serialize_entry("state", st)?;
        }
        m.end()
    }
}

/// The merged non-usage metadata of all steps (`Object.assign` in step order: a key keeps its
/// first place and its last value).
fn merged_metadata<'r>(steps: &[Step<'r>]) -> Entries<'r> {
    let mut out: Entries<'r> = Vec::new();
    for e in steps.iter().flat_map(|s| other_metadata(s.map.get("metadata"))) {
        match out.iter_mut().find(|(k, _)| *k == e.0) {
            Some(slot) => *slot = e,
            None => out.push(e),
        }
    }
    out
}

/// `createAssistantGroupMessage` over a collected chain, as written.
pub(crate) struct GroupJson<'g, 'r> {
    input: &'r [Value],
    row: &'g GroupRow,
    steps: Vec<Step<'r>>,
    metadata: Entries<'r>,
    aggregate: Aggregate<'r>,
}

impl<'g, 'r> GroupJson<'g, 'r> {
    /// Read the steps' usage and metadata once for the whole row.
    pub(crate) fn new(input: &'r [Value], row: &'g GroupRow) -> GroupJson<'g, 'r> {
        let steps: Vec<Step<'r>> = row.chain.iter().map(|&a| Step::of(object(input, a))).collect();
        let metadata = merged_metadata(&steps);
        let aggregate = Aggregate::of(steps.iter().map(|s| (s.usage, s.perf)));
        GroupJson { input, row, steps, metadata, aggregate }
    }
}

/// The group's `children`: step blocks, then the council block.
struct Children<'a, 'g, 'r>(&'a GroupJson<'g, 'r>);

impl Serialize for Children<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let g = self.0;
        let mut seq = s.serialize_seq(None)?;
        let mut calls = 0;
        for (i, step) in g.steps.iter().enumerate() {
            let n = step.map.get("tools").and_then(Value::as_array).map_or(0, Vec::len);
            let results = g.row.results.get(calls..calls + n).unwrap_or_default();
            calls += n;
            let metadata: &[(&str, &Value)] = if i == 0 { &g.metadata } else { &[] };
            seq.serialize_element(&StepJson { input: g.input, step, results, metadata })?;
        }
        if let Some(members) = &g.row.council {
            let head = g.row.chain.first().map_or("undefined", |&h| id_of(g.input, h));
            let members = ItemsJson { input: g.input, items: members, columns: false };
            seq.serialize_element(&Council { members, id: format!("council-{head}") })?;
        }
        seq.end()
    }
}

/// `{content: '', council: [...], id}`.
struct Council<'a> {
    members: ItemsJson<'a>,
    id: String,
}

impl Serialize for Council<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("content", "")?;
        m.serialize_entry("council", &self.members)?;
        m.serialize_entry("id", &self.id)?;
        m.end()
    }
}

impl Serialize for GroupJson<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let row = self.row;
        let head = row.chain.first().map(|&h| object(self.input, h));
        let agent = head.and_then(sub_agent_override);
        let usage = self.aggregate.usage();
        let perf = self.aggregate.performance();
        // `{...head (sub_agent rewritten), children, content: '', role}`, the deletions, then
        // the keys set after them, in createAssistantGroupMessage's order; the branch marker
        // is added last (createMessageWithBranches).
        let mut shape = Shape::spread(head.into_iter().flat_map(|h| h.iter()).map(|(k, v)| (k.as_str(), v)));
        if agent.is_some() {
            shape.set("agentId");
        }
        for k in ["children", "content", "role"] {
            shape.set(k);
        }
        for k in DELETED_KEYS {
            shape.delete(k);
        }
        if perf.is_some() {
            shape.set("performance");
        }
        if usage.is_some() {
            shape.set("usage");
        }
        if !self.metadata.is_empty() || row.supervisor {
            shape.set("metadata");
        }
        if !row.signal_blocks.is_empty() {
            shape.set("signalCallbacks");
        }
        if !row.completions.is_empty() {
            shape.set("taskCompletions");
        }
        if row.branch.is_some() {
            shape.set("branch");
        }
        let mut m = s.serialize_map(None)?;
        shape.write(&mut m, |m, k| match k {
            "children" => m.serialize_entry(k, &Children(self)),
            "content" => m.serialize_entry(k, ""),
            "role" => m.serialize_entry(k, if row.supervisor { "supervisor" } else { "assistantGroup" }),
            "agentId" => m.serialize_entry(k, &agent),
            "performance" => m.serialize_entry(k, &perf),
            "usage" => m.serialize_entry(k, &usage),
            "metadata" if row.supervisor => {
                m.serialize_entry(k, &SupervisorMetadata { entries: &self.metadata, flags_win: true })
            }
            "metadata" => m.serialize_entry(k, &EntriesJson(&self.metadata)),
            "signalCallbacks" => m.serialize_entry(k, &SignalBlocks { input: self.input, blocks: &row.signal_blocks }),
            "taskCompletions" => m.serialize_entry(k, &Completions { input: self.input, ids: &row.completions }),
            _ => match row.branch {
                Some((count, index)) => m.serialize_entry(k, &BranchJson(count, index)),
                None => Ok(()),
            },
        })?;
        m.end()
    }
}

/// The group's `signalCallbacks`.
struct SignalBlocks<'r> {
    input: &'r [Value],
    blocks: &'r [(u32, Vec<u32>)],
}

fn signal_field<'r>(msg: &'r Map<String, Value>, key: &str) -> Option<&'r Value> {
    field(field(msg.get("metadata"), "signal"), key)
}

impl Serialize for SignalBlocks<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.blocks.len()))?;
        for (tool, callbacks) in self.blocks {
            seq.serialize_element(&SignalBlock { input: self.input, tool: *tool, callbacks })?;
        }
        seq.end()
    }
}

struct SignalBlock<'r> {
    input: &'r [Value],
    tool: u32,
    callbacks: &'r [u32],
}

impl Serialize for SignalBlock<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let first = self.callbacks.first().map(|&c| object(self.input, c));
        let call_id = first.and_then(|f| signal_field(f, "sourceToolCallId"));
        let name = first.and_then(|f| signal_field(f, "sourceToolName"));
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("callbacks", &Callbacks { input: self.input, ids: self.callbacks })?;
        if let Some(v) = call_id {
            m.serialize_entry("sourceToolCallId", v)?;
        }
        m.serialize_entry("sourceToolMessageId", id_of(self.input, self.tool))?;
        if let Some(v) = name {
            m.serialize_entry("sourceToolName", v)?;
        }
        m.end()
    }
}

struct Callbacks<'r> {
    input: &'r [Value],
    ids: &'r [u32],
}

impl Serialize for Callbacks<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.ids.len()))?;
        for &c in self.ids {
            seq.serialize_element(&Callback(object(self.input, c)))?;
        }
        seq.end()
    }
}

/// `{content: content ?? '', id, model?, provider?, sequence?}`.
struct Callback<'r>(&'r Map<String, Value>);

impl Serialize for Callback<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let cn = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("content", content_or_empty_nullish(cn.get("content")))?;
        m.serialize_entry("id", &cn.get("id"))?;
        for key in ["model", "provider"] {
            if let Some(v) = cn.get(key).filter(|v| !v.is_null()) {
                m.serialize_entry(key, v)?;
            }
        }
        if let Some(seq) = signal_field(cn, "sequence") {
            m.serialize_entry("sequence", seq)?;
        }
        m.end()
    }
}

/// The group's `taskCompletions`.
struct Completions<'r> {
    input: &'r [Value],
    ids: &'r [u32],
}

impl Serialize for Completions<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.ids.len()))?;
        for &c in self.ids {
            seq.serialize_element(&Completion(object(self.input, c)))?;
        }
        seq.end()
    }
}

/// A task-completion block: the base block with `content ?? ''` and truthy extras.
struct Completion<'r>(&'r Map<String, Value>);

impl Serialize for Completion<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let msg = self.0;
        let mut shape = Shape::empty();
        base_keys(msg, &mut shape);
        for key in ["performance", "reasoning", "usage"] {
            if truthy(msg.get(key)) {
                shape.set(key);
            }
        }
        let mut m = s.serialize_map(None)?;
        shape.write(&mut m, |m, k| match k {
            "content" => m.serialize_entry(k, content_or_empty_nullish(msg.get("content"))),
            _ => m.serialize_entry(k, &msg.get(k)),
        })?;
        m.end()
    }
}

/// `createSupervisorContentMessage`: a toolless supervisor turn as a one-block bubble.
pub(crate) struct SupervisorJson<'r> {
    pub map: &'r Map<String, Value>,
}

impl Serialize for SupervisorJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let map = self.map;
        let step = Step::of(map);
        let other: Entries<'_> = other_metadata(map.get("metadata")).collect();
        let agent = sub_agent_override(map);
        let mut shape = Shape::spread(map.iter().map(|(k, v)| (k.as_str(), v)));
        if agent.is_some() {
            shape.set("agentId");
        }
        for k in ["children", "content", "role"] {
            shape.set(k);
        }
        for k in DELETED_KEYS {
            shape.delete(k);
        }
        if step.perf.is_some() {
            shape.set("performance");
        }
        if step.usage.is_some() {
            shape.set("usage");
        }
        shape.set("metadata");
        let mut m = s.serialize_map(None)?;
        shape.write(&mut m, |m, k| match k {
            "children" => {
                let block = StepJson { input: &[], step: &step, results: &[], metadata: &other };
                m.serialize_entry(k, &[block])
            }
            "content" => m.serialize_entry(k, ""),
            "role" => m.serialize_entry(k, "supervisor"),
            "metadata" => m.serialize_entry(k, &SupervisorMetadata { entries: &other, flags_win: false }),
            "agentId" => m.serialize_entry(k, &agent),
            "performance" => m.serialize_entry(k, &step.perf),
            _ => m.serialize_entry(k, &step.usage),
        })?;
        m.end()
    }
}

/// An item with the input it points into.
struct ItemJson<'r> {
    input: &'r [Value],
    item: &'r Item,
}

impl Serialize for ItemJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.item {
            Item::Message(at) => {
                MessageJson { map: object(self.input, *at), mode: Mode::AsGiven, branch: None }.serialize(s)
            }
            Item::Group(g) => GroupJson::new(self.input, g).serialize(s),
        }
    }
}

/// Embedded items as a JSON array (compare columns: an array of one-element arrays).
pub(crate) struct ItemsJson<'r> {
    pub input: &'r [Value],
    pub items: &'r [Item],
    pub columns: bool,
}

impl Serialize for ItemsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.items.len()))?;
        for item in self.items {
            let one = ItemJson { input: self.input, item };
            if self.columns {
                seq.serialize_element(&[one])?;
            } else {
                seq.serialize_element(&one)?;
            }
        }
        seq.end()
    }
}

impl Serialize for BuiltJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let b = self.row;
        let mut m = s.serialize_map(None)?;
        let items = ItemsJson { input: self.input, items: &b.items, columns: b.columns };
        // Upstream's literals list their keys sorted: the list goes before the first key after it.
        let mut listed = false;
        for (k, v) in b.fields.iter() {
            if !listed && k.as_str() > b.list_key {
                m.serialize_entry(b.list_key, &items)?;
                listed = true;
            }
            m.serialize_entry(k, v)?;
        }
        if !listed {
            m.serialize_entry(b.list_key, &items)?;
        }
        m.end()
    }
}

/// A built row with the input it points into.
struct BuiltJson<'r> {
    input: &'r [Value],
    row: &'r BuiltRow,
}

/// A row with the input it points into.
#[derive(Clone, Copy)]
pub(crate) struct RowJson<'r> {
    pub input: &'r [Value],
    pub row: &'r Row,
}

impl Serialize for RowJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.row {
            Row::Message { at, finish } => {
                let mode = if *finish { Mode::FlatRow } else { Mode::AsGiven };
                MessageJson { map: object(self.input, *at), mode, branch: None }.serialize(s)
            }
            Row::Branch { at, count, index } => {
                MessageJson { map: object(self.input, *at), mode: Mode::FlatRow, branch: Some((*count, *index)) }
                    .serialize(s)
            }
            Row::Group(g) => GroupJson::new(self.input, g).serialize(s),
            Row::Supervisor { at } => SupervisorJson { map: object(self.input, *at) }.serialize(s),
            Row::Built(b) => BuiltJson { input: self.input, row: b }.serialize(s),
        }
    }
}
