//! The shape of a run, drawn when it is planned: how many steps, how it ends, a human card,
//! sub-agents, a cancel while waiting.

use agentlog_domain::operations::hitl::{
    CardAnswer, CardKind, ChoiceOption, FieldKind, FormField, HitlCard, OnTimeout,
};
use serde_json::json;

use crate::story::Gen;

/// How the run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    Complete,
    Fail,
    Interrupt,
    Cancel,
    LeaseExpiry,
    MaxSteps,
    CostLimit,
}

/// How a card is resolved.
#[derive(Debug, Clone)]
pub(super) enum CardPlan {
    /// A human answers after this many rounds.
    Answer(CardAnswer, u64),
    /// Nobody answers; the card's timeout fires.
    Timeout,
}

#[derive(Debug, Clone)]
pub(super) struct HitlPlan {
    pub(super) at_step: u32,
    pub(super) card: HitlCard,
    pub(super) resolution: CardPlan,
}

/// The shape of one run, drawn when it is planned.
#[derive(Debug, Clone)]
pub(crate) struct RunPlan {
    pub(super) steps: u32,
    pub(super) ending: Ending,
    pub(super) hitl: Option<HitlPlan>,
    pub(super) children: u32,
    /// Cancel while waiting for the children (exercises the cascade).
    pub(super) cancel_while_waiting: bool,
    pub(super) measured: bool,
}

impl RunPlan {
    /// Draw a plan; `nested` plans (children) get no children and no card of their own.
    pub(crate) fn draw(g: &mut Gen, nested: bool) -> Self {
        let r = &mut g.rng;
        let steps = r.range(2, 8) as u32;
        let ending = match r.weighted(&[72, 8, 4, 4, 3, 5, 4]) {
            0 => Ending::Complete,
            1 => Ending::Fail,
            2 => Ending::Interrupt,
            3 => Ending::Cancel,
            4 => Ending::LeaseExpiry,
            5 => Ending::MaxSteps,
            _ => Ending::CostLimit,
        };
        let children = if !nested && r.chance(15) { r.range(1, 3) as u32 } else { 0 };
        Self {
            steps,
            ending,
            hitl: None,
            children,
            cancel_while_waiting: children > 0 && r.chance(15),
            measured: r.chance(90),
        }
        .with_card(g, nested)
    }

    fn with_card(mut self, g: &mut Gen, nested: bool) -> Self {
        if nested || !g.rng.chance(15) {
            return self;
        }
        let card_id = g.id("card");
        let r = &mut g.rng;
        let (kind, answer) = match r.below(4) {
            0 => (
                CardKind::Choice {
                    options: vec![ChoiceOption::new("yes", "Yes"), ChoiceOption::new("no", "No")],
                    multiple: false,
                },
                CardAnswer::Choice { values: vec![if r.chance(70) { "yes" } else { "no" }.into()] },
            ),
            1 => {
                (CardKind::Input { required: true, max_length: Some(400) }, CardAnswer::Input { text: r.words(2, 12) })
            }
            2 => (CardKind::Confirm, CardAnswer::Confirm { confirmed: r.chance(80) }),
            _ => (
                CardKind::Form {
                    fields: vec![
                        FormField {
                            name: "title".into(),
                            label: "Title".into(),
                            field: FieldKind::Text { max_length: Some(80) },
                            required: true,
                        },
                        FormField {
                            name: "count".into(),
                            label: "How many".into(),
                            field: FieldKind::Number { min: Some(0), max: Some(10) },
                            required: false,
                        },
                    ],
                },
                CardAnswer::Form {
                    values: [("title".to_string(), json!(r.words(1, 4))), ("count".to_string(), json!(r.range(0, 10)))]
                        .into_iter()
                        .collect(),
                },
            ),
        };
        let mut card = HitlCard::new(card_id, format!("Should I {}?", r.words(2, 5)), kind);
        card.body = r.chance(50).then(|| r.words(5, 20));
        let resolution = if r.chance(25) {
            let on_timeout = match r.below(4) {
                0 => OnTimeout::UseDefault { answer: answer.clone() },
                1 => OnTimeout::Continue,
                2 => OnTimeout::Fail,
                _ => OnTimeout::Cancel,
            };
            card = card.with_timeout(r.range(45, 120), on_timeout);
            CardPlan::Timeout
        } else {
            if r.chance(30) {
                card = card.with_timeout(3_600, OnTimeout::Continue);
            }
            CardPlan::Answer(answer, r.range(1, 3))
        };
        let at_step = r.range(1, u64::from(self.steps.saturating_sub(1)).max(1)) as u32;
        self.hitl = Some(HitlPlan { at_step, card, resolution });
        self
    }
}
