//! The wall clock jumps. The scheduler's clock pass is driven by the test (`scheduler::pass(state,
//! now)`), as NTP stepping the clock or a VM resumed after a day would drive it: stepped back
//! an hour, a slot that already fired never fires again and nothing fires until the clock is
//! past the last fired slot; stepped forward a day, only the latest missed slot fires, once,
//! however many passes see it.

use agentlog_api::reactors::scheduler;
use chrono::Duration;

use crate::{
    scheduling::{app, at, caught_up, create_job, fired},
    support::Db,
};

async fn the_clock_stepped_back_and_forward(db: Db) {
    let s = app(&db).await;
    create_job(&s, "j1", "*/5 * * * *", "UTC", None, at("2026-11-30T10:00:30Z")).await;
    caught_up(&[&s]).await;
    let pass = |now: &str| {
        let (s, now) = (&s, at(now));
        async move {
            let fired = scheduler::pass(s, now).await.expect("pass").cron_fired;
            caught_up(&[s]).await;
            fired
        }
    };
    assert_eq!(pass("2026-11-30T10:05:10Z").await, ["j1@2026-11-30T10:05"]);
    assert_eq!(pass("2026-11-30T10:10:10Z").await, ["j1@2026-11-30T10:10"]);

    // Back one hour, then the clock runs forward again through the hour it already lived.
    let mut t = at("2026-11-30T09:10:10Z");
    while t < at("2026-11-30T10:15:00Z") {
        let fired = scheduler::pass(&s, t).await.expect("pass").cron_fired;
        assert!(fired.is_empty(), "nothing fires before the clock is past the last fired slot: {t} fired {fired:?}");
        t += Duration::minutes(1);
    }
    assert_eq!(pass("2026-11-30T10:15:10Z").await, ["j1@2026-11-30T10:15"], "the next slot fires once caught up");

    // Forward one day: the latest missed slot fires, once; the 287 before it do not.
    assert_eq!(pass("2026-12-01T10:16:00Z").await, ["j1@2026-12-01T10:15"]);
    assert!(pass("2026-12-01T10:16:30Z").await.is_empty(), "a second pass at the same slot fires nothing");
    // And back again by an hour after the jump: nothing twice.
    assert!(pass("2026-12-01T09:20:00Z").await.is_empty());

    let slots: Vec<String> =
        fired(&s, "j1").await.iter().map(|f| f["localTime"].as_str().unwrap_or_default().to_string()).collect();
    assert_eq!(
        slots,
        ["2026-11-30T10:05:00Z", "2026-11-30T10:10:00Z", "2026-11-30T10:15:00Z", "2026-12-01T10:15:00Z"],
        "each slot fired once, in order"
    );
}

both!(the_clock_stepped_back_and_forward as the_clock_stepped_back_and_forward);
