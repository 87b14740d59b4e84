//! What the window's level meters are told: a reading goes out only when it would move its
//! meter by a step. Why: every reading the window gets is an IPC message and a repaint, and
//! most readings (a quiet room, a steady voice) move nothing a user could see.

use walkie_session::DeviceDirection;

use crate::input::LevelReading;

/// The quietest level a meter shows (the window's scale: ui/meters.js `FLOOR_DBFS`); anything
/// quieter looks the same.
pub const METER_FLOOR_DBFS: f32 = -60.0;
/// The smallest change of level a meter is moved for, in dB (on a 60 dB scale, a few pixels).
pub const METER_STEP_DB: f32 = 2.0;

/// The step each direction's meter shows, once it was told one.
#[derive(Debug, Default)]
pub(crate) struct Meters {
    shown_input: Option<i32>,
    shown_output: Option<i32>,
}

impl Meters {
    /// Whether `level` moves the `direction` meter to another step (it then shows that step).
    pub(crate) fn moves(&mut self, direction: DeviceDirection, level: LevelReading) -> bool {
        let step = step_of(level.rms_dbfs);
        let shown = match direction {
            DeviceDirection::Input => &mut self.shown_input,
            DeviceDirection::Output => &mut self.shown_output,
        };
        if *shown == Some(step) {
            return false;
        }
        *shown = Some(step);
        true
    }

    /// The reading that rests the `direction` meter at its floor, if it shows more: a meter
    /// falls when its sound stops (a flushed or drained speaker), not with the next reading,
    /// which may not come for a long while.
    pub(crate) fn rest(&mut self, direction: DeviceDirection) -> Option<LevelReading> {
        let floor = LevelReading {
            rms_dbfs: METER_FLOOR_DBFS,
            peak_dbfs: METER_FLOOR_DBFS,
        };
        self.moves(direction, floor).then_some(floor)
    }
}

/// The meter step of an RMS level: clamped to the meter's scale (a NaN reads as silence).
fn step_of(rms_dbfs: f32) -> i32 {
    let clamped = if rms_dbfs.is_nan() {
        METER_FLOOR_DBFS
    } else {
        rms_dbfs.clamp(METER_FLOOR_DBFS, 0.0)
    };
    (clamped / METER_STEP_DB).round() as i32
}
