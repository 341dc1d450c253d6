//! Upstream's `taskGraph/index.test.ts` cases (18), plus the cycle check and the cascade.

use super::*;
use TaskStatus::*;

fn n(id: &str, status: TaskStatus, deps: &[&str]) -> SubtaskNode {
    SubtaskNode::new(id, status, deps)
}

fn plan(nodes: &[SubtaskNode]) -> SubtaskPlan {
    plan_subtask_layers(nodes, &BTreeMap::new())
}

fn plan_ext(nodes: &[SubtaskNode], external: &[(&str, TaskStatus)]) -> SubtaskPlan {
    let ext = external.iter().map(|(k, v)| ((*k).to_string(), *v)).collect();
    plan_subtask_layers(nodes, &ext)
}

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_string()).collect()
}

fn layers(ls: &[&[&str]]) -> Vec<Vec<String>> {
    ls.iter().map(|l| ids(l)).collect()
}

#[test]
fn returns_an_empty_plan_when_there_are_no_nodes() {
    assert_eq!(plan(&[]), SubtaskPlan::default());
}

#[test]
fn puts_independent_runnable_tasks_into_a_single_layer() {
    let p = plan(&[n("c", Backlog, &[]), n("a", Backlog, &[]), n("b", Backlog, &[])]);
    assert_eq!(p.layers, layers(&[&["a", "b", "c"]]));
    assert_eq!(p.total_runnable, 3);
}

#[test]
fn respects_a_linear_dependency_chain() {
    let p = plan(&[n("a", Backlog, &[]), n("b", Backlog, &["a"]), n("c", Backlog, &["b"])]);
    assert_eq!(p.layers, layers(&[&["a"], &["b"], &["c"]]));
}

#[test]
fn groups_diamond_dependencies_into_the_right_layers() {
    let p = plan(&[
        n("a", Backlog, &[]),
        n("b", Backlog, &["a"]),
        n("c", Backlog, &["a"]),
        n("d", Backlog, &["b", "c"]),
    ]);
    assert_eq!(p.layers, layers(&[&["a"], &["b", "c"], &["d"]]));
}

#[test]
fn skips_already_completed_tasks_and_treats_their_dependents_as_roots() {
    let p = plan(&[n("a", Completed, &[]), n("b", Backlog, &["a"]), n("c", Backlog, &["b"])]);
    assert_eq!(p.already_done, ids(&["a"]));
    assert_eq!(p.layers, layers(&[&["b"], &["c"]]));
}

#[test]
fn marks_running_and_scheduled_tasks_as_ineligible() {
    let p = plan(&[n("a", Running, &[]), n("b", Scheduled, &[]), n("c", Backlog, &[])]);
    assert_eq!(p.ineligible, ids(&["a", "b"]));
    assert_eq!(p.layers, layers(&[&["c"]]));
}

#[test]
fn treats_failed_and_paused_as_runnable() {
    let p = plan(&[n("a", Failed, &[]), n("b", Paused, &[])]);
    assert_eq!(p.layers, layers(&[&["a", "b"]]));
}

#[test]
fn detects_a_simple_two_node_cycle() {
    let p = plan(&[n("a", Backlog, &["b"]), n("b", Backlog, &["a"])]);
    assert_eq!(p.cycles, ids(&["a", "b"]));
    assert!(p.layers.is_empty());
    assert_eq!(p.total_runnable, 0);
}

#[test]
fn separates_nodes_blocked_by_a_cycle_from_cycle_members() {
    let p = plan(&[n("a", Backlog, &["b"]), n("b", Backlog, &["a"]), n("c", Backlog, &["b"])]);
    assert_eq!(p.cycles, ids(&["a", "b"]));
    assert_eq!(p.blocked_by_cycle, ids(&["c"]));
}

#[test]
fn still_places_acyclic_branches_when_other_branches_contain_cycles() {
    let p = plan(&[
        n("a", Backlog, &["b"]),
        n("b", Backlog, &["a"]),
        n("x", Backlog, &[]),
        n("y", Backlog, &["x"]),
    ]);
    assert_eq!(p.layers, layers(&[&["x"], &["y"]]));
    assert_eq!(p.cycles, ids(&["a", "b"]));
}

#[test]
fn drops_dependency_edges_to_canceled_upstreams() {
    let p = plan(&[n("a", Canceled, &[]), n("b", Backlog, &["a"])]);
    assert_eq!(p.already_done, ids(&["a"]));
    assert_eq!(p.layers, layers(&[&["b"]]));
}

#[test]
fn holds_back_a_dependent_of_an_in_flight_running_descendant() {
    let p = plan(&[n("a", Running, &[]), n("b", Backlog, &["a"])]);
    assert!(p.layers.is_empty(), "b must not be freed to layer 1");
    assert_eq!(p.blocked_externally, ids(&["b"]));
}

#[test]
fn holds_back_a_dependent_of_a_scheduled_descendant() {
    let p = plan(&[n("a", Scheduled, &[]), n("b", Backlog, &["a"])]);
    assert_eq!(p.blocked_externally, ids(&["b"]));
    assert!(p.layers.is_empty());
}

#[test]
fn propagates_external_blockage_transitively_through_in_batch_downstream() {
    let p = plan(&[
        n("a", Running, &[]),
        n("b", Backlog, &["a"]),
        n("c", Backlog, &["b"]),
        n("d", Backlog, &["c"]),
        n("e", Backlog, &[]),
    ]);
    assert_eq!(p.blocked_externally, ids(&["b", "c", "d"]));
    assert_eq!(p.layers, layers(&[&["e"]]));
}

#[test]
fn treats_an_out_of_scope_upstream_that_is_still_running_as_a_blocker() {
    let p = plan_ext(&[n("b", Backlog, &["ext"])], &[("ext", Running)]);
    assert_eq!(p.blocked_externally, ids(&["b"]));
}

#[test]
fn treats_an_out_of_scope_upstream_as_satisfied_when_it_is_completed() {
    let p = plan_ext(&[n("b", Backlog, &["ext"])], &[("ext", Completed)]);
    assert_eq!(p.layers, layers(&[&["b"]]));
    assert!(p.blocked_externally.is_empty());
}

#[test]
fn treats_an_unknown_upstream_identifier_as_a_blocker() {
    let p = plan(&[n("b", Backlog, &["__missing:0"])]);
    assert_eq!(p.blocked_externally, ids(&["b"]));
    assert!(p.layers.is_empty());
}

#[test]
fn mixes_satisfied_in_batch_and_external_dependencies_on_the_same_node() {
    let ok = plan_ext(
        &[n("a", Completed, &[]), n("b", Backlog, &[]), n("c", Backlog, &["a", "b", "ext"])],
        &[("ext", Completed)],
    );
    assert_eq!(ok.layers, layers(&[&["b"], &["c"]]));
    let held = plan_ext(
        &[n("a", Completed, &[]), n("b", Backlog, &[]), n("c", Backlog, &["a", "b", "ext"])],
        &[("ext", Running)],
    );
    assert_eq!(held.layers, layers(&[&["b"]]));
    assert_eq!(held.blocked_externally, ids(&["c"]));
}

#[test]
fn a_self_edge_is_a_cycle() {
    let p = plan(&[n("a", Backlog, &["a"])]);
    assert_eq!(p.cycles, ids(&["a"]));
}

#[test]
fn blocks_graph_finds_the_path_that_a_new_edge_would_close() {
    // c depends on b, b depends on a: a depending on c closes c → b → a.
    let g = BlocksGraph::new().with_edge("c", "b").with_edge("b", "a");
    assert_eq!(g.cycle_if_added("a", "c"), Some(ids(&["c", "b", "a"])));
    assert_eq!(g.cycle_if_added("c", "a"), None, "c depending on a again is no cycle");
    assert_eq!(g.cycle_if_added("x", "x"), Some(ids(&["x"])));
    assert_eq!(g.cycle_if_added("d", "c"), None);
}

#[test]
fn cascade_starts_ready_backlog_dependants_and_holds_checkpointed_ones() {
    let d = |id: &str, status, ups: &[(&str, Option<TaskStatus>)]| Dependant {
        task_id: id.to_string(),
        status,
        upstreams: ups.iter().map(|(u, s)| ((*u).to_string(), *s)).collect(),
    };
    let hold = BTreeSet::from(["held".to_string()]);
    let c = cascade_on_completion(
        &[
            d("ready", Backlog, &[("a", Some(Completed)), ("b", Some(Completed))]),
            d("ready2", Backlog, &[("a", Some(Completed))]),
            d("waiting", Backlog, &[("a", Some(Completed)), ("r", Some(Running))]),
            d("after-canceled", Backlog, &[("a", Some(Completed)), ("x", Some(Canceled))]),
            d("paused", Paused, &[("a", Some(Completed))]),
            d("held", Backlog, &[("a", Some(Completed))]),
            d("unknown", Backlog, &[("a", Some(Completed)), ("ghost", None)]),
        ],
        &hold,
    );
    assert_eq!(c.start, ids(&["ready", "ready2"]));
    assert_eq!(c.hold, ids(&["held"]));
    assert_eq!(
        c.held_externally,
        vec![HeldDependant { task_id: "unknown".into(), unknown_upstreams: ids(&["ghost"]) }]
    );
}
