//! Where Walkie has no streams of its own (every platform but Linux; on Linux, a build with
//! `--cfg walkie_cpal_only`, which checks this path): cpal's stream serves every device.

use super::{CpalChoice, DeviceError, NativeCapture, NativePlayback, Opened, Opening, Route};

/// No stream of Walkie's own: nothing routes to one.
pub(super) enum NativeRoute {}

/// No stream of Walkie's own runs.
pub(super) enum NativeStream {}

impl NativeStream {
    pub(super) fn rest(&self, _resting: bool) {
        match *self {}
    }
}

/// Device names of Walkie's own (`alsa:<pcm>`) mean nothing here.
pub(super) fn by_name(_device_id: Option<&str>) -> Option<Opening> {
    None
}

/// Every device is opened with cpal.
pub(super) fn route(_id: Option<&cpal::DeviceId>, cpal: CpalChoice) -> Route {
    Route::Cpal(cpal)
}

pub(super) fn open_capture(
    route: NativeRoute,
    _ring_ms: u32,
) -> Result<Opened<NativeCapture>, DeviceError> {
    match route {}
}

pub(super) fn open_playback(
    route: NativeRoute,
    _ring_ms: u32,
    _reference: bool,
) -> Result<Opened<NativePlayback>, DeviceError> {
    match route {}
}
