//! A cron job's `nextFireAt`, read through the server: its pattern in its time zone under its
//! conditions, from the server's clock; none once it is disabled.

use chrono::{DateTime, Datelike, Duration, NaiveTime, TimeZone, Utc};
use serde_json::{Value, json};

use crate::support::{Db, Server};

const CREATE: &str = "mutation($i: JSON!) { createCronJob(input: $i) { cronJob { nextFireAt } } }";
const JOBS: &str = "{ cronJobs { edges { node { jobId enabled nextFireAt } } } }";

/// The instant 09:00 falls on in `zone`, three local days after `now`: the only day of the
/// week the job below may fire on, so its next fire whatever the hour of the test.
fn nine_three_days_on(zone: chrono_tz::Tz, now: DateTime<Utc>) -> (DateTime<Utc>, u32) {
    let day = (now.with_timezone(&zone) + Duration::days(3)).date_naive();
    let nine = day.and_time(NaiveTime::from_hms_opt(9, 0, 0).expect("09:00"));
    let at = zone.from_local_datetime(&nine).single().expect("09:00 exists there").with_timezone(&Utc);
    (at, day.weekday().num_days_from_sunday())
}

fn instant(v: &Value) -> Option<DateTime<Utc>> {
    v.as_str().and_then(|s| DateTime::parse_from_rfc3339(s).ok()).map(|t| t.with_timezone(&Utc))
}

async fn a_cron_jobs_next_fire_follows_its_zone_and_conditions(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let now = Utc::now();
    let mut expected = Vec::new();
    for (id, zone) in [("utc", chrono_tz::UTC), ("tokyo", chrono_tz::Asia::Tokyo), ("ny", chrono_tz::America::New_York)]
    {
        let (at, weekday) = nine_three_days_on(zone, now);
        let job = json!({"jobId": id, "agentId": "a1", "pattern": "0 9 * * *", "timezone": zone.name(),
            "content": "report", "enabled": true, "conditions": {"activeDays": [weekday]}});
        let d = s.data(Some(&alice), CREATE, json!({"i": job})).await;
        assert_eq!(instant(&d["createCronJob"]["cronJob"]["nextFireAt"]), Some(at), "{id}: {d}");
        expected.push((id, at));
    }
    let d = s.data(Some(&alice), JOBS, json!({})).await;
    let listed: Vec<(String, Option<DateTime<Utc>>)> = d["cronJobs"]["edges"]
        .as_array()
        .map(|e| {
            e.iter()
                .map(|n| {
                    (n["node"]["jobId"].as_str().unwrap_or_default().to_string(), instant(&n["node"]["nextFireAt"]))
                })
                .collect()
        })
        .unwrap_or_default();
    for (id, at) in &expected {
        assert!(listed.contains(&(id.to_string(), Some(*at))), "{id} {at}: {d}");
    }
    // Tokyo's 09:00 is 00:00 UTC: the zone, not the server's, places it.
    assert_eq!(expected[1].1.format("%H:%M").to_string(), "00:00");

    // Disabled: none; enabled again: the same instant.
    let d = s
        .data(Some(&alice), "mutation { disableCronJob(id: \"ny\") { cronJob { enabled nextFireAt } } }", json!({}))
        .await;
    assert_eq!(d["disableCronJob"]["cronJob"], json!({"enabled": false, "nextFireAt": null}), "{d}");
    let d = s.data(Some(&alice), "mutation { enableCronJob(id: \"ny\") { cronJob { nextFireAt } } }", json!({})).await;
    assert_eq!(instant(&d["enableCronJob"]["cronJob"]["nextFireAt"]), Some(expected[2].1), "{d}");
    // A day that never comes: none.
    let never = json!({"jobId": "never", "agentId": "a1", "pattern": "0 0 30 2 *", "timezone": "UTC", "content": "c", "enabled": true});
    let d = s.data(Some(&alice), CREATE, json!({"i": never})).await;
    assert_eq!(d["createCronJob"]["cronJob"]["nextFireAt"], Value::Null, "{d}");
    s.stop();
}

both!(a_cron_jobs_next_fire_follows_its_zone_and_conditions as a_cron_jobs_next_fire_follows_its_zone_and_conditions);
