//! Unix milliseconds to calendar dates and clock times, with a fixed UTC offset.
//!
//! Why by hand: the store reads no clock and needs no time-zone database. The shell passes the
//! wall time of every record and the user's UTC offset when a conversation starts; turning those
//! into "2025-03-14 09:26:53" is forty lines of arithmetic (Howard Hinnant's `civil_from_days`),
//! not a dependency.

/// A calendar date and clock time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CivilTime {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

const MS_PER_DAY: i64 = 86_400_000;

impl CivilTime {
    /// The local calendar time of `unix_ms` at `utc_offset_minutes` east of UTC.
    pub fn from_unix_ms(unix_ms: i64, utc_offset_minutes: i32) -> CivilTime {
        let local_ms = unix_ms.saturating_add(i64::from(utc_offset_minutes) * 60_000);
        let days = local_ms.div_euclid(MS_PER_DAY);
        let ms_of_day = local_ms.rem_euclid(MS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        let seconds_of_day = (ms_of_day / 1000) as u32;
        CivilTime {
            year,
            month,
            day,
            hour: seconds_of_day / 3600,
            minute: seconds_of_day / 60 % 60,
            second: seconds_of_day % 60,
        }
    }

    /// `2025-03-14`
    pub fn date(&self) -> String {
        format!("{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }

    /// `09:26:53`
    pub fn clock(&self) -> String {
        format!("{:02}:{:02}:{:02}", self.hour, self.minute, self.second)
    }

    /// `2025-03-14_09-26-53`: sortable and valid as a file name everywhere.
    pub fn folder_stamp(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}_{:02}-{:02}-{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `1:05` or `1:02:05` for a duration.
pub fn format_duration_ms(duration_ms: u64) -> String {
    let seconds = duration_ms / 1000;
    if seconds >= 3600 {
        format!(
            "{}:{:02}:{:02}",
            seconds / 3600,
            seconds / 60 % 60,
            seconds % 60
        )
    } else {
        format!("{}:{:02}", seconds / 60, seconds % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_epoch_is_the_first_of_january_1970() {
        let time = CivilTime::from_unix_ms(0, 0);
        assert_eq!(
            (time.date(), time.clock()),
            ("1970-01-01".into(), "00:00:00".into())
        );
    }

    #[test]
    fn a_known_instant_formats_in_utc_and_with_an_offset() {
        // 2024-02-29T23:30:15Z, a leap day.
        let unix_ms = 1_709_249_415_000;
        let utc = CivilTime::from_unix_ms(unix_ms, 0);
        assert_eq!(utc.folder_stamp(), "2024-02-29_23-30-15");
        let paris = CivilTime::from_unix_ms(unix_ms, 60);
        assert_eq!(paris.folder_stamp(), "2024-03-01_00-30-15");
    }

    #[test]
    fn times_before_the_epoch_do_not_underflow() {
        let time = CivilTime::from_unix_ms(-1, 0);
        assert_eq!(time.folder_stamp(), "1969-12-31_23-59-59");
    }

    #[test]
    fn durations_read_as_minutes_and_seconds() {
        assert_eq!(format_duration_ms(65_000), "1:05");
        assert_eq!(format_duration_ms(3_725_999), "1:02:05");
    }
}
