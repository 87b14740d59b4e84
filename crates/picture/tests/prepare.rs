//! A picture from the user's disk, clipboard or screen is made fit for one data-channel message,
//! upright, and with a thumbnail; what cannot be read says why.

use std::io::Cursor;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use image::{DynamicImage, ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};
use walkie_picture::{CAPTURE_FORMAT, PictureError, PictureLimits, prepare, prepare_pixels};

/// A photo-like picture: smooth gradients under sensor noise (noise is what JPEG cannot
/// squeeze, so this is the hard case for the size cap). A fixed xorshift keeps it the same.
fn noisy_photo(width_px: u32, height_px: u32) -> RgbImage {
    let mut state: u32 = 0x9E37_79B9;
    RgbImage::from_fn(width_px, height_px, |x, y| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let noise = (state % 48) as u8;
        Rgb([
            ((x * 200 / width_px) as u8).saturating_add(noise),
            ((y * 200 / height_px) as u8).saturating_add(noise),
            (((x + y) * 100 / (width_px + height_px)) as u8).saturating_add(noise),
        ])
    })
}

fn encoded(image: DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut bytes = Vec::new();
    image
        .write_to(&mut Cursor::new(&mut bytes), format)
        .unwrap();
    bytes
}

fn decoded_jpeg(bytes: &[u8]) -> DynamicImage {
    image::load_from_memory_with_format(bytes, ImageFormat::Jpeg).expect("the result is a JPEG")
}

/// A JPEG with an EXIF APP1 segment whose Orientation tag is `orientation` (6: the camera was
/// turned a quarter clockwise, so the stored pixels must be turned back to stand upright).
fn jpeg_with_exif_orientation(image: &RgbImage, orientation: u16) -> Vec<u8> {
    let jpeg = encoded(DynamicImage::ImageRgb8(image.clone()), ImageFormat::Jpeg);
    let mut tiff = Vec::new();
    tiff.extend_from_slice(b"MM\x00\x2a\x00\x00\x00\x08"); // big-endian TIFF, IFD at 8
    tiff.extend_from_slice(&1u16.to_be_bytes()); // one entry
    tiff.extend_from_slice(&0x0112u16.to_be_bytes()); // Orientation
    tiff.extend_from_slice(&3u16.to_be_bytes()); // SHORT
    tiff.extend_from_slice(&1u32.to_be_bytes()); // count
    tiff.extend_from_slice(&orientation.to_be_bytes());
    tiff.extend_from_slice(&[0, 0]); // value padding
    tiff.extend_from_slice(&0u32.to_be_bytes()); // no next IFD
    let mut app1 = b"Exif\x00\x00".to_vec();
    app1.extend_from_slice(&tiff);
    let mut out = jpeg[..2].to_vec(); // SOI
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&((app1.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(&app1);
    out.extend_from_slice(&jpeg[2..]);
    out
}

#[test]
fn a_large_photo_is_downscaled_and_compressed_to_fit_one_data_channel_message() {
    let limits = PictureLimits::default();
    let source = encoded(
        DynamicImage::ImageRgb8(noisy_photo(4000, 3000)),
        ImageFormat::Png,
    );

    let prepared = prepare(&source, &limits).unwrap();

    assert_eq!(prepared.source_format, "PNG");
    assert_eq!(
        (prepared.source_width_px, prepared.source_height_px),
        (4000, 3000)
    );
    let picture = &prepared.picture;
    assert!(picture.width_px().max(picture.height_px()) <= limits.max_long_side_px);
    let ratio = f64::from(picture.width_px()) / f64::from(picture.height_px());
    assert!((ratio - 4.0 / 3.0).abs() < 0.01, "shape kept: {ratio}");
    assert!(picture.jpeg().len() <= limits.max_encoded_bytes);
    assert_eq!(picture.encoded_bytes(), picture.jpeg().len());
    let sent = decoded_jpeg(picture.jpeg());
    assert_eq!(
        (sent.width(), sent.height()),
        (picture.width_px(), picture.height_px())
    );
    // The data URL with the event around it fits RFC 8841's default 64 KiB message.
    assert!(picture.data_url().len() + 1_024 <= 64 * 1024);
}

#[test]
fn the_data_url_carries_the_jpeg_itself() {
    let source = encoded(
        DynamicImage::ImageRgb8(noisy_photo(300, 200)),
        ImageFormat::WebP,
    );
    let prepared = prepare(&source, &PictureLimits::default()).unwrap();

    assert_eq!(prepared.source_format, "WebP");
    let url = prepared.picture.data_url();
    let base64 = url
        .strip_prefix("data:image/jpeg;base64,")
        .expect("a JPEG data URL");
    assert_eq!(BASE64.decode(base64).unwrap(), prepared.picture.jpeg());
    // A small picture is not enlarged.
    assert_eq!(
        (prepared.picture.width_px(), prepared.picture.height_px()),
        (300, 200)
    );
}

#[test]
fn the_thumbnail_is_a_small_jpeg_of_the_same_shape() {
    let source = encoded(
        DynamicImage::ImageRgb8(noisy_photo(1200, 600)),
        ImageFormat::Png,
    );
    let prepared = prepare(&source, &PictureLimits::default()).unwrap();

    let url = prepared.picture.thumbnail_data_url();
    let base64 = url
        .strip_prefix("data:image/jpeg;base64,")
        .expect("a JPEG data URL");
    let thumbnail = decoded_jpeg(&BASE64.decode(base64).unwrap());
    assert_eq!((thumbnail.width(), thumbnail.height()), (240, 120));
}

#[test]
fn a_photo_taken_with_the_camera_turned_is_stood_upright() {
    // Stored 400 wide and 200 high, tagged "turned a quarter clockwise": upright it is 200×400.
    let mut stored = RgbImage::from_pixel(400, 200, Rgb([255, 255, 255]));
    for y in 0..200 {
        for x in 0..40 {
            stored.put_pixel(x, y, Rgb([0, 0, 0])); // a black band on the stored left edge
        }
    }
    let source = jpeg_with_exif_orientation(&stored, 6);

    let prepared = prepare(&source, &PictureLimits::default()).unwrap();

    assert_eq!(
        (prepared.picture.width_px(), prepared.picture.height_px()),
        (200, 400)
    );
    // Turned a quarter clockwise, the stored left edge becomes the top.
    let upright = decoded_jpeg(prepared.picture.jpeg()).to_rgb8();
    assert!(
        upright.get_pixel(100, 5).0.iter().all(|&c| c < 60),
        "top is black"
    );
    assert!(
        upright.get_pixel(100, 395).0.iter().all(|&c| c > 200),
        "bottom is white"
    );
}

#[test]
fn a_transparent_screenshot_is_laid_onto_white_not_black() {
    let clear = RgbaImage::from_pixel(64, 64, Rgba([0, 0, 0, 0]));
    let source = encoded(DynamicImage::ImageRgba8(clear), ImageFormat::Png);

    let prepared = prepare(&source, &PictureLimits::default()).unwrap();

    let pixel = decoded_jpeg(prepared.picture.jpeg())
        .to_rgb8()
        .get_pixel(32, 32)
        .0;
    assert!(pixel.iter().all(|&c| c > 245), "white, not {pixel:?}");
}

#[test]
fn what_is_not_a_readable_picture_says_what_was_wrong() {
    let limits = PictureLimits::default();
    assert_eq!(prepare(b"", &limits), Err(PictureError::Empty));
    assert_eq!(
        prepare(b"Dear diary, today I attached a text file.", &limits),
        Err(PictureError::NotAPicture)
    );
    let tiff = b"II*\x00\x08\x00\x00\x00\x00\x00";
    assert_eq!(prepare(tiff, &limits), Err(PictureError::NotAPicture));

    let png = encoded(
        DynamicImage::ImageRgb8(noisy_photo(64, 64)),
        ImageFormat::Png,
    );
    let truncated = &png[..png.len() / 2];
    match prepare(truncated, &limits) {
        Err(error @ PictureError::Unreadable { format: "PNG", .. }) => {
            assert!(error.to_string().starts_with("the PNG could not be read: "));
        }
        other => panic!("a truncated PNG is unreadable, not {other:?}"),
    }
}

#[test]
fn a_source_past_the_limits_is_refused_before_it_is_decoded() {
    let png = encoded(
        DynamicImage::ImageRgb8(noisy_photo(200, 100)),
        ImageFormat::Png,
    );
    let small_files = PictureLimits {
        max_source_bytes: 100,
        ..PictureLimits::default()
    };
    assert_eq!(
        prepare(&png, &small_files),
        Err(PictureError::TooLarge {
            bytes: png.len(),
            max_bytes: 100
        })
    );
    let small_sides = PictureLimits {
        max_source_side_px: 150,
        ..PictureLimits::default()
    };
    assert_eq!(
        prepare(&png, &small_sides),
        Err(PictureError::TooManyPixels {
            width_px: 200,
            height_px: 100,
            max_side_px: 150
        })
    );
}

#[test]
fn a_cap_no_picture_can_meet_is_reported_not_looped_on() {
    let png = encoded(
        DynamicImage::ImageRgb8(noisy_photo(800, 600)),
        ImageFormat::Png,
    );
    let tiny = PictureLimits {
        max_encoded_bytes: 200,
        ..PictureLimits::default()
    };
    assert_eq!(
        prepare(&png, &tiny),
        Err(PictureError::CannotFit { max_bytes: 200 })
    );
}

#[test]
fn as_json_a_picture_is_described_not_carried() {
    let png = encoded(
        DynamicImage::ImageRgb8(noisy_photo(120, 80)),
        ImageFormat::Png,
    );
    let picture = prepare(&png, &PictureLimits::default()).unwrap().picture;

    let json = serde_json::to_value(&picture).unwrap();

    assert_eq!(
        json,
        serde_json::json!({"widthPx": 120, "heightPx": 80, "encodedBytes": picture.jpeg().len()})
    );
}

#[test]
fn a_screen_capture_is_prepared_from_its_pixels() {
    let (width_px, height_px) = (1920u32, 1080u32);
    let rgba: Vec<u8> = noisy_photo(width_px, height_px)
        .pixels()
        .flat_map(|pixel| [pixel.0[0], pixel.0[1], pixel.0[2], 255])
        .collect();

    let prepared = prepare_pixels(width_px, height_px, rgba, &PictureLimits::default()).unwrap();

    assert_eq!(prepared.source_format, CAPTURE_FORMAT);
    assert_eq!(
        (prepared.picture.width_px(), prepared.picture.height_px()),
        (1024, 576)
    );
    assert!(prepared.picture.jpeg().len() <= PictureLimits::default().max_encoded_bytes);
}

#[test]
fn pixels_that_do_not_make_the_size_given_are_refused() {
    let error = prepare_pixels(4, 4, vec![0; 15], &PictureLimits::default()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the screen capture could not be read: 15 bytes are not 4 × 4 RGBA pixels"
    );
    assert!(prepare_pixels(0, 0, Vec::new(), &PictureLimits::default()).is_err());
}

/// A JPEG whose header claims `width_px` × `height_px` over the pixels of a 16 × 16 one: what
/// a decompression bomb looks like to a reader of headers.
fn jpeg_claiming(width_px: u16, height_px: u16) -> Vec<u8> {
    let mut jpeg = encoded(
        DynamicImage::ImageRgb8(noisy_photo(16, 16)),
        ImageFormat::Jpeg,
    );
    // The frame header (SOF0: FF C0), then its length, precision, height and width.
    let frame = jpeg
        .windows(2)
        .position(|marker| marker == [0xFF, 0xC0])
        .expect("a baseline JPEG has a frame header");
    jpeg[frame + 5..frame + 7].copy_from_slice(&height_px.to_be_bytes());
    jpeg[frame + 7..frame + 9].copy_from_slice(&width_px.to_be_bytes());
    jpeg
}

#[test]
fn a_small_file_claiming_too_many_pixels_is_refused_before_it_is_decoded() {
    let bomb = jpeg_claiming(16_000, 16_000);
    assert!(bomb.len() < 4_096, "a small file: {} bytes", bomb.len());
    let refused = prepare(&bomb, &PictureLimits::default());
    assert_eq!(
        refused,
        Err(PictureError::TooManyMegapixels {
            width_px: 16_000,
            height_px: 16_000,
            max_pixels: 50_000_000
        })
    );
    let sentence = refused.expect_err("refused").to_string();
    assert_eq!(
        sentence,
        "the picture is 16000×16000 pixels (256 megapixels); Walkie reads pictures of up to 50 \
         megapixels: attach a smaller copy"
    );
    // A phone's 48 megapixels are read (its header alone is checked here).
    let phone = jpeg_claiming(8_000, 6_000);
    assert!(
        !matches!(
            prepare(&phone, &PictureLimits::default()),
            Err(PictureError::TooManyMegapixels { .. })
        ),
        "48 megapixels are within the bound"
    );
}
