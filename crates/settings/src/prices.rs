//! The price table: each realtime model's prices per million tokens, what a conversation's
//! tokens are costed at. The providers' published prices come first, with the date each was
//! taken; the user edits them and adds models in Settings. A model is found by its name or a
//! dated snapshot of it (`gpt-realtime-2025-08-28`); a model with no row is not costed at all
//! rather than at a guess.

use serde::{Deserialize, Serialize};
use walkie_conversation::{MinutePrices, Prices, Pricing, Rate};

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

/// The day the published rows below were read off the provider's model pages
/// (developers.openai.com/api/docs/models/<model>), each checked figure by figure. A saved table
/// older than this is brought up to date once ([`crate::settings::Settings::migrate`]).
pub const PUBLISHED_ON: &str = "2026-12-06";

/// Prices per million tokens as the provider's tables set them out.
#[allow(clippy::too_many_arguments)]
fn per_million(
    model: &str,
    taken_on: &str,
    [text_in, cached_text_in, text_out]: [f64; 3],
    [audio_in, cached_audio_in, audio_out]: [f64; 3],
    [image_in, cached_image_in]: [f64; 2],
) -> PriceRow {
    PriceRow {
        model: model.to_owned(),
        taken_on: taken_on.to_owned(),
        prices: Prices {
            text_in,
            cached_text_in,
            text_out,
            audio_in,
            cached_audio_in,
            audio_out,
            image_in,
            cached_image_in,
        },
    }
}

/// OpenAI's published prices per million tokens (Azure OpenAI's global deployments bill the
/// same), from each model's page on developers.openai.com: the current models first, then
/// the two that shut down on 2027-01-20 (still billed until then).
pub fn published_prices() -> Vec<PriceRow> {
    vec![
        per_million(
            "gpt-realtime-2.1",
            PUBLISHED_ON,
            [4.0, 0.4, 24.0],
            [32.0, 0.4, 64.0],
            [5.0, 0.5],
        ),
        per_million(
            "gpt-realtime-2.1-mini",
            PUBLISHED_ON,
            [0.6, 0.06, 2.4],
            [10.0, 0.3, 20.0],
            [0.8, 0.08],
        ),
        per_million(
            "gpt-realtime-2",
            PUBLISHED_ON,
            [4.0, 0.4, 24.0],
            [32.0, 0.4, 64.0],
            [5.0, 0.5],
        ),
        per_million(
            "gpt-realtime-1.5",
            PUBLISHED_ON,
            [4.0, 0.4, 16.0],
            [32.0, 0.4, 64.0],
            [5.0, 0.5],
        ),
        per_million(
            "gpt-realtime",
            "2025-08-28",
            [4.0, 0.4, 16.0],
            [32.0, 0.4, 64.0],
            [5.0, 0.5],
        ),
        per_million(
            "gpt-realtime-mini",
            "2025-10-06",
            [0.6, 0.06, 2.4],
            [10.0, 0.3, 20.0],
            [0.8, 0.08],
        ),
    ]
}

/// One duration-billed model's prices, in US dollars per minute.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MinutePriceRow {
    pub model: String,
    /// When they were taken from the provider's price list; empty for prices the user set.
    #[serde(default)]
    pub taken_on: String,
    #[serde(flatten)]
    pub prices: MinutePrices,
}

/// OpenAI's published prices per minute: the transcription models billed by the duration of
/// the speech they hear, and GPT-Live billed by the session's time (a paused minute at its
/// standby price). gpt-live-1 has no row: its page gives no standby price.
pub fn published_minute_prices() -> Vec<MinutePriceRow> {
    let row = |model: &str, per_minute: f64, per_paused_minute: f64| MinutePriceRow {
        model: model.to_owned(),
        taken_on: PUBLISHED_ON.to_owned(),
        prices: MinutePrices {
            per_minute,
            per_paused_minute,
        },
    };
    vec![
        row("gpt-realtime-whisper", 0.017, 0.0),
        row("gpt-transcribe", 0.0045, 0.0),
        row("gpt-live-transcribe", 0.017, 0.0),
        row("gpt-live-1.1", 0.05, 0.02),
    ]
}

/// The most a price may be per minute: far past any published one.
pub const MAX_PRICE_PER_MINUTE: f64 = 100.0;

/// `model`'s row in `rows`: by its name, or a dated snapshot of it (`gpt-realtime-2025-08-28`).
fn row_for<'a, R>(model: &str, rows: &'a [R], name: impl Fn(&R) -> &str) -> Option<&'a R> {
    let model = model.trim();
    rows.iter().find(|row| name(row) == model).or_else(|| {
        rows.iter()
            .find(|row| model.strip_prefix(name(row)).is_some_and(is_date_suffix))
    })
}

/// The prices `model` is costed at in `table`, if it has a row; `free` when the provider bills
/// nothing (the local one), so the cost is what the same tokens would cost.
pub fn pricing_for(model: &str, free: bool, table: &[PriceRow]) -> Option<Pricing> {
    let row = row_for(model, table, |row| row.model.as_str())?;
    Some(Pricing {
        model: row.model.clone(),
        rate: Rate::PerMillionTokens(row.prices),
        taken_on: row.taken_on.clone(),
        free,
    })
}

/// The prices `model` is costed at: its row per minute (a model billed by duration: a
/// transcription model, a Live model), else its row per million tokens, else none.
pub fn model_pricing_for(
    model: &str,
    free: bool,
    minute_table: &[MinutePriceRow],
    table: &[PriceRow],
) -> Option<Pricing> {
    match row_for(model, minute_table, |row| row.model.as_str()) {
        Some(row) => Some(Pricing {
            model: row.model.clone(),
            rate: Rate::PerMinute(row.prices),
            taken_on: row.taken_on.clone(),
            free,
        }),
        None => pricing_for(model, free, table),
    }
}

/// A row of either price table: its model, and the day its prices were published (empty once
/// the user edited them).
pub trait PublishedRow {
    fn model(&self) -> &str;
    fn taken_on(&self) -> &str;
}

impl PublishedRow for PriceRow {
    fn model(&self) -> &str {
        &self.model
    }
    fn taken_on(&self) -> &str {
        &self.taken_on
    }
}

impl PublishedRow for MinutePriceRow {
    fn model(&self) -> &str {
        &self.model
    }
    fn taken_on(&self) -> &str {
        &self.taken_on
    }
}

/// Brings a table saved on `saved_on` (the [`PUBLISHED_ON`] it was last brought up to, empty
/// for a table from before there was one) up to today's published rows: a published row the
/// user never edited (it still carries its date) takes the new prices, and a model published
/// since is added. Rows the user edited or added, and rows they removed, stay as they are.
pub fn bring_up_to_date<R: PublishedRow + Clone>(
    rows: &mut Vec<R>,
    published: &[R],
    saved_on: &str,
) -> bool {
    let mut changed = false;
    for row in published {
        let (model, taken_on) = (row.model(), row.taken_on());
        match rows.iter_mut().find(|mine| mine.model() == model) {
            Some(mine) => {
                let mine_taken_on = mine.taken_on();
                if !mine_taken_on.is_empty() && mine_taken_on != taken_on {
                    *mine = row.clone();
                    changed = true;
                }
            }
            // Published after the table was saved: new to this user, not removed by them.
            None if taken_on > saved_on => {
                rows.push(row.clone());
                changed = true;
            }
            None => {}
        }
    }
    changed
}

/// What is wrong with `table`, said for the user (the row, the model, the price), or `None`.
pub fn price_table_problem(table: &[PriceRow]) -> Option<String> {
    let models: Vec<&str> = table.iter().map(|row| row.model.trim()).collect();
    table.iter().enumerate().find_map(|(index, row)| {
        model_problem(&models, index).or_else(|| {
            named_prices(&row.prices)
                .into_iter()
                .find_map(|(name, price)| {
                    (!(0.0..=MAX_PRICE_PER_MILLION).contains(&price)).then(|| {
                        format!(
                            "{}'s {name} price must be 0 to {MAX_PRICE_PER_MILLION} dollars per \
                         million tokens",
                            models[index]
                        )
                    })
                })
        })
    })
}

/// What is wrong with the table of prices per minute, said for the user, or `None`.
pub fn minute_price_table_problem(table: &[MinutePriceRow]) -> Option<String> {
    let models: Vec<&str> = table.iter().map(|row| row.model.trim()).collect();
    table.iter().enumerate().find_map(|(index, row)| {
        model_problem(&models, index).or_else(|| {
            [
                ("per minute", row.prices.per_minute),
                ("per paused minute", row.prices.per_paused_minute),
            ]
            .into_iter()
            .find_map(|(name, price)| {
                (!(0.0..=MAX_PRICE_PER_MINUTE).contains(&price)).then(|| {
                    format!(
                        "{}'s {name} price must be 0 to {MAX_PRICE_PER_MINUTE} dollars",
                        models[index]
                    )
                })
            })
        })
    })
}

/// A row with no model, or a model's second row.
fn model_problem(models: &[&str], index: usize) -> Option<String> {
    let row_number = index + 1;
    let model = models[index];
    if model.is_empty() {
        return Some(format!(
            "row {row_number} has no model: enter its name, e.g. gpt-realtime-2.1, or remove the row"
        ));
    }
    models[..index]
        .contains(&model)
        .then(|| format!("{model} has two rows: keep one (row {row_number} is the second)"))
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

    fn tokens_of(pricing: &Pricing) -> Prices {
        match pricing.rate {
            Rate::PerMillionTokens(prices) => prices,
            Rate::PerMinute(_) => panic!("{} is priced per minute", pricing.model),
        }
    }

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
        assert_eq!(
            priced("gpt-realtime-2.1").as_deref(),
            Some("gpt-realtime-2.1")
        );
        assert_eq!(
            priced("gpt-realtime-2.1-mini").as_deref(),
            Some("gpt-realtime-2.1-mini")
        );
        assert_eq!(priced("gpt-realtime-mini-x"), None);
        assert_eq!(priced("my-deployment"), None);
    }

    #[test]
    fn every_current_realtime_model_has_a_published_row_and_the_defaults_are_priced() {
        let table = published_prices();
        for model in walkie_openai::names::REALTIME_MODELS {
            let current = walkie_openai::names::deprecation(model).is_none();
            let realtime = model.starts_with("gpt-realtime");
            if current && realtime {
                assert!(
                    pricing_for(model, false, &table).is_some(),
                    "{model} has no row"
                );
            }
        }
        let minutes = published_minute_prices();
        let whisper = model_pricing_for(
            walkie_openai::names::DEFAULT_TRANSCRIPTION_MODEL,
            false,
            &minutes,
            &table,
        )
        .expect("the default transcription model is priced");
        assert_eq!(
            whisper.rate,
            Rate::PerMinute(MinutePrices {
                per_minute: 0.017,
                per_paused_minute: 0.0
            })
        );
        let full = tokens_of(&pricing_for("gpt-realtime-2.1", false, &table).unwrap());
        let mini = tokens_of(&pricing_for("gpt-realtime-2.1-mini", false, &table).unwrap());
        assert_eq!(full.audio_out, 64.0);
        assert_eq!(full.text_out, 24.0);
        assert_eq!(mini.audio_in, 10.0);
        assert_eq!(price_table_problem(&table), None);
        assert_eq!(minute_price_table_problem(&minutes), None);
        let live = model_pricing_for("gpt-live-1.1", false, &minutes, &table)
            .expect("GPT-Live 1.1 is priced per minute");
        assert_eq!(
            live.rate,
            Rate::PerMinute(MinutePrices {
                per_minute: 0.05,
                per_paused_minute: 0.02
            })
        );
        assert_eq!(
            model_pricing_for("gpt-realtime-2.1", false, &minutes, &table).map(|p| p.rate),
            pricing_for("gpt-realtime-2.1", false, &table).map(|p| p.rate),
            "a model with no row per minute is priced by the token"
        );
    }

    #[test]
    fn a_transcription_model_without_a_minute_row_is_priced_by_its_token_row_or_not_at_all() {
        let mut table = published_prices();
        table.push(PriceRow {
            model: "gpt-4o-mini-transcribe".to_owned(),
            taken_on: String::new(),
            prices: Prices {
                audio_in: 3.0,
                ..Prices::default()
            },
        });
        let pricing = model_pricing_for("gpt-4o-mini-transcribe", true, &[], &table).unwrap();
        assert_eq!(tokens_of(&pricing).audio_in, 3.0);
        assert!(pricing.free);
        assert_eq!(model_pricing_for("whisper-1", false, &[], &table), None);
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
        assert_eq!(tokens_of(&pricing).audio_out, 50.0);
        assert_eq!(pricing.taken_on, "");
        table.retain(|row| row.model != "gpt-realtime");
        assert_eq!(pricing_for("gpt-realtime", false, &table), None);
    }

    #[test]
    fn a_table_saved_before_the_new_models_gains_their_rows_and_keeps_what_the_user_did() {
        // As a settings file of 2025 holds it: the two rows of then, one edited by the user.
        let mut saved: Vec<PriceRow> = published_prices()
            .into_iter()
            .filter(|row| row.model == "gpt-realtime" || row.model == "gpt-realtime-mini")
            .collect();
        saved[1].prices.audio_out = 18.0;
        saved[1].taken_on = String::new();
        saved.push(PriceRow {
            model: "my-deployment".to_owned(),
            taken_on: String::new(),
            prices: Prices::default(),
        });
        assert!(bring_up_to_date(&mut saved, &published_prices(), ""));
        let models: Vec<&str> = saved.iter().map(|row| row.model.as_str()).collect();
        assert_eq!(
            models,
            [
                "gpt-realtime",
                "gpt-realtime-mini",
                "my-deployment",
                "gpt-realtime-2.1",
                "gpt-realtime-2.1-mini",
                "gpt-realtime-2",
                "gpt-realtime-1.5"
            ]
        );
        assert_eq!(
            saved[1].prices.audio_out, 18.0,
            "the user's own price stays"
        );
        // Brought up to date, nothing more changes; a row removed since stays removed.
        saved.retain(|row| row.model != "gpt-realtime-2");
        assert!(!bring_up_to_date(
            &mut saved,
            &published_prices(),
            PUBLISHED_ON
        ));
        assert!(!saved.iter().any(|row| row.model == "gpt-realtime-2"));
    }

    #[test]
    fn a_table_with_a_nameless_row_a_model_twice_or_a_price_out_of_range_says_which() {
        let mut nameless = published_prices();
        nameless[1].model = " ".to_owned();
        assert_eq!(
            price_table_problem(&nameless).as_deref(),
            Some("row 2 has no model: enter its name, e.g. gpt-realtime-2.1, or remove the row")
        );
        let mut twice = published_prices();
        twice[1].model = "gpt-realtime-2.1".to_owned();
        assert_eq!(
            price_table_problem(&twice).as_deref(),
            Some("gpt-realtime-2.1 has two rows: keep one (row 2 is the second)")
        );
        for price in [-1.0, f64::NAN, 1e6] {
            let mut wrong = published_prices();
            wrong[0].prices.cached_audio_in = price;
            assert_eq!(
                price_table_problem(&wrong).as_deref(),
                Some(
                    "gpt-realtime-2.1's cached audio in price must be 0 to 10000 dollars per \
                     million tokens"
                ),
                "{price}"
            );
            let mut wrong = published_minute_prices();
            wrong[0].prices.per_minute = price;
            assert_eq!(
                minute_price_table_problem(&wrong).as_deref(),
                Some("gpt-realtime-whisper's per minute price must be 0 to 100 dollars"),
                "{price}"
            );
        }
    }
}
