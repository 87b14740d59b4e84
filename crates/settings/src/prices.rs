//! The providers' published prices of the realtime models, per million tokens, with the date
//! each was taken: what a conversation's tokens are costed at. A model is found by its name or
//! a dated snapshot of it (`gpt-realtime-2025-08-28`); an unknown one is not costed at all
//! rather than at a guess.

use walkie_conversation::{Prices, Pricing};

/// A model's prices as its provider published them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PublishedPrices {
    pub model: &'static str,
    /// When they were taken from the provider's price list.
    pub taken_on: &'static str,
    pub prices: Prices,
}

/// OpenAI's prices (Azure OpenAI's global deployments bill the same).
pub const PUBLISHED_PRICES: &[PublishedPrices] = &[
    PublishedPrices {
        model: "gpt-realtime",
        taken_on: "2025-08-28",
        prices: Prices {
            text_in: 4.0,
            cached_text_in: 0.4,
            text_out: 16.0,
            audio_in: 32.0,
            cached_audio_in: 0.4,
            audio_out: 64.0,
            image_in: 5.0,
            cached_image_in: 0.5,
        },
    },
    PublishedPrices {
        model: "gpt-realtime-mini",
        taken_on: "2025-10-06",
        prices: Prices {
            text_in: 0.6,
            cached_text_in: 0.06,
            text_out: 2.4,
            audio_in: 10.0,
            cached_audio_in: 0.3,
            audio_out: 20.0,
            image_in: 0.8,
            cached_image_in: 0.08,
        },
    },
];

/// The prices `model` is costed at, if published; `free` when the provider bills nothing (the
/// local one), so the cost is what the same tokens would cost.
pub fn pricing_for(model: &str, free: bool) -> Option<Pricing> {
    let model = model.trim();
    PUBLISHED_PRICES
        .iter()
        .find(|published| {
            model == published.model
                || model
                    .strip_prefix(published.model)
                    .is_some_and(is_date_suffix)
        })
        .map(|published| Pricing {
            model: published.model.to_owned(),
            prices: published.prices,
            taken_on: published.taken_on.to_owned(),
            free,
        })
}

/// `-YYYY-MM-DD`: a dated snapshot's suffix.
fn is_date_suffix(suffix: &str) -> bool {
    let bytes = suffix.as_bytes();
    bytes.len() == 11
        && bytes.iter().enumerate().all(|(index, byte)| match index {
            0 | 5 | 8 => *byte == b'-',
            _ => byte.is_ascii_digit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_is_priced_by_its_name_or_a_dated_snapshot_and_never_by_a_lookalike() {
        let priced = |model: &str| pricing_for(model, false).map(|pricing| pricing.model);
        assert_eq!(priced("gpt-realtime").as_deref(), Some("gpt-realtime"));
        assert_eq!(
            priced(" gpt-realtime-2025-08-28").as_deref(),
            Some("gpt-realtime")
        );
        assert_eq!(
            priced("gpt-realtime-mini-2025-10-06").as_deref(),
            Some("gpt-realtime-mini")
        );
        assert_eq!(priced("gpt-realtime-1.5"), None, "another model");
        assert_eq!(priced("gpt-realtime-mini-x"), None);
        assert_eq!(priced("my-deployment"), None);
    }

    #[test]
    fn the_published_prices_are_the_models_own() {
        let full = pricing_for("gpt-realtime", true).expect("published");
        assert!(full.free);
        assert_eq!(full.prices.audio_out, 64.0);
        let mini = pricing_for("gpt-realtime-mini", false).expect("published");
        assert!(mini.prices.audio_out < full.prices.audio_out);
    }
}
