//! Classic 5-field cron patterns (`minute hour day-of-month month day-of-week`), checked
//! syntactically and matched against a local time. No cron crate: the scheduler in the api
//! computes next fire times; the domain only needs to refuse bad patterns with a clear message
//! and to tell whether a given minute matches.
//!
//! Each field is a comma list of `*`, `*/step`, `n`, `a-b`, `a-b/step` or `n/step`; months
//! accept `JAN`–`DEC`, days of week `SUN`–`SAT` (0 and 7 are both Sunday). When both
//! day-of-month and day-of-week are restricted, a day matching either matches (classic cron).
//!
//! ```
//! use agentlog_domain::cron_jobs::pattern::{check_pattern, CronPattern};
//! assert!(check_pattern("*/15 9-17 * * MON-FRI").is_ok());
//! assert!(check_pattern("0 24 * * *").is_err());
//! let p = CronPattern::parse("30 9 * * 1").unwrap();
//! assert!(p.matches(30, 9, 2, 11, 1));
//! ```

use std::collections::BTreeSet;

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Timelike};

/// A pattern that is not a valid 5-field cron pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronPatternError {
    /// Not 5 fields.
    #[error(
        "a cron pattern has 5 fields (minute hour day-of-month month day-of-week); '{pattern}' has {count}"
    )]
    FieldCount {
        /// The pattern.
        pattern: String,
        /// How many fields it has.
        count: usize,
    },
    /// A field is malformed or out of range.
    #[error("{field} field '{text}': {reason}")]
    Field {
        /// Which field.
        field: &'static str,
        /// Its text.
        text: String,
        /// What is wrong.
        reason: String,
    },
}

struct FieldSpec {
    name: &'static str,
    min: u8,
    max: u8,
    names: &'static [&'static str],
}

const FIELDS: [FieldSpec; 5] = [
    FieldSpec { name: "minute", min: 0, max: 59, names: &[] },
    FieldSpec { name: "hour", min: 0, max: 23, names: &[] },
    FieldSpec { name: "day-of-month", min: 1, max: 31, names: &[] },
    FieldSpec {
        name: "month",
        min: 1,
        max: 12,
        names: &[
            "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
        ],
    },
    FieldSpec {
        name: "day-of-week",
        min: 0,
        max: 7,
        names: &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
    },
];

/// A parsed pattern: the allowed values of each field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronPattern {
    minutes: BTreeSet<u8>,
    hours: BTreeSet<u8>,
    days_of_month: BTreeSet<u8>,
    months: BTreeSet<u8>,
    days_of_week: BTreeSet<u8>,
    dom_restricted: bool,
    dow_restricted: bool,
}

/// Check a pattern; the error says which field is wrong and why.
pub fn check_pattern(pattern: &str) -> Result<(), CronPatternError> {
    CronPattern::parse(pattern).map(|_| ())
}

impl CronPattern {
    /// Parse a 5-field pattern.
    pub fn parse(pattern: &str) -> Result<Self, CronPatternError> {
        let parts: Vec<&str> = pattern.split_whitespace().collect();
        if parts.len() != 5 {
            return Err(CronPatternError::FieldCount {
                pattern: pattern.to_string(),
                count: parts.len(),
            });
        }
        let mut sets = Vec::with_capacity(5);
        for (text, spec) in parts.iter().zip(FIELDS.iter()) {
            sets.push(parse_field(text, spec)?);
        }
        let mut days_of_week = sets[4].clone();
        if days_of_week.remove(&7) {
            days_of_week.insert(0);
        }
        Ok(Self {
            minutes: sets[0].clone(),
            hours: sets[1].clone(),
            days_of_month: sets[2].clone(),
            months: sets[3].clone(),
            days_of_week,
            dom_restricted: parts[2] != "*",
            dow_restricted: parts[4] != "*",
        })
    }

    /// Does the local time (minute, hour, day of month 1–31, month 1–12, weekday 0–6 with
    /// 0 = Sunday) match?
    pub fn matches(&self, minute: u8, hour: u8, day_of_month: u8, month: u8, weekday: u8) -> bool {
        self.day_matches(day_of_month, month, weekday)
            && self.minutes.contains(&minute)
            && self.hours.contains(&hour)
    }

    /// The day part of [`Self::matches`]: month, and day of month or weekday (classic cron:
    /// either one when both are restricted).
    fn day_matches(&self, day_of_month: u8, month: u8, weekday: u8) -> bool {
        let dom = self.days_of_month.contains(&day_of_month);
        let dow = self.days_of_week.contains(&(weekday % 7));
        let day = match (self.dom_restricted, self.dow_restricted) {
            (true, true) => dom || dow,
            (true, false) => dom,
            (false, true) => dow,
            (false, false) => true,
        };
        day && self.months.contains(&month)
    }
}

impl CronPattern {
    /// The hours (0–23) the pattern allows, ascending.
    pub fn hours(&self) -> impl Iterator<Item = u8> + '_ {
        self.hours.iter().copied()
    }

    /// Does the pattern allow this local date (day of month, month and weekday)?
    pub fn matches_day(&self, date: NaiveDate) -> bool {
        let weekday = date.weekday().num_days_from_sunday() as u8;
        self.day_matches(date.day() as u8, date.month() as u8, weekday)
    }

    /// The latest local minute at or before `at` that matches, not earlier than `not_before`;
    /// `None` when no minute in that window matches. Walks back a day, an hour or a run of
    /// minutes at a time, so a year-long window costs at most a few hundred steps.
    pub fn latest_at_or_before(
        &self,
        at: NaiveDateTime,
        not_before: NaiveDateTime,
    ) -> Option<NaiveDateTime> {
        let mut t = at.with_second(0)?.with_nanosecond(0)?;
        while t >= not_before {
            let date = t.date();
            if !self.matches_day(date) {
                t = date.pred_opt()?.and_time(NaiveTime::from_hms_opt(23, 59, 0)?);
                continue;
            }
            let hour = t.hour() as u8;
            if !self.hours.contains(&hour) {
                t = match self.hours.range(..hour).next_back() {
                    Some(h) => date.and_time(NaiveTime::from_hms_opt(u32::from(*h), 59, 0)?),
                    None => date.pred_opt()?.and_time(NaiveTime::from_hms_opt(23, 59, 0)?),
                };
                continue;
            }
            let minute = t.minute() as u8;
            if self.minutes.contains(&minute) {
                return Some(t);
            }
            t = match self.minutes.range(..minute).next_back() {
                Some(m) => t.with_minute(u32::from(*m))?,
                None => t.with_minute(0)? - Duration::minutes(1),
            };
        }
        None
    }
}

impl CronPattern {
    /// The earliest local minute at or after `at` that matches, not later than `not_after`;
    /// the forward twin of [`Self::latest_at_or_before`], with the same few-hundred-step cost.
    pub fn earliest_at_or_after(
        &self,
        at: NaiveDateTime,
        not_after: NaiveDateTime,
    ) -> Option<NaiveDateTime> {
        let minute_of = |t: NaiveDateTime| t.with_second(0)?.with_nanosecond(0);
        let mut t = minute_of(at)?;
        if t < at {
            t += Duration::minutes(1);
        }
        let midnight = NaiveTime::MIN;
        while t <= not_after {
            let date = t.date();
            if !self.matches_day(date) {
                t = date.succ_opt()?.and_time(midnight);
                continue;
            }
            let hour = t.hour() as u8;
            if !self.hours.contains(&hour) {
                t = match self.hours.range(hour..).next() {
                    Some(h) => date.and_time(NaiveTime::from_hms_opt(u32::from(*h), 0, 0)?),
                    None => date.succ_opt()?.and_time(midnight),
                };
                continue;
            }
            let minute = t.minute() as u8;
            if self.minutes.contains(&minute) {
                return Some(t);
            }
            t = match self.minutes.range(minute..).next() {
                Some(m) => t.with_minute(u32::from(*m))?,
                None => t.with_minute(59)? + Duration::minutes(1),
            };
        }
        None
    }
}

fn field_error(spec: &FieldSpec, text: &str, reason: impl Into<String>) -> CronPatternError {
    CronPatternError::Field { field: spec.name, text: text.to_string(), reason: reason.into() }
}

fn parse_value(item: &str, spec: &FieldSpec, whole: &str) -> Result<u8, CronPatternError> {
    let upper = item.to_ascii_uppercase();
    if let Some(index) = spec.names.iter().position(|n| *n == upper) {
        let offset = if spec.name == "month" { 1 } else { 0 };
        return u8::try_from(index + offset)
            .map_err(|_| field_error(spec, whole, "name out of range"));
    }
    let value: u8 =
        item.parse().map_err(|_| field_error(spec, whole, format!("'{item}' is not a number")))?;
    if value < spec.min || value > spec.max {
        return Err(field_error(
            spec,
            whole,
            format!("{value} is outside {}–{}", spec.min, spec.max),
        ));
    }
    Ok(value)
}

fn parse_field(text: &str, spec: &FieldSpec) -> Result<BTreeSet<u8>, CronPatternError> {
    let mut values = BTreeSet::new();
    for item in text.split(',') {
        if item.is_empty() {
            return Err(field_error(spec, text, "empty list item"));
        }
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => {
                let step: u8 = step.parse().map_err(|_| {
                    field_error(spec, text, format!("step '{step}' is not a number"))
                })?;
                if step == 0 || step > spec.max {
                    return Err(field_error(
                        spec,
                        text,
                        format!("step must be between 1 and {}", spec.max),
                    ));
                }
                (range, step)
            }
            None => (item, 1),
        };
        let (lo, hi) = if range == "*" {
            (spec.min, spec.max)
        } else if let Some((a, b)) = range.split_once('-') {
            let (a, b) = (parse_value(a, spec, text)?, parse_value(b, spec, text)?);
            if a > b {
                return Err(field_error(spec, text, format!("range {a}-{b} runs backwards")));
            }
            (a, b)
        } else {
            let v = parse_value(range, spec, text)?;
            (v, if step > 1 { spec.max } else { v })
        };
        let mut v = lo;
        while v <= hi {
            values.insert(v);
            match v.checked_add(step) {
                Some(next) => v = next,
                None => break,
            }
        }
    }
    Ok(values)
}
