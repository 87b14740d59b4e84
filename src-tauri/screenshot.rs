//! Screenshots to show the model: the whole screen, or one window, taken from the X server.
//!
//! Why X11 alone: on X11 any client may read the screen (`GetImage` on the root window), so a
//! plain protocol connection (x11rb, no C library) is enough. A window is taken as it shows on
//! the screen (its rectangle of the root window), so what covers it is in the picture, as the
//! user sees it. Wayland lets no client read the screen: there Walkie asks the desktop's
//! screenshot portal ([`crate::portal::screenshot`]), whose own dialog lets the user choose
//! what to take and hands back a file ([`Target::Desktop`]). Under XWayland the root window
//! shows no Wayland window, so a Wayland session never reads it, even when `DISPLAY` is set.

use serde::{Deserialize, Serialize};
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{
    AtomEnum, ConnectionExt as _, ImageFormat, ImageOrder, MapState, Window,
};

/// What can be taken: the screen, or one window by its X id and title.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Target {
    Screen,
    Window {
        id: u32,
        title: String,
    },
    /// Whatever the user chooses in the desktop's own screenshot dialog (a Wayland session).
    Desktop,
}

impl Target {
    /// The attached picture's name.
    pub fn name(&self) -> String {
        match self {
            Target::Screen => "Screenshot of the screen".to_owned(),
            Target::Window { title, .. } => format!("Screenshot of {title}"),
            Target::Desktop => "Screenshot".to_owned(),
        }
    }
}

/// Pixels taken: `width_px` × `height_px`, RGBA, row by row.
pub struct Capture {
    pub width_px: u32,
    pub height_px: u32,
    pub rgba: Vec<u8>,
}

/// Why no screenshot was taken; the sentence says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ScreenshotError {
    #[error(
        "This Wayland desktop's portal takes no screenshots: attach a saved screenshot with \
         Picture… instead."
    )]
    Wayland,
    #[error("The screen cannot be read ({0}): attach a saved screenshot with Picture… instead.")]
    NoDisplay(String),
    #[error("That window is gone or hidden: choose another, or the whole screen.")]
    WindowGone,
    #[error(
        "The screen's pixels ({bits_per_pixel} bits, depth {depth}) are in a format Walkie does \
         not read: attach a saved screenshot with Picture… instead."
    )]
    PixelFormat { depth: u8, bits_per_pixel: u8 },
}

fn no_display(error: impl std::fmt::Display) -> ScreenshotError {
    ScreenshotError::NoDisplay(error.to_string())
}

fn connect() -> Result<(x11rb::rust_connection::RustConnection, usize), ScreenshotError> {
    if std::env::var("XDG_SESSION_TYPE").is_ok_and(|kind| kind == "wayland") {
        return Err(ScreenshotError::Wayland);
    }
    x11rb::connect(None).map_err(no_display)
}

/// The screen, then every window a screenshot can take, in the window manager's order (or,
/// with no window manager, the viewable top-level windows that have a title).
pub fn targets() -> Result<Vec<Target>, ScreenshotError> {
    let (connection, screen) = connect()?;
    let root = connection.setup().roots[screen].root;
    let atom = |name: &[u8]| -> Result<u32, ScreenshotError> {
        Ok(connection
            .intern_atom(false, name)
            .map_err(no_display)?
            .reply()
            .map_err(no_display)?
            .atom)
    };
    let client_list = atom(b"_NET_CLIENT_LIST")?;
    let net_wm_name = atom(b"_NET_WM_NAME")?;
    let utf8_string = atom(b"UTF8_STRING")?;
    let listed: Vec<Window> = connection
        .get_property(false, root, client_list, AtomEnum::WINDOW, 0, u32::MAX)
        .map_err(no_display)?
        .reply()
        .map_err(no_display)?
        .value32()
        .map(Iterator::collect)
        .unwrap_or_default();
    let windows = if listed.is_empty() {
        connection
            .query_tree(root)
            .map_err(no_display)?
            .reply()
            .map_err(no_display)?
            .children
    } else {
        listed
    };
    let title = |window: Window| -> Option<String> {
        for (property, kind) in [
            (net_wm_name, utf8_string),
            (u32::from(AtomEnum::WM_NAME), u32::from(AtomEnum::STRING)),
        ] {
            let reply = connection
                .get_property(false, window, property, kind, 0, 1024)
                .ok()?
                .reply()
                .ok()?;
            let text = if kind == utf8_string {
                String::from_utf8_lossy(&reply.value).into_owned()
            } else {
                reply.value.iter().map(|&byte| char::from(byte)).collect()
            };
            let text = text.trim().to_owned();
            if !text.is_empty() {
                return Some(text);
            }
        }
        None
    };
    let viewable = |window: Window| {
        connection
            .get_window_attributes(window)
            .ok()
            .and_then(|cookie| cookie.reply().ok())
            .is_some_and(|attributes| attributes.map_state == MapState::VIEWABLE)
    };
    let mut targets = vec![Target::Screen];
    for window in windows {
        if viewable(window)
            && let Some(title) = title(window)
        {
            targets.push(Target::Window { id: window, title });
        }
    }
    Ok(targets)
}

/// Takes the target's pixels as they show on the screen now.
pub fn capture(target: &Target) -> Result<Capture, ScreenshotError> {
    let (connection, screen) = connect()?;
    let setup = connection.setup();
    let screen = &setup.roots[screen];
    let (screen_width, screen_height) = (
        i32::from(screen.width_in_pixels),
        i32::from(screen.height_in_pixels),
    );
    let (x, y, width, height) = match target {
        Target::Screen => (0, 0, screen_width, screen_height),
        Target::Desktop => {
            unreachable!("attach_screenshot takes the desktop's screenshots through its portal")
        }
        Target::Window { id, .. } => {
            let geometry = connection
                .get_geometry(*id)
                .map_err(no_display)?
                .reply()
                .map_err(|_| ScreenshotError::WindowGone)?;
            let origin = connection
                .translate_coordinates(*id, screen.root, 0, 0)
                .map_err(no_display)?
                .reply()
                .map_err(|_| ScreenshotError::WindowGone)?;
            // Its rectangle on the screen, cut to the screen.
            let left = i32::from(origin.dst_x).max(0);
            let top = i32::from(origin.dst_y).max(0);
            let right = (i32::from(origin.dst_x) + i32::from(geometry.width)).min(screen_width);
            let bottom = (i32::from(origin.dst_y) + i32::from(geometry.height)).min(screen_height);
            if right <= left || bottom <= top {
                return Err(ScreenshotError::WindowGone);
            }
            (left, top, right - left, bottom - top)
        }
    };
    let as_u16 = |value: i32| {
        u16::try_from(value).expect("a rectangle cut to the screen fits X's 16-bit sizes")
    };
    let as_i16 = |value: i32| {
        i16::try_from(value).expect("a point on the screen fits X's 16-bit coordinates")
    };
    let image = connection
        .get_image(
            ImageFormat::Z_PIXMAP,
            screen.root,
            as_i16(x),
            as_i16(y),
            as_u16(width),
            as_u16(height),
            !0,
        )
        .map_err(no_display)?
        .reply()
        .map_err(no_display)?;
    let format = setup
        .pixmap_formats
        .iter()
        .find(|format| format.depth == image.depth)
        .ok_or(ScreenshotError::PixelFormat {
            depth: image.depth,
            bits_per_pixel: 0,
        })?;
    let (width_px, height_px) = (width as u32, height as u32);
    let rgba = rgba_of_z_pixmap(
        &image.data,
        width_px,
        height_px,
        format.bits_per_pixel,
        format.scanline_pad,
        setup.image_byte_order == ImageOrder::LSB_FIRST,
    )
    .ok_or(ScreenshotError::PixelFormat {
        depth: image.depth,
        bits_per_pixel: format.bits_per_pixel,
    })?;
    Ok(Capture {
        width_px,
        height_px,
        rgba,
    })
}

/// RGBA pixels from a Z-pixmap of 32 bits a pixel (the true-colour screens of depth 24 and
/// 32: blue, green, red, unused, least significant byte first); `None` for any other layout
/// or for data too short for the size.
fn rgba_of_z_pixmap(
    data: &[u8],
    width_px: u32,
    height_px: u32,
    bits_per_pixel: u8,
    scanline_pad_bits: u8,
    least_significant_first: bool,
) -> Option<Vec<u8>> {
    if bits_per_pixel != 32 || scanline_pad_bits == 0 || !scanline_pad_bits.is_multiple_of(8) {
        return None;
    }
    let pad_bytes = usize::from(scanline_pad_bits / 8);
    let row_bytes = (width_px as usize * 4).div_ceil(pad_bytes) * pad_bytes;
    if data.len() < row_bytes * height_px as usize {
        return None;
    }
    let mut rgba = Vec::with_capacity(width_px as usize * height_px as usize * 4);
    for row in data.chunks_exact(row_bytes).take(height_px as usize) {
        for pixel in row[..width_px as usize * 4].chunks_exact(4) {
            let [red, green, blue] = if least_significant_first {
                [pixel[2], pixel[1], pixel[0]]
            } else {
                [pixel[1], pixel[2], pixel[3]]
            };
            rgba.extend_from_slice(&[red, green, blue, 255]);
        }
    }
    Some(rgba)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_true_colour_pixmap_reads_as_rgba_whatever_its_byte_order() {
        // Two pixels, pure red then pure blue, as an X server of each byte order sends them.
        let lsb = [0x00, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0x00, 0x00];
        let msb = [0x00, 0xFF, 0x00, 0x00, 0x00, 0x00, 0x00, 0xFF];
        let red_then_blue = vec![255, 0, 0, 255, 0, 0, 255, 255];
        assert_eq!(
            rgba_of_z_pixmap(&lsb, 2, 1, 32, 32, true),
            Some(red_then_blue.clone())
        );
        assert_eq!(
            rgba_of_z_pixmap(&msb, 2, 1, 32, 32, false),
            Some(red_then_blue)
        );
    }

    #[test]
    fn rows_padded_past_the_width_are_read_without_the_padding() {
        // One green pixel a row, rows padded to 64 bits (8 bytes).
        let data = [0, 0xFF, 0, 0, 9, 9, 9, 9, 0, 0xFF, 0, 0, 9, 9, 9, 9];
        assert_eq!(
            rgba_of_z_pixmap(&data, 1, 2, 32, 64, true),
            Some(vec![0, 255, 0, 255, 0, 255, 0, 255])
        );
    }

    #[test]
    fn other_layouts_and_short_data_are_refused_not_misread() {
        assert_eq!(rgba_of_z_pixmap(&[0; 4], 2, 1, 16, 32, true), None);
        assert_eq!(rgba_of_z_pixmap(&[0; 7], 2, 1, 32, 32, true), None);
    }
}
