//! A cron's schedule: its expression read the way LangGraph Platform reads it
//! (`croniter`: five fields, or six with the seconds last), in an IANA time zone.
//! The ticks are computed in the zone's wall-clock time, so a daily schedule stays
//! at its hour across daylight-saving changes.

use std::str::FromStr;

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;

use crate::error::ApiError;

/// Most ticks counted as missed by one firing (a server down for a long time with a
/// schedule every second would count for ever otherwise).
pub(crate) const MISSED_CAP: usize = 100_000;

/// A parsed schedule in its time zone.
#[derive(Clone, Debug)]
pub(crate) struct Schedule {
    cron: Cron,
    zone: Tz,
}

impl Schedule {
    /// Reads `expression` in `timezone` (UTC when `None`); a 422 naming the field
    /// that is wrong.
    pub(crate) fn parse(expression: &str, timezone: Option<&str>) -> Result<Self, ApiError> {
        let zone = match timezone {
            None => Tz::UTC,
            Some(name) => Tz::from_str(name).map_err(|_| {
                ApiError::invalid(
                    "$.timezone",
                    format!("`{name}` is not an IANA time zone: use a name such as `America/New_York` or `UTC`"),
                )
            })?,
        };
        let fields: Vec<&str> = expression.split_whitespace().collect();
        let pattern = match fields.len() {
            0 => {
                return Err(ApiError::invalid(
                    "$.schedule",
                    "required: a cron expression, such as `0 9 * * *` (every day at 9:00)",
                ));
            }
            1 if fields[0].starts_with('@') => fields[0].to_string(),
            5 => fields.join(" "),
            // croniter's six-field form has the seconds last; croner's first.
            6 => format!("{} {}", fields[5], fields[..5].join(" ")),
            n => {
                return Err(ApiError::invalid(
                    "$.schedule",
                    format!(
                        "`{expression}` has {n} fields: give five (minute hour day month weekday) \
                         or six (with the seconds last)"
                    ),
                ));
            }
        };
        let cron = Cron::from_str(&pattern).map_err(|e| {
            ApiError::invalid(
                "$.schedule",
                format!("`{expression}` is not a cron expression: {e}"),
            )
        })?;
        let schedule = Self { cron, zone };
        // A pattern no date matches (`0 0 31 2 *`) never fires: refused now.
        if schedule.next_after(crate::db::now_ms()).is_none() {
            return Err(ApiError::invalid(
                "$.schedule",
                format!("`{expression}` matches no date"),
            ));
        }
        Ok(schedule)
    }

    /// The first tick strictly after `after` (milliseconds since the Unix epoch).
    pub(crate) fn next_after(&self, after: i64) -> Option<i64> {
        let at = Utc.timestamp_millis_opt(after).single()?;
        let local: DateTime<Tz> = at.with_timezone(&self.zone);
        let next = self.cron.find_next_occurrence(&local, false).ok()?;
        Some(next.with_timezone(&Utc).timestamp_millis())
    }

    /// How many ticks fall strictly after `after` and at or before `until` (at most
    /// [`MISSED_CAP`]).
    pub(crate) fn ticks_between(&self, after: i64, until: i64) -> usize {
        let mut n = 0;
        let mut at = after;
        while n < MISSED_CAP {
            match self.next_after(at) {
                Some(t) if t <= until => {
                    n += 1;
                    at = t;
                }
                _ => break,
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(rfc3339: &str) -> i64 {
        DateTime::parse_from_rfc3339(rfc3339)
            .map(|t| t.timestamp_millis())
            .unwrap_or_default()
    }

    fn iso(ms: i64) -> String {
        Utc.timestamp_millis_opt(ms)
            .single()
            .map(|t| t.to_rfc3339())
            .unwrap_or_default()
    }

    #[test]
    fn five_fields_read_in_utc_by_default() {
        let s = Schedule::parse("30 9 * * *", None).expect("a schedule");
        let next = s.next_after(ms("2026-06-01T10:00:00Z"));
        assert_eq!(next.map(iso).as_deref(), Some("2026-06-02T09:30:00+00:00"));
    }

    #[test]
    fn six_fields_have_the_seconds_last_as_croniter_reads_them() {
        let s = Schedule::parse("*/5 * * * * 30", None).expect("a schedule");
        let next = s.next_after(ms("2026-06-01T10:01:00Z"));
        assert_eq!(next.map(iso).as_deref(), Some("2026-06-01T10:05:30+00:00"));
        let every = Schedule::parse("* * * * * *", None).expect("a schedule");
        assert_eq!(
            every.next_after(ms("2026-06-01T10:01:00Z")),
            Some(ms("2026-06-01T10:01:01Z"))
        );
    }

    #[test]
    fn a_zone_keeps_the_wall_clock_hour_across_daylight_saving() {
        let s = Schedule::parse("0 9 * * *", Some("America/New_York")).expect("a schedule");
        // 9:00 EST is 14:00 UTC; after the spring change, 9:00 EDT is 13:00 UTC.
        assert_eq!(
            s.next_after(ms("2026-03-07T12:00:00Z")).map(iso).as_deref(),
            Some("2026-03-07T14:00:00+00:00")
        );
        assert_eq!(
            s.next_after(ms("2026-03-08T12:00:00Z")).map(iso).as_deref(),
            Some("2026-03-08T13:00:00+00:00")
        );
    }

    #[test]
    fn an_hour_that_repeats_in_the_autumn_fires_once() {
        // 1:30 happens twice in New York on 2026-11-01.
        let s = Schedule::parse("30 1 * * *", Some("America/New_York")).expect("a schedule");
        let first = s.next_after(ms("2026-11-01T04:00:00Z")).expect("a tick");
        let second = s.next_after(first).expect("a tick");
        assert_eq!(iso(first), "2026-11-01T05:30:00+00:00");
        assert_eq!(iso(second), "2026-11-02T06:30:00+00:00");
    }

    #[test]
    fn missed_ticks_are_counted() {
        let s = Schedule::parse("* * * * *", None).expect("a schedule");
        let from = ms("2026-06-01T10:00:00Z");
        assert_eq!(s.ticks_between(from, from + 10 * 60_000), 10);
        assert_eq!(s.ticks_between(from, from + 59_000), 0);
    }

    #[test]
    fn bad_expressions_and_zones_name_their_field() {
        for (expr, zone, field) in [
            ("not a cron", None, "$.schedule"),
            ("* * *", None, "$.schedule"),
            ("61 * * * *", None, "$.schedule"),
            ("0 0 31 2 *", None, "$.schedule"),
            ("* * * * *", Some("Mars/Olympus"), "$.timezone"),
        ] {
            let err = Schedule::parse(expr, zone).expect_err(expr);
            assert_eq!(
                err.errors.first().map(|e| e.0.as_str()),
                Some(field),
                "{expr}: {err:?}"
            );
        }
    }
}
