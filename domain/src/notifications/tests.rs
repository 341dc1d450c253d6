//! Notifications: dedupe as a property of the log, stateless decisions, properties.

use proptest::prelude::*;

use super::*;
use crate::envelope::Actor;
use crate::stamp::stamp;
use crate::testing::*;

fn create(user: &str, key: Option<&str>, title: &str) -> NotificationCommand {
    NotificationCommand::Create(CreateNotification {
        user_id: user.into(),
        category: "brief".into(),
        notification_type: "brief_result".into(),
        title: title.into(),
        body: "b".into(),
        dedupe_key: key.map(str::to_string),
        action_url: None,
        metadata: None,
    })
}

#[test]
fn transition_table_decisions_need_no_state() {
    let empty = Notifications::default();
    let busy = run_all::<Notifications>(&[create("u1", Some("k"), "t"), create("u1", None, "t")]);
    let ids = |v: &[&str]| v.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
    let table: Vec<(&str, NotificationCommand, Expect)> = vec![
        ("create", create("u1", Some("k2"), "t"), ok(&["notification.created"])),
        ("create without title", create("u1", None, " "), no("Validation")),
        ("create with blank key", create("u1", Some(" "), "t"), no("Validation")),
        ("read", NotificationCommand::MarkRead { ids: ids(&["n1"]) }, ok(&["notification.read"])),
        ("read nothing", NotificationCommand::MarkRead { ids: vec![] }, no("Validation")),
        (
            "unread",
            NotificationCommand::MarkUnread { ids: ids(&["n1"]) },
            ok(&["notification.unread"]),
        ),
        ("all read", NotificationCommand::MarkAllRead, ok(&["notification.all_read"])),
        (
            "archive",
            NotificationCommand::Archive { ids: ids(&["n1"]) },
            ok(&["notification.archived"]),
        ),
        ("archive nothing", NotificationCommand::Archive { ids: ids(&[""]) }, no("Validation")),
        ("archive all", NotificationCommand::ArchiveAll, ok(&["notification.all_archived"])),
    ];
    for (name, command, expect) in &table {
        for state in [&empty, &busy] {
            assert_eq!(check(state, command, &system_ctx(10), expect), None, "{name}");
            // the same decision on any state: no stream state is read
            assert_eq!(
                format!("{:?}", state.decide(command, &system_ctx(10))),
                format!("{:?}", empty.decide(command, &system_ctx(10)))
            );
        }
    }
}

#[test]
fn dedupe_key_makes_the_event_id_a_property_of_the_log() {
    let s = Notifications::default();
    let first_ctx = system_ctx(1);
    let later_ctx = system_ctx(500);
    let a = s.decide(&create("u1", Some("brief:b1"), "first"), &first_ctx).unwrap();
    let b = s.decide(&create("u1", Some("brief:b1"), "second"), &later_ctx).unwrap();
    let (ea, eb) = (stamp(&s, &a, &first_ctx), stamp(&s, &b, &later_ctx));
    assert_eq!(
        ea[0].event_id, eb[0].event_id,
        "same user + key → same event id, whatever the command"
    );
    let (NotificationEvent::Created(na), NotificationEvent::Created(nb)) = (&a[0], &b[0]) else {
        panic!()
    };
    assert_eq!(na.notification_id, nb.notification_id);
    assert_eq!(na.notification_id, deduped_notification_id("u1", "brief:b1"));

    let other_user = s.decide(&create("u2", Some("brief:b1"), "first"), &first_ctx).unwrap();
    assert_ne!(stamp(&s, &other_user, &first_ctx)[0].event_id, ea[0].event_id, "keys are per user");
    let no_key_1 = s.decide(&create("u1", None, "x"), &first_ctx).unwrap();
    let no_key_2 = s.decide(&create("u1", None, "x"), &later_ctx).unwrap();
    assert_ne!(
        stamp(&s, &no_key_1, &first_ctx)[0].event_id,
        stamp(&s, &no_key_2, &later_ctx)[0].event_id,
        "no key never collides"
    );
}

fn command() -> impl Strategy<Value = NotificationCommand> {
    let ids = prop::collection::vec("n[0-9]", 0..3);
    prop_oneof![
        (prop::option::of("[a-z]{1,3}"), "[a-z]{0,3}").prop_map(|(k, t)| create(
            "u1",
            k.as_deref(),
            &t
        )),
        ids.clone().prop_map(|ids| NotificationCommand::MarkRead { ids }),
        ids.clone().prop_map(|ids| NotificationCommand::MarkUnread { ids }),
        ids.prop_map(|ids| NotificationCommand::Archive { ids }),
        Just(NotificationCommand::MarkAllRead),
        Just(NotificationCommand::ArchiveAll),
    ]
}

proptest! {
    #[test]
    fn random_command_sequences_keep_notifications_consistent(commands in prop::collection::vec(command(), 1..30)) {
        let times: Vec<(i64, Actor)> = commands.iter().map(|_| (1, Actor::system("bus"))).collect();
        let steps: Vec<_> = commands.into_iter().zip(timeline(&times)).collect();
        exercise::<Notifications>(&steps);
    }
}
