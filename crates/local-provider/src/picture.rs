//! A user's `input_image`, held to the GA reference: `image_url` is a data URL of base64 image
//! bytes (`data:image/jpeg;base64,…`), PNG or JPEG (the formats the API supports), whose bytes
//! are the picture the media type names. The
//! local provider cannot see, but it reads the picture's size with the `image` crate (not with
//! Walkie's own picture code, which it is here to check), says it in its reply, and bills it as
//! OpenAI's vision guide counts image tokens.

use std::io::Cursor;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use image::{ImageFormat, ImageReader};
use walkie_openai::ImageDetail;

/// The media types a data URL may name, and the format its bytes must be.
const MEDIA_TYPES: [(&str, ImageFormat); 2] = [
    ("image/png", ImageFormat::Png),
    ("image/jpeg", ImageFormat::Jpeg),
];

/// A picture a user message carried, as the provider read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceivedPicture {
    pub media_type: String,
    pub width_px: u32,
    pub height_px: u32,
    /// The decoded bytes' length.
    pub bytes: usize,
    pub detail: Option<ImageDetail>,
}

/// Reads `image_url` as the picture it must be; the error says what is wrong, in the words of
/// an `invalid_value` error for the field `field`.
pub(crate) fn read_input_image(
    image_url: &str,
    detail: Option<ImageDetail>,
    field: &str,
) -> Result<ReceivedPicture, String> {
    let invalid = |what: &str| format!("Invalid '{field}': {what}");
    let rest = image_url
        .strip_prefix("data:")
        .ok_or_else(|| invalid("expected a base64-encoded data URL (data:image/…;base64,…)."))?;
    let (media_type, data) = rest
        .split_once(";base64,")
        .ok_or_else(|| invalid("expected a base64-encoded data URL (data:image/…;base64,…)."))?;
    let format = MEDIA_TYPES
        .iter()
        .find(|(name, _)| *name == media_type)
        .map(|(_, format)| *format)
        .ok_or_else(|| {
            invalid(&format!(
                "unsupported media type '{media_type}'; expected image/png or image/jpeg."
            ))
        })?;
    let bytes = BASE64
        .decode(data)
        .map_err(|error| invalid(&format!("the data is not valid base64 ({error}).")))?;
    let reader = ImageReader::new(Cursor::new(&bytes))
        .with_guessed_format()
        .expect("reading from an in-memory cursor cannot fail");
    if reader.format() != Some(format) {
        return Err(invalid(&format!("the data is not {media_type}.")));
    }
    let (width_px, height_px) = reader
        .into_dimensions()
        .map_err(|error| invalid(&format!("the {media_type} image cannot be read ({error}).")))?;
    Ok(ReceivedPicture {
        media_type: media_type.to_owned(),
        width_px,
        height_px,
        bytes: bytes.len(),
        detail,
    })
}

/// Input tokens of a picture, as OpenAI's vision guide counts them for GPT-4o: 85 at low
/// detail; otherwise the picture is fitted within 2048 × 2048, then its short side to 768, and
/// each 512-pixel tile costs 170 more.
pub(crate) fn image_tokens(picture: &ReceivedPicture) -> u64 {
    const BASE: u64 = 85;
    if picture.detail == Some(ImageDetail::Low) {
        return BASE;
    }
    let (mut width, mut height) = (f64::from(picture.width_px), f64::from(picture.height_px));
    let long = width.max(height);
    if long > 2048.0 {
        width *= 2048.0 / long;
        height *= 2048.0 / long;
    }
    let short = width.min(height);
    if short > 768.0 {
        width *= 768.0 / short;
        height *= 768.0 / short;
    }
    let tiles = (width / 512.0).ceil() as u64 * (height / 512.0).ceil() as u64;
    BASE + 170 * tiles
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width_px: u32, height_px: u32) -> Vec<u8> {
        let mut bytes = Vec::new();
        image::DynamicImage::new_rgb8(width_px, height_px)
            .write_to(&mut Cursor::new(&mut bytes), ImageFormat::Png)
            .unwrap();
        bytes
    }

    #[test]
    fn a_data_url_is_read_for_its_size() {
        let url = format!("data:image/png;base64,{}", BASE64.encode(png(30, 20)));
        let picture = read_input_image(&url, None, "item.content[0].image_url").unwrap();
        assert_eq!(
            (
                picture.media_type.as_str(),
                picture.width_px,
                picture.height_px
            ),
            ("image/png", 30, 20)
        );
    }

    #[test]
    fn what_is_not_the_picture_it_claims_is_refused_naming_the_field() {
        let field = "item.content[1].image_url";
        let png_bytes = BASE64.encode(png(4, 4));
        for (url, says) in [
            (
                "https://example.com/cat.png".to_owned(),
                "expected a base64-encoded data URL",
            ),
            (
                format!("data:image/tiff;base64,{png_bytes}"),
                "unsupported media type 'image/tiff'",
            ),
            (
                format!("data:image/webp;base64,{png_bytes}"),
                "unsupported media type 'image/webp'",
            ),
            (
                format!("data:image/jpeg;base64,{png_bytes}"),
                "the data is not image/jpeg",
            ),
            ("data:image/png;base64,@@@".to_owned(), "not valid base64"),
        ] {
            let error = read_input_image(&url, None, field).unwrap_err();
            assert!(
                error.starts_with("Invalid 'item.content[1].image_url': "),
                "{error}"
            );
            assert!(error.contains(says), "{url}: {error}");
        }
    }

    #[test]
    fn image_tokens_follow_the_vision_guide() {
        let picture = |width_px, height_px, detail| ReceivedPicture {
            media_type: "image/jpeg".to_owned(),
            width_px,
            height_px,
            bytes: 0,
            detail,
        };
        // The guide's examples: 1024 × 1024 high is 765 tokens; 2048 × 4096 is 1105; low is 85.
        assert_eq!(
            image_tokens(&picture(1024, 1024, Some(ImageDetail::High))),
            765
        );
        assert_eq!(image_tokens(&picture(2048, 4096, None)), 1105);
        assert_eq!(
            image_tokens(&picture(4096, 8192, Some(ImageDetail::Low))),
            85
        );
    }
}
