//! One test per row of the decision table (lobehub-spec §2.3), named after upstream's
//! `GroupOrchestrationSupervisor.test.ts` cases where they exist.

use serde_json::json;

use super::*;

fn sup() -> SupervisorState {
    SupervisorState::new(3, "sup-1")
}

fn decided(decision: &str, params: Value, skip: Option<bool>) -> ExecutorResult {
    let params = match params {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    ExecutorResult::SupervisorDecided {
        payload: DecidedPayload { decision: decision.into(), params, skip_call_supervisor: skip },
    }
}

fn spoke() -> ExecutorResult {
    ExecutorResult::AgentSpoke {
        payload: ActionPayload {
            agent_id: Some("a1".into()),
            completed: Some(true),
            ..ActionPayload::default()
        },
    }
}

fn finish(reason: &str) -> SupervisorInstruction {
    SupervisorInstruction::Finish { reason: reason.into() }
}

fn call_supervisor(round: u32, group_id: Option<&str>) -> SupervisorInstruction {
    SupervisorInstruction::CallSupervisor {
        payload: CallSupervisorPayload {
            round,
            supervisor_agent_id: "sup-1".into(),
            group_id: group_id.map(str::to_string),
        },
    }
}

#[test]
fn init_returns_call_supervisor_and_resets_round_and_skip() {
    let dirty = SupervisorState { round: 2, skip_call_supervisor: true, ..sup() };
    let (state, instruction) = decide(
        &dirty,
        &ExecutorResult::Init { payload: InitPayload { group_id: Some("g1".into()) } },
    );
    assert_eq!(instruction, call_supervisor(0, Some("g1")));
    assert_eq!((state.round, state.skip_call_supervisor), (0, false));
}

#[test]
fn speak_returns_call_agent() {
    let (_, i) =
        decide(&sup(), &decided("speak", json!({"agentId": "a1", "instruction": "say hi"}), None));
    assert_eq!(
        i,
        SupervisorInstruction::CallAgent {
            payload: CallAgentPayload {
                agent_id: Some("a1".into()),
                instruction: Some("say hi".into())
            }
        }
    );
}

#[test]
fn broadcast_returns_parallel_call_agents_with_tools_disabled() {
    let params = json!({"agentIds": ["a1", "a2"], "instruction": "all", "toolMessageId": "tm1", "disableTools": false});
    let (_, i) = decide(&sup(), &decided("broadcast", params, None));
    assert_eq!(
        i,
        SupervisorInstruction::ParallelCallAgents {
            payload: ParallelCallPayload {
                agent_ids: Some(vec!["a1".into(), "a2".into()]),
                tool_message_id: Some("tm1".into()),
                disable_tools: Some(true),
                instruction: Some("all".into()),
            }
        }
    );
}

#[test]
fn delegate_returns_delegate() {
    let (_, i) =
        decide(&sup(), &decided("delegate", json!({"agentId": "a2", "reason": "expert"}), None));
    assert_eq!(
        i,
        SupervisorInstruction::Delegate {
            payload: DelegatePayload { agent_id: Some("a2".into()), reason: Some("expert".into()) }
        }
    );
}

#[test]
fn execute_task_returns_exec_async_task_with_title() {
    let params = json!({"agentId": "a1", "instruction": "dig", "toolMessageId": "tm", "timeout": 600000, "title": "Research"});
    let (_, i) = decide(&sup(), &decided("execute_task", params, None));
    let SupervisorInstruction::ExecAsyncTask { payload } = i else { panic!("{i:?}") };
    assert_eq!(payload.title.as_deref(), Some("Research"));
    assert_eq!(payload.timeout, Some(json!(600000)));
    assert_eq!(payload.tool_message_id.as_deref(), Some("tm"));
}

#[test]
fn execute_task_with_run_in_client_returns_exec_client_async_task() {
    let (_, i) = decide(
        &sup(),
        &decided("execute_task", json!({"agentId": "a1", "runInClient": true}), None),
    );
    assert_eq!(i.type_name(), "exec_client_async_task");
    let (_, i) =
        decide(&sup(), &decided("execute_task", json!({"agentId": "a1", "runInClient": 0}), None));
    assert_eq!(i.type_name(), "exec_async_task", "runInClient is read as JS truthiness");
}

#[test]
fn execute_tasks_returns_batch_exec_async_tasks() {
    let tasks = json!([{"agentId": "a1", "instruction": "x"}, {"agentId": "a2", "instruction": "y", "title": "T"}]);
    let (_, i) = decide(
        &sup(),
        &decided("execute_tasks", json!({"tasks": tasks.clone(), "toolMessageId": "tm"}), None),
    );
    assert_eq!(
        i,
        SupervisorInstruction::BatchExecAsyncTasks {
            payload: BatchPayload { tasks: Some(tasks), tool_message_id: Some("tm".into()) }
        }
    );
}

#[test]
fn execute_tasks_with_skip_call_supervisor_finishes_after_the_batch() {
    let (state, i) = decide(&sup(), &decided("execute_tasks", json!({"tasks": []}), Some(true)));
    assert_eq!(i.type_name(), "batch_exec_async_tasks");
    assert!(state.skip_call_supervisor);
    let done = ExecutorResult::TasksCompleted { payload: ActionPayload::default() };
    assert_eq!(decide(&state, &done).1, finish("skip_call_supervisor"));
}

#[test]
fn finish_uses_the_reason_or_supervisor_finished() {
    assert_eq!(
        decide(&sup(), &decided("finish", json!({"reason": "all done"}), None)).1,
        finish("all done")
    );
    assert_eq!(
        decide(&sup(), &decided("finish", json!({}), None)).1,
        finish("supervisor_finished")
    );
    assert_eq!(
        decide(&sup(), &decided("finish", json!({"reason": ""}), None)).1,
        finish("supervisor_finished")
    );
}

#[test]
fn an_unknown_decision_finishes_with_its_name() {
    assert_eq!(
        decide(&sup(), &decided("dance", json!({}), None)).1,
        finish("unknown_decision: dance")
    );
}

#[test]
fn skip_is_set_before_branching_even_for_finish_and_unknown() {
    let (state, _) = decide(&sup(), &decided("finish", json!({}), Some(true)));
    assert!(state.skip_call_supervisor);
    let (state, _) = decide(&state, &decided("whatever", json!({}), None));
    assert!(!state.skip_call_supervisor, "overwritten by the next decision");
}

#[test]
fn agent_spoke_calls_the_supervisor_when_skip_is_false() {
    let (state, i) = decide(&sup(), &spoke());
    assert_eq!(i, call_supervisor(1, None));
    assert_eq!(state.round, 1, "rounds count finished actions");
}

#[test]
fn agent_spoke_finishes_when_skip_is_true_without_counting_a_round() {
    let (state, _) = decide(&sup(), &decided("speak", json!({"agentId": "a1"}), Some(true)));
    let (state, i) = decide(&state, &spoke());
    assert_eq!(i, finish("skip_call_supervisor"));
    assert_eq!(state.round, 0);
    assert!(state.skip_call_supervisor, "an action result does not clear the flag");
}

#[test]
fn agent_spoke_finishes_when_max_rounds_are_exceeded() {
    let mut state = sup();
    let mut last = None;
    for _ in 0..3 {
        let (next, i) = decide(&state, &spoke());
        state = next;
        last = Some(i);
    }
    assert_eq!(last, Some(finish("max_rounds_exceeded")));
    assert_eq!(state.round, 3);
}

#[test]
fn max_rounds_of_one_finishes_after_the_first_action() {
    let state = SupervisorState::new(1, "sup-1");
    assert_eq!(decide(&state, &spoke()).1, finish("max_rounds_exceeded"));
}

#[test]
fn agents_broadcasted_calls_the_supervisor_or_finishes_on_skip() {
    let broadcasted = ExecutorResult::AgentsBroadcasted {
        payload: ActionPayload {
            agent_ids: Some(vec!["a1".into()]),
            completed: Some(false),
            ..ActionPayload::default()
        },
    };
    assert_eq!(decide(&sup(), &broadcasted).1, call_supervisor(1, None));
    let skipping = SupervisorState { skip_call_supervisor: true, ..sup() };
    assert_eq!(decide(&skipping, &broadcasted).1, finish("skip_call_supervisor"));
}

#[test]
fn task_completed_calls_the_supervisor_even_when_it_failed() {
    let failed = ExecutorResult::TaskCompleted {
        payload: ActionPayload {
            agent_id: Some("a1".into()),
            success: Some(false),
            ..ActionPayload::default()
        },
    };
    assert_eq!(decide(&sup(), &failed).1, call_supervisor(1, None));
}

#[test]
fn delegated_always_finishes() {
    let delegated = ExecutorResult::Delegated {
        payload: ActionPayload {
            agent_id: Some("a9".into()),
            completed: Some(false),
            ..ActionPayload::default()
        },
    };
    assert_eq!(decide(&sup(), &delegated).1, finish("delegated_to_a9"));
    let skipping = SupervisorState { skip_call_supervisor: true, ..sup() };
    assert_eq!(decide(&skipping, &delegated).1, finish("delegated_to_a9"));
}

#[test]
fn an_unknown_result_type_finishes() {
    let unknown: ExecutorResult =
        serde_json::from_value(json!({"type": "nonsense", "payload": {}})).unwrap();
    assert_eq!(unknown, ExecutorResult::Unknown);
    assert_eq!(decide(&sup(), &unknown).1, finish("unknown_result_type"));
}

#[test]
fn results_and_instructions_use_upstreams_json_shapes() {
    let r: ExecutorResult = serde_json::from_value(json!({
        "type": "supervisor_decided",
        "payload": {"decision": "speak", "params": {"agentId": "a1"}, "skipCallSupervisor": true}
    }))
    .unwrap();
    let (_, i) = decide(&sup(), &r);
    assert_eq!(
        serde_json::to_value(&i).unwrap(),
        json!({"type": "call_agent", "payload": {"agentId": "a1"}})
    );
    assert_eq!(
        serde_json::to_value(finish("x")).unwrap(),
        json!({"type": "finish", "reason": "x"})
    );
    let s = serde_json::to_value(call_supervisor(2, None)).unwrap();
    assert_eq!(
        s,
        json!({"type": "call_supervisor", "payload": {"round": 2, "supervisorAgentId": "sup-1"}})
    );
}

#[test]
fn tools_map_to_decisions_and_unsupported_ones_are_refused() {
    let d = decision_for_tool("lobe-group-management/speak", Some(&json!({"agentId": "a"})));
    assert!(matches!(d, Some(Ok(p)) if p.decision == "speak" && p.params["agentId"] == "a"));
    assert!(
        decision_for_tool("web-search/search", None).is_none(),
        "an ordinary tool is no decision"
    );
    let b = decision_for_tool(
        "lobe-group/broadcast",
        Some(&json!({"agentIds": ["a"], "skipCallSupervisor": true})),
    );
    assert!(
        matches!(b, Some(Ok(p)) if p.decision == "broadcast" && p.skip_call_supervisor == Some(true))
    );
    let name = |t: &str| decision_for_tool(t, None).and_then(Result::ok).map(|d| d.decision);
    assert_eq!(name("executeAgentTasks").as_deref(), Some("execute_tasks"));
    assert_eq!(name("executeAgentTask").as_deref(), Some("execute_task"));
    for tool in [
        "vote",
        "lobe-group-management/vote",
        "lobe-group-management/summarize",
        "lobe-group-management/newThing",
    ] {
        assert!(
            matches!(decision_for_tool(tool, None), Some(Err(DomainError::Validation { .. }))),
            "{tool} must be refused"
        );
    }
}
