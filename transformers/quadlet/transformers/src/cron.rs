//! A cron schedule (Kubernetes' CronJob `schedule`: five fields, or a macro) as systemd
//! calendar events (`OnCalendar=` of a `.timer`, systemd.time(7)).
//!
//! Each field keeps its meaning: `*`, a number, a list `a,b`, a range `a-b` (systemd's `a..b`),
//! a step `*/n` or `a-b/n` (written out as the list of values it selects), month and weekday
//! names. Cron runs when the day of the month *or* the weekday matches if both are restricted,
//! where one systemd event needs both: such a schedule becomes two events, one for each, and a
//! timer fires on either. A time zone is appended to each event. What cannot be read is an error
//! that names the field.
//!
//! ```
//! use quadlet_transformers::cron::calendar;
//! assert_eq!(calendar("0 3 * * *", None).unwrap(), ["*-*-* 03:00:00"]);
//! assert_eq!(calendar("*/15 9-17 * * 1-5", Some("Europe/Paris")).unwrap(),
//!            ["Mon..Fri *-*-* 09..17:00,15,30,45:00 Europe/Paris"]);
//! assert_eq!(calendar("0 0 1 * 0", None).unwrap(), ["*-*-01 00:00:00", "Sun *-*-* 00:00:00"]);
//! ```

const WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];

/// One field of the schedule: its name for errors, its bounds, and names it accepts.
struct Field {
    name: &'static str,
    min: u32,
    max: u32,
}

impl Field {
    const fn new(name: &'static str, min: u32, max: u32) -> Self {
        Self { name, min, max }
    }
}

const MINUTE: Field = Field::new("minute", 0, 59);
const HOUR: Field = Field::new("hour", 0, 23);
const DAY: Field = Field::new("day of month", 1, 31);
const MONTH: Field = Field::new("month", 1, 12);
const WEEKDAY: Field = Field::new("day of week", 0, 7);

/// What one field selects: every value, or these ranges (inclusive), in order.
#[derive(Debug, PartialEq)]
enum Selection {
    Every,
    Ranges(Vec<(u32, u32)>),
}

/// The five fields of a schedule, read.
struct Schedule {
    minute: Selection,
    hour: Selection,
    day: Selection,
    month: Selection,
    weekday: Selection,
}

/// The cron `schedule` read, its macro (`@daily`) written out.
fn parse(schedule: &str) -> Result<Schedule, String> {
    let expanded = match schedule.trim() {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        other if other.starts_with('@') => {
            return Err(format!("schedule {other:?}: no such macro"));
        }
        other => other,
    };
    let fields: Vec<&str> = expanded.split_whitespace().collect();
    let [minute, hour, day, month, weekday] = fields[..] else {
        return Err(format!(
            "schedule {schedule:?} must have five fields (minute hour day-of-month month \
             day-of-week) or be a macro such as @daily"
        ));
    };
    Ok(Schedule {
        minute: select(minute, &MINUTE, None)?,
        hour: select(hour, &HOUR, None)?,
        day: select(day, &DAY, None)?,
        month: select(month, &MONTH, Some(&MONTHS))?,
        weekday: weekdays(select(weekday, &WEEKDAY, Some(&WEEKDAYS))?),
    })
}

/// The systemd calendar events of the cron `schedule`, in `time_zone` if given.
pub fn calendar(schedule: &str, time_zone: Option<&str>) -> Result<Vec<String>, String> {
    let Schedule {
        minute,
        hour,
        day,
        month,
        weekday,
    } = parse(schedule)?;

    let zone = time_zone.map(|zone| format!(" {zone}")).unwrap_or_default();
    let time = format!("{}:{}:00", numbers(&hour, 2), numbers(&minute, 2));
    let event = |weekday: &Selection, day: &Selection| {
        let days = match weekday {
            Selection::Every => String::new(),
            ranges => format!("{} ", names(ranges)),
        };
        format!(
            "{days}*-{}-{} {time}{zone}",
            numbers(&month, 2),
            numbers(day, 2)
        )
    };
    Ok(match (&day, &weekday) {
        (Selection::Ranges(_), Selection::Ranges(_)) => vec![
            event(&Selection::Every, &day),
            event(&weekday, &Selection::Every),
        ],
        _ => vec![event(&weekday, &day)],
    })
}

/// A lower bound, in seconds, of the time between two runs of the cron `schedule`, whatever
/// the days it runs on: the shortest gap between two of its minutes (the hour wrapping round)
/// when it runs at several, else between two of its hours (the day wrapping round) less the
/// hour a daylight-saving change can take out of it, else a day less that hour.
///
/// ```
/// use quadlet_transformers::cron::shortest_gap;
/// assert_eq!(shortest_gap("*/15 * * * *").unwrap(), 15 * 60);
/// assert_eq!(shortest_gap("50,5 * * * *").unwrap(), 15 * 60);
/// assert_eq!(shortest_gap("0 */6 * * *").unwrap(), 5 * 3600);
/// assert_eq!(shortest_gap("@weekly").unwrap(), 23 * 3600);
/// ```
pub fn shortest_gap(schedule: &str) -> Result<u64, String> {
    let Schedule { minute, hour, .. } = parse(schedule)?;
    let minutes = cyclic_gap(&minute, &MINUTE);
    if minutes < 60 {
        return Ok(u64::from(minutes) * 60);
    }
    let hours = cyclic_gap(&hour, &HOUR).max(1);
    // Clocks put forward by an hour shorten a gap of two hours or more by one.
    let hours = if hours >= 2 { hours - 1 } else { hours };
    Ok(u64::from(hours) * 3600)
}

/// The fewest steps between two values `selection` holds of `field`, counted round the end of
/// the field (the next hour's or day's first value follows the last); the field's length when
/// it holds one value.
fn cyclic_gap(selection: &Selection, field: &Field) -> u32 {
    let length = field.max - field.min + 1;
    let values: Vec<u32> = match selection {
        Selection::Every => return 1,
        Selection::Ranges(ranges) => {
            let mut values: Vec<u32> = ranges
                .iter()
                .flat_map(|&(first, last)| first..=last)
                .collect();
            values.sort_unstable();
            values.dedup();
            values
        }
    };
    let (Some(first), Some(last)) = (values.first(), values.last()) else {
        return length;
    };
    let wrap = length - (last - first);
    values
        .windows(2)
        .map(|pair| pair[1] - pair[0])
        .fold(wrap, u32::min)
}

/// What `text` selects of `field`, names read from `names` (case-insensitive).
fn select(text: &str, field: &Field, names: Option<&[&str]>) -> Result<Selection, String> {
    if text == "*" || text == "?" {
        return Ok(Selection::Every);
    }
    let bad = |why: &str| format!("the {} field {text:?} {why}", field.name);
    let value = |item: &str| -> Result<u32, String> {
        if let Some(names) = names
            && let Some(index) = names
                .iter()
                .position(|name| name.eq_ignore_ascii_case(item))
        {
            return Ok(index as u32 + if field.min == 1 { 1 } else { 0 });
        }
        let number: u32 = item
            .parse()
            .map_err(|_| bad(&format!("has {item:?}, which is not a number")))?;
        if number < field.min || number > field.max {
            return Err(bad(&format!(
                "has {number}, outside {}..{}",
                field.min, field.max
            )));
        }
        Ok(number)
    };
    let mut ranges = Vec::new();
    for item in text.split(',') {
        let (span, step) = match item.split_once('/') {
            Some((span, step)) => {
                let step: u32 = step
                    .parse()
                    .ok()
                    .filter(|step| *step > 0)
                    .ok_or_else(|| bad("has a step that is not a positive number"))?;
                (span, Some(step))
            }
            None => (item, None),
        };
        let (first, last) = match span {
            "*" => (field.min, field.max),
            _ => match span.split_once('-') {
                Some((first, last)) => (value(first)?, value(last)?),
                None if step.is_some() => (value(span)?, field.max),
                None => (value(span)?, value(span)?),
            },
        };
        if first > last {
            return Err(bad("has a range that ends before it starts"));
        }
        match step {
            None | Some(1) => ranges.push((first, last)),
            Some(step) => ranges.extend((first..=last).step_by(step as usize).map(|v| (v, v))),
        }
    }
    Ok(Selection::Ranges(ranges))
}

/// Cron's weekday 7 is Sunday, as 0 is.
fn weekdays(selection: Selection) -> Selection {
    let Selection::Ranges(ranges) = selection else {
        return Selection::Every;
    };
    let mut days: Vec<u32> = ranges
        .into_iter()
        .flat_map(|(first, last)| first..=last)
        .map(|day| day % 7)
        .collect();
    days.sort_unstable();
    days.dedup();
    if days.len() == 7 {
        return Selection::Every;
    }
    // Consecutive days as ranges again.
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for day in days {
        match ranges.last_mut() {
            Some((_, last)) if *last + 1 == day => *last = day,
            _ => ranges.push((day, day)),
        }
    }
    Selection::Ranges(ranges)
}

/// A numeric selection as systemd writes it, each number of `width` digits.
fn numbers(selection: &Selection, width: usize) -> String {
    match selection {
        Selection::Every => "*".to_owned(),
        Selection::Ranges(ranges) => spans(ranges, |value| format!("{value:0width$}")),
    }
}

/// A weekday selection as systemd's names.
fn names(selection: &Selection) -> String {
    match selection {
        Selection::Every => String::new(),
        Selection::Ranges(ranges) => spans(ranges, |day| WEEKDAYS[day as usize].to_owned()),
    }
}

/// `ranges` as systemd lists them, each value as `show` writes it: `a..b`, or `a` alone for a
/// range of one, separated by `,`.
fn spans(ranges: &[(u32, u32)], show: impl Fn(u32) -> String) -> String {
    ranges
        .iter()
        .map(|&(first, last)| {
            if first == last {
                show(first)
            } else {
                format!("{}..{}", show(first), show(last))
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_schedules() {
        assert_eq!(
            calendar("*/5 * * * *", None).unwrap(),
            ["*-*-* *:00,05,10,15,20,25,30,35,40,45,50,55:00"]
        );
        assert_eq!(
            calendar("30 2 * * 0", Some("Etc/UTC")).unwrap(),
            ["Sun *-*-* 02:30:00 Etc/UTC"]
        );
        assert_eq!(calendar("@weekly", None).unwrap(), ["Sun *-*-* 00:00:00"]);
        assert_eq!(calendar("@hourly", None).unwrap(), ["*-*-* *:00:00"]);
        assert_eq!(
            calendar("0 0 1 jan,jul *", None).unwrap(),
            ["*-01,07-01 00:00:00"]
        );
        assert_eq!(
            calendar("0 12 * * SAT-SUN", None).unwrap_err(),
            "the day of week field \"SAT-SUN\" has a range that ends before it starts"
        );
        assert_eq!(
            calendar("0 12 * * 6,0", None).unwrap(),
            ["Sun,Sat *-*-* 12:00:00"]
        );
        assert_eq!(
            calendar("0 12 * * 5-7", None).unwrap(),
            ["Sun,Fri..Sat *-*-* 12:00:00"]
        );
        assert_eq!(calendar("0 12 * * 0-7", None).unwrap(), ["*-*-* 12:00:00"]);
        assert_eq!(
            calendar("0 1-10/3 * * *", None).unwrap(),
            ["*-*-* 01,04,07,10:00:00"]
        );
    }

    #[test]
    fn the_shortest_gap_between_runs_is_a_lower_bound_whatever_the_days() {
        assert_eq!(shortest_gap("* * * * *").unwrap(), 60);
        assert_eq!(shortest_gap("0,30 9-17 * * 1-5").unwrap(), 30 * 60);
        // 45 and 5 are 20 minutes apart round the hour.
        assert_eq!(shortest_gap("5,45 * * * *").unwrap(), 20 * 60);
        assert_eq!(shortest_gap("@hourly").unwrap(), 3600);
        assert_eq!(shortest_gap("0 1,2 * * *").unwrap(), 3600);
        assert_eq!(shortest_gap("30 2 * * *").unwrap(), 23 * 3600);
        assert_eq!(shortest_gap("0 22,2 * * *").unwrap(), 3 * 3600);
        assert!(shortest_gap("0 25 * * *").unwrap_err().contains("hour"));
    }

    #[test]
    fn day_of_month_or_weekday_is_two_events() {
        assert_eq!(
            calendar("0 0 13 * 5", None).unwrap(),
            ["*-*-13 00:00:00", "Fri *-*-* 00:00:00"]
        );
    }

    #[test]
    fn what_cannot_be_read_names_the_field() {
        assert_eq!(
            calendar("61 * * * *", None).unwrap_err(),
            "the minute field \"61\" has 61, outside 0..59"
        );
        assert!(
            calendar("* * *", None)
                .unwrap_err()
                .contains("must have five fields")
        );
        assert_eq!(
            calendar("@reboot", None).unwrap_err(),
            "schedule \"@reboot\": no such macro"
        );
        assert!(
            calendar("0 0 L * *", None)
                .unwrap_err()
                .contains("the day of month field \"L\"")
        );
        assert!(calendar("*/0 * * * *", None).unwrap_err().contains("step"));
    }
}
