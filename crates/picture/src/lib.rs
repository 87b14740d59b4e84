//! `walkie-picture`: a picture the user shows the model, made fit to send.
//!
//! Why a crate of its own: a picture from the user's disk, clipboard or screen can be anything
//! (a 50-megapixel photo on its side, a screenshot with transparency, a file that only claims to
//! be a PNG), while what goes to the provider must be small and plain: a JPEG in a data URL,
//! inside one `conversation.item.create` on the data channel. A data-channel message holds
//! 64 KiB unless both ends advertise more (RFC 8841), so [`prepare`] turns the source upright
//! (EXIF orientation), flattens transparency onto white, fits it within
//! [`PictureLimits::max_long_side_px`] and lowers the JPEG quality, then the size, until the
//! encoding fits [`PictureLimits::max_encoded_bytes`]. It also makes the thumbnail the window and
//! the saved transcript show. Pure: bytes in, bytes out; no files, no clock, no threads (the
//! `image` crate is built without rayon), so the shell runs it off the UI thread.

use std::io::Cursor;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use image::codecs::jpeg::JpegEncoder;
use image::imageops::FilterType;
use image::{DynamicImage, ImageDecoder as _, ImageFormat, ImageReader, Limits, Rgba, RgbaImage};
use serde::{Deserialize, Serialize};

/// The media type of every prepared picture and thumbnail.
pub const MEDIA_TYPE: &str = "image/jpeg";
/// The file extension of a saved picture.
pub const FILE_EXTENSION: &str = "jpg";
/// The formats [`prepare`] reads, as the user is told.
pub const READABLE_FORMATS: &str = "PNG, JPEG, WebP, GIF or BMP";

/// JPEG qualities tried in turn at one size before the picture is made smaller.
const QUALITY_LADDER: [u8; 4] = [85, 75, 65, 55];
/// Each smaller try keeps this share of the long side (in percent).
const SHRINK_PERCENT: u32 = 75;
/// A picture is not made smaller than this (long side, pixels) to fit: it would show nothing.
const MIN_LONG_SIDE_PX: u32 = 160;
const THUMBNAIL_QUALITY: u8 = 70;

/// What [`prepare`] accepts and makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PictureLimits {
    /// The largest source file read.
    pub max_source_bytes: usize,
    /// The largest source side decoded (a guard against decompression bombs).
    pub max_source_side_px: u32,
    /// The most pixels a source may have (its sides multiplied): decoded, each takes 3 or 4
    /// bytes, and a small file can claim many (a decompression bomb). Checked in the header,
    /// before anything is decoded, for every format.
    pub max_source_pixels: u64,
    /// The prepared picture's longest side, at most.
    pub max_long_side_px: u32,
    /// The prepared JPEG's size, at most.
    pub max_encoded_bytes: usize,
    /// The thumbnail's longest side.
    pub thumbnail_long_side_px: u32,
}

impl Default for PictureLimits {
    /// Sized for one 64 KiB data-channel message: 45,000 bytes of JPEG are 60,000 of base64,
    /// leaving room for the event around it and a typed question beside it.
    fn default() -> PictureLimits {
        PictureLimits {
            max_source_bytes: 64 * 1024 * 1024,
            max_source_side_px: 16_384,
            // A 48-megapixel phone photo fits; decoded, 50 megapixels take 150 MB.
            max_source_pixels: 50_000_000,
            max_long_side_px: 1_024,
            max_encoded_bytes: 45_000,
            thumbnail_long_side_px: 240,
        }
    }
}

/// A picture ready to send: a JPEG, its size in pixels, and its thumbnail.
///
/// As JSON (the journal, session events) it is described, not carried: the bytes and the
/// thumbnail are left out (the bytes are saved as a file of the turn, the thumbnail travels in
/// the transcript's metadata), so a picture read back from JSON has no bytes.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Picture {
    width_px: u32,
    height_px: u32,
    encoded_bytes: usize,
    #[serde(skip)]
    jpeg: Arc<[u8]>,
    #[serde(skip)]
    thumbnail_data_url: Arc<str>,
}

impl Picture {
    pub fn width_px(&self) -> u32 {
        self.width_px
    }

    pub fn height_px(&self) -> u32 {
        self.height_px
    }

    /// The JPEG file's bytes (empty when the picture was read back from JSON).
    pub fn jpeg(&self) -> &[u8] {
        &self.jpeg
    }

    /// The JPEG's size in bytes (kept when the picture is read back from JSON).
    pub fn encoded_bytes(&self) -> usize {
        self.encoded_bytes
    }

    /// The picture as the provider takes it: `data:image/jpeg;base64,…`.
    pub fn data_url(&self) -> String {
        data_url(&self.jpeg)
    }

    /// A small JPEG of it, as a data URL (empty when read back from JSON).
    pub fn thumbnail_data_url(&self) -> &str {
        &self.thumbnail_data_url
    }
}

impl std::fmt::Debug for Picture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Picture({}×{} px, {} bytes of JPEG)",
            self.width_px, self.height_px, self.encoded_bytes
        )
    }
}

/// What [`prepare`] made, and what it started from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub picture: Picture,
    /// The source's format, as the user would name it ("PNG").
    pub source_format: &'static str,
    /// The source's size in pixels, upright.
    pub source_width_px: u32,
    pub source_height_px: u32,
}

/// Why a source cannot be shown to the model. Every case has one answer for the user: choose
/// another picture; the message says what was wrong with this one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PictureError {
    #[error("the file is empty")]
    Empty,
    #[error("the file is {bytes} bytes; a picture is read up to {max_bytes} bytes")]
    TooLarge { bytes: usize, max_bytes: usize },
    #[error("it is not a picture Walkie reads ({READABLE_FORMATS})")]
    NotAPicture,
    #[error("the {format} could not be read: {reason}")]
    Unreadable {
        format: &'static str,
        reason: String,
    },
    #[error(
        "the picture is {width_px}×{height_px} pixels; Walkie reads up to {max_side_px} a side"
    )]
    TooManyPixels {
        width_px: u32,
        height_px: u32,
        max_side_px: u32,
    },
    #[error(
        "the picture is {width_px}×{height_px} pixels ({} megapixels); Walkie reads pictures of \
         up to {} megapixels: attach a smaller copy",
        (u64::from(*width_px) * u64::from(*height_px)).div_ceil(1_000_000),
        max_pixels / 1_000_000
    )]
    TooManyMegapixels {
        width_px: u32,
        height_px: u32,
        max_pixels: u64,
    },
    #[error("the picture cannot be made to fit in {max_bytes} bytes")]
    CannotFit { max_bytes: usize },
}

/// Makes `source` (a file's bytes, as read) fit to send; see the module docs.
pub fn prepare(source: &[u8], limits: &PictureLimits) -> Result<Prepared, PictureError> {
    if source.is_empty() {
        return Err(PictureError::Empty);
    }
    if source.len() > limits.max_source_bytes {
        return Err(PictureError::TooLarge {
            bytes: source.len(),
            max_bytes: limits.max_source_bytes,
        });
    }
    let reader = || {
        ImageReader::new(Cursor::new(source))
            .with_guessed_format()
            .expect("reading from an in-memory cursor cannot fail")
    };
    let format = reader().format().ok_or(PictureError::NotAPicture)?;
    let format_name = readable_format_name(format).ok_or(PictureError::NotAPicture)?;
    let unreadable = |error: image::ImageError| PictureError::Unreadable {
        format: format_name,
        reason: error.to_string(),
    };
    // The size is in the header: a source too large is refused before anything is decoded.
    let (width_px, height_px) = reader().into_dimensions().map_err(unreadable)?;
    let too_many_pixels = PictureError::TooManyPixels {
        width_px,
        height_px,
        max_side_px: limits.max_source_side_px,
    };
    if width_px.max(height_px) > limits.max_source_side_px {
        return Err(too_many_pixels);
    }
    if u64::from(width_px) * u64::from(height_px) > limits.max_source_pixels {
        return Err(PictureError::TooManyMegapixels {
            width_px,
            height_px,
            max_pixels: limits.max_source_pixels,
        });
    }
    let mut decoder_limits = Limits::default();
    decoder_limits.max_image_width = Some(limits.max_source_side_px);
    decoder_limits.max_image_height = Some(limits.max_source_side_px);
    // For the decoders that keep it: the pixels at 4 bytes each, and as much again for their
    // working buffers.
    decoder_limits.max_alloc = Some(limits.max_source_pixels.saturating_mul(8));
    let mut reader = reader();
    reader.limits(decoder_limits);
    let decoded = |error: image::ImageError| match error {
        image::ImageError::Limits(_) => too_many_pixels.clone(),
        other => unreadable(other),
    };
    let mut decoder = reader.into_decoder().map_err(decoded)?;
    let orientation = decoder.orientation().map_err(decoded)?;
    let mut image = DynamicImage::from_decoder(decoder).map_err(decoded)?;
    image.apply_orientation(orientation);
    fit(&image, format_name, limits)
}

/// Makes pixels (a screen capture: `width_px` × `height_px`, RGBA, row by row) fit to send,
/// as [`prepare`] does a file.
pub fn prepare_pixels(
    width_px: u32,
    height_px: u32,
    rgba: Vec<u8>,
    limits: &PictureLimits,
) -> Result<Prepared, PictureError> {
    if width_px.max(height_px) > limits.max_source_side_px {
        return Err(PictureError::TooManyPixels {
            width_px,
            height_px,
            max_side_px: limits.max_source_side_px,
        });
    }
    let length = rgba.len();
    let image = RgbaImage::from_raw(width_px, height_px, rgba)
        .filter(|_| width_px > 0 && height_px > 0)
        .ok_or_else(|| PictureError::Unreadable {
            format: CAPTURE_FORMAT,
            reason: format!("{length} bytes are not {width_px} × {height_px} RGBA pixels"),
        })?;
    fit(&DynamicImage::ImageRgba8(image), CAPTURE_FORMAT, limits)
}

/// The source format [`prepare_pixels`] reports.
pub const CAPTURE_FORMAT: &str = "screen capture";

/// The upright source, fitted (see the module docs).
fn fit(
    image: &DynamicImage,
    format_name: &'static str,
    limits: &PictureLimits,
) -> Result<Prepared, PictureError> {
    let upright = on_white(image);
    let (source_width_px, source_height_px) = upright.dimensions();

    let mut long_side_px = limits
        .max_long_side_px
        .min(source_width_px.max(source_height_px));
    loop {
        let sized = fit_within(&upright, long_side_px);
        for quality in QUALITY_LADDER {
            let jpeg = encode_jpeg(&sized, quality);
            if jpeg.len() <= limits.max_encoded_bytes {
                let thumbnail = fit_within(&sized, limits.thumbnail_long_side_px);
                let thumbnail_jpeg = encode_jpeg(&thumbnail, THUMBNAIL_QUALITY);
                let picture = Picture {
                    width_px: sized.width(),
                    height_px: sized.height(),
                    encoded_bytes: jpeg.len(),
                    jpeg: jpeg.into(),
                    thumbnail_data_url: data_url(&thumbnail_jpeg).into(),
                };
                return Ok(Prepared {
                    picture,
                    source_format: format_name,
                    source_width_px,
                    source_height_px,
                });
            }
        }
        let smaller = long_side_px * SHRINK_PERCENT / 100;
        if smaller < MIN_LONG_SIDE_PX {
            return Err(PictureError::CannotFit {
                max_bytes: limits.max_encoded_bytes,
            });
        }
        long_side_px = smaller;
    }
}

fn readable_format_name(format: ImageFormat) -> Option<&'static str> {
    Some(match format {
        ImageFormat::Png => "PNG",
        ImageFormat::Jpeg => "JPEG",
        ImageFormat::WebP => "WebP",
        ImageFormat::Gif => "GIF",
        ImageFormat::Bmp => "BMP",
        _ => return None,
    })
}

/// The picture with any transparency laid onto white, as RGB (a JPEG has no alpha, and a
/// transparent screenshot region would otherwise turn black).
fn on_white(image: &DynamicImage) -> image::RgbImage {
    if !image.color().has_alpha() {
        return image.to_rgb8();
    }
    let mut rgba: RgbaImage = image.to_rgba8();
    for pixel in rgba.pixels_mut() {
        let Rgba([red, green, blue, alpha]) = *pixel;
        let over_white = |channel: u8| {
            ((u32::from(channel) * u32::from(alpha) + 255 * u32::from(255 - alpha)) / 255) as u8
        };
        *pixel = Rgba([over_white(red), over_white(green), over_white(blue), 255]);
    }
    DynamicImage::ImageRgba8(rgba).to_rgb8()
}

/// The picture scaled down (never up) so its longer side is at most `long_side_px`.
fn fit_within(image: &image::RgbImage, long_side_px: u32) -> image::RgbImage {
    let (width_px, height_px) = image.dimensions();
    let long = width_px.max(height_px);
    if long <= long_side_px {
        return image.clone();
    }
    let scale = |side: u32| {
        ((u64::from(side) * u64::from(long_side_px)).div_ceil(u64::from(long)) as u32).max(1)
    };
    image::imageops::resize(
        image,
        scale(width_px),
        scale(height_px),
        FilterType::Triangle,
    )
}

fn encode_jpeg(image: &image::RgbImage, quality: u8) -> Vec<u8> {
    let mut jpeg = Vec::new();
    JpegEncoder::new_with_quality(&mut jpeg, quality)
        .encode_image(image)
        .expect("encoding an RGB image of at least 1×1 pixels into memory cannot fail");
    jpeg
}

fn data_url(jpeg: &[u8]) -> String {
    format!("data:{MEDIA_TYPE};base64,{}", BASE64.encode(jpeg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transparency_is_laid_onto_white() {
        let mut rgba = RgbaImage::new(2, 1);
        rgba.put_pixel(0, 0, Rgba([0, 0, 0, 0]));
        rgba.put_pixel(1, 0, Rgba([0, 0, 0, 255]));
        let rgb = on_white(&DynamicImage::ImageRgba8(rgba));
        assert_eq!(rgb.get_pixel(0, 0).0, [255, 255, 255]);
        assert_eq!(rgb.get_pixel(1, 0).0, [0, 0, 0]);
    }

    #[test]
    fn fitting_keeps_the_shape_and_never_enlarges() {
        let wide = image::RgbImage::new(4000, 1000);
        assert_eq!(fit_within(&wide, 1024).dimensions(), (1024, 256));
        let small = image::RgbImage::new(300, 200);
        assert_eq!(fit_within(&small, 1024).dimensions(), (300, 200));
    }
}
