//! The price table: each realtime model's prices per million tokens, what a conversation's
//! tokens are costed at. The providers' published prices come first, with the date each was
//! taken; the user edits them and adds models in Settings. A model is found by its name or a
//! dated snapshot of it (`gpt-realtime-2025-08-28`); a model with no row is not costed at all
//! rather than at a guess.

use serde::{Deserialize, Serialize};
use walkie_conversation::{Prices, Pricing};

/// One model's prices, in US dollars per million tokens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PriceRow {
    pub model: String,
    /// When they were taken from the provider's price list; empty for prices the user set.
    #[serde(default)]
    pub taken_on: String,
    #[serde(flatten)]
    pub prices: Prices,
}

/// Each of `prices` with the words the window uses for its column.
fn named_prices(prices: &Prices) -> [(&'static str, f64); 8] {
    [
        ("text in", prices.text_in),
        ("cached text in", prices.cached_text_in),
        ("text out", prices.text_out),
        ("audio in", prices.audio_in),
        ("cached audio in", prices.cached_audio_in),
        ("audio out", prices.audio_out),
        ("image in", prices.image_in),
        ("cached image in", prices.cached_image_in),
    ]
}

/// The most a price may be, per million tokens: far past any published one, so a slip of the
/// finger (a price per token typed per million) shows.
pub const MAX_PRICE_PER_MILLION: f64 = 10_000.0;

/// OpenAI's published prices (Azure OpenAI's global deployments bill the same).
pub fn published_prices() -> Vec<PriceRow> {
    vec![
        PriceRow {
            model: "gpt-realtime".to_owned(),
            taken_on: "2025-08-28".to_owned(),
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
        PriceRow {
            model: "gpt-realtime-mini".to_owned(),
            taken_on: "2025-10-06".to_owned(),
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
    ]
}

/// The prices `model` is costed at in `table`, if it has a row; `free` when the provider bills
/// nothing (the local one), so the cost is what the same tokens would cost.
pub fn pricing_for(model: &str, free: bool, table: &[PriceRow]) -> Option<Pricing> {
    let model = model.trim();
    let row = table.iter().find(|row| row.model == model).or_else(|| {
        table.iter().find(|row| {
            model
                .strip_prefix(row.model.as_str())
                .is_some_and(is_date_suffix)
        })
    })?;
    Some(Pricing {
        model: row.model.clone(),
        prices: row.prices,
        taken_on: row.taken_on.clone(),
        free,
    })
}

/// What is wrong with `table`, said for the user (the row, the model, the price), or `None`.
pub fn price_table_problem(table: &[PriceRow]) -> Option<String> {
    for (index, row) in table.iter().enumerate() {
        let row_number = index + 1;
        let model = row.model.trim();
        if model.is_empty() {
            return Some(format!(
                "row {row_number} has no model: enter its name, e.g. gpt-realtime, or remove the row"
            ));
        }
        if table[..index]
            .iter()
            .any(|earlier| earlier.model.trim() == model)
        {
            return Some(format!(
                "{model} has two rows: keep one (row {row_number} is the second)"
            ));
        }
        for (name, price) in named_prices(&row.prices) {
            if !(0.0..=MAX_PRICE_PER_MILLION).contains(&price) {
                return Some(format!(
                    "{model}'s {name} price must be 0 to {MAX_PRICE_PER_MILLION} dollars per \
                     million tokens"
                ));
            }
        }
    }
    None
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
        let table = published_prices();
        let priced = |model: &str| pricing_for(model, false, &table).map(|pricing| pricing.model);
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
    fn a_row_the_user_adds_prices_its_model_and_a_row_removed_prices_nothing() {
        let mut table = published_prices();
        table.push(PriceRow {
            model: "my-deployment".to_owned(),
            taken_on: String::new(),
            prices: Prices {
                audio_out: 50.0,
                ..published_prices()[0].prices
            },
        });
        let pricing = pricing_for("my-deployment", false, &table).expect("a row of its own");
        assert_eq!(pricing.prices.audio_out, 50.0);
        assert_eq!(pricing.taken_on, "");
        table.retain(|row| row.model != "gpt-realtime");
        assert_eq!(pricing_for("gpt-realtime", false, &table), None);
    }

    #[test]
    fn the_published_prices_are_the_models_own_and_the_demo_is_free() {
        let table = published_prices();
        let full = pricing_for("gpt-realtime", true, &table).expect("published");
        assert!(full.free);
        assert_eq!(full.prices.audio_out, 64.0);
        let mini = pricing_for("gpt-realtime-mini", false, &table).expect("published");
        assert!(mini.prices.audio_out < full.prices.audio_out);
        assert_eq!(price_table_problem(&table), None);
    }

    #[test]
    fn a_table_with_a_nameless_row_a_model_twice_or_a_price_out_of_range_says_which() {
        let mut nameless = published_prices();
        nameless[1].model = " ".to_owned();
        assert_eq!(
            price_table_problem(&nameless).as_deref(),
            Some("row 2 has no model: enter its name, e.g. gpt-realtime, or remove the row")
        );
        let mut twice = published_prices();
        twice[1].model = "gpt-realtime".to_owned();
        assert_eq!(
            price_table_problem(&twice).as_deref(),
            Some("gpt-realtime has two rows: keep one (row 2 is the second)")
        );
        for price in [-1.0, f64::NAN, 1e6] {
            let mut wrong = published_prices();
            wrong[0].prices.cached_audio_in = price;
            assert_eq!(
                price_table_problem(&wrong).as_deref(),
                Some(
                    "gpt-realtime's cached audio in price must be 0 to 10000 dollars per million \
                     tokens"
                ),
                "{price}"
            );
        }
    }
}
