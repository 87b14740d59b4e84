//! What a conversation has spent: the tokens each `response.done` was billed and the user
//! speech each transcription was billed, summed over every call of the conversation, and
//! priced by the table of the model in use: per million tokens, or per minute for the models
//! billed by duration.
//!
//! Why here: the user should see the running cost without adding anything up, and ending a
//! call on a spent budget is a decision about the conversation, which is the machine's.

use walkie_openai::{TranscriptionUsage, Usage};
pub use walkie_session::TokenTotals;

/// A model's prices in US dollars per million tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Prices {
    pub text_in: f64,
    pub cached_text_in: f64,
    pub text_out: f64,
    pub audio_in: f64,
    pub cached_audio_in: f64,
    pub audio_out: f64,
    pub image_in: f64,
    pub cached_image_in: f64,
}

impl Prices {
    /// What `tokens` cost, in US dollars: cached input at the cached price, the rest of the
    /// input at the full one.
    pub fn cost_usd(&self, tokens: &TokenTotals) -> f64 {
        let priced = |count: u64, per_million: f64| count as f64 * per_million / 1_000_000.0;
        let fresh = |all: u64, cached: u64| all.saturating_sub(cached);
        priced(fresh(tokens.text_in, tokens.cached_text_in), self.text_in)
            + priced(tokens.cached_text_in, self.cached_text_in)
            + priced(
                fresh(tokens.audio_in, tokens.cached_audio_in),
                self.audio_in,
            )
            + priced(tokens.cached_audio_in, self.cached_audio_in)
            + priced(
                fresh(tokens.image_in, tokens.cached_image_in),
                self.image_in,
            )
            + priced(tokens.cached_image_in, self.cached_image_in)
            + priced(tokens.text_out, self.text_out)
            + priced(tokens.audio_out, self.audio_out)
    }
}

/// A duration-billed model's prices in US dollars per minute: of audio transcribed, or of a
/// session's time (active, and paused where the model bills a paused session less).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MinutePrices {
    pub per_minute: f64,
    pub per_paused_minute: f64,
}

impl MinutePrices {
    /// What `active_seconds` and `paused_seconds` cost, in US dollars.
    pub fn cost_usd(&self, active_seconds: f64, paused_seconds: f64) -> f64 {
        (active_seconds.max(0.0) * self.per_minute
            + paused_seconds.max(0.0) * self.per_paused_minute)
            / 60.0
    }
}

/// How a model is billed: by the token or by the minute.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rate {
    PerMillionTokens(Prices),
    PerMinute(MinutePrices),
}

/// The prices a model is costed at.
#[derive(Clone, Debug, PartialEq)]
pub struct Pricing {
    /// The model whose prices these are, as the price table names it.
    pub model: String,
    pub rate: Rate,
    /// When the prices were taken from the provider's price list (`2025-08-28`), or empty for
    /// prices the user entered.
    pub taken_on: String,
    /// The provider bills nothing (the local one): the cost is what the same use would cost
    /// at these prices.
    pub free: bool,
}

impl Pricing {
    /// What a response billed `tokens` costs, if this model bills by the token.
    fn tokens_usd(&self, tokens: &TokenTotals) -> Option<f64> {
        match &self.rate {
            Rate::PerMillionTokens(prices) => Some(prices.cost_usd(tokens)),
            Rate::PerMinute(_) => None,
        }
    }
}

/// What the conversation has spent so far, after each billed response and transcription.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spending {
    /// Every response of the conversation, summed.
    pub tokens: TokenTotals,
    /// How many responses were billed.
    pub responses: u64,
    /// What the last response was billed (what its cached share is read from).
    pub last_response: Option<TokenTotals>,
    /// The user's speech billed by duration, summed.
    pub transcribed_seconds: f64,
    /// How many transcriptions were billed.
    pub transcriptions: u64,
    /// What the transcriptions cost, when their model's prices are known.
    pub transcription_cost_usd: Option<f64>,
    /// What the responses and transcriptions cost, each at the prices of its time, when they
    /// are known: the figure the budget counts.
    pub cost_usd: Option<f64>,
    /// The prices the responses to come are costed at.
    pub pricing: Option<Pricing>,
    /// The prices the transcriptions to come are costed at.
    pub transcription_pricing: Option<Pricing>,
    /// The time of the sessions billed by duration, summed over the conversation's calls.
    pub session_seconds: SessionSeconds,
    /// The last usage report of the session under way: its id, and what it said.
    last_session_report: Option<(String, SessionSeconds)>,
}

/// What a saved conversation had spent before it was continued: what the figure shown and the
/// budget go on from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpentBefore {
    pub tokens: TokenTotals,
    pub responses: u64,
    /// The user's speech billed by duration, and how many transcriptions were billed.
    pub transcribed_seconds: f64,
    pub transcriptions: u64,
    /// What all of it cost, when it was priced.
    pub cost_usd: Option<f64>,
}

/// A session billed by its duration (GPT-Live): its active and paused seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SessionSeconds {
    pub active: f64,
    pub paused: f64,
}

/// What one usage report of a session billed by duration added, and what that cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SessionBill {
    pub added: SessionSeconds,
    pub cost_usd: Option<f64>,
}

/// What one transcription was billed and cost.
#[derive(Clone, Debug, PartialEq)]
pub struct TranscriptionBill {
    /// Seconds of speech, for a duration-billed model.
    pub seconds: Option<f64>,
    /// Tokens, for a token-billed one (its input as audio and text in, its output as text out).
    pub tokens: TokenTotals,
    pub cost_usd: Option<f64>,
}

impl Spending {
    /// Nothing spent yet, to be costed at `pricing` and `transcription_pricing`.
    pub fn new(pricing: Option<Pricing>, transcription_pricing: Option<Pricing>) -> Self {
        let mut spending = Self {
            pricing,
            transcription_pricing,
            ..Self::default()
        };
        spending.price_from_now();
        spending
    }

    /// New prices for what comes (what was spent stays as costed).
    pub fn set_pricing(
        &mut self,
        pricing: Option<Pricing>,
        transcription_pricing: Option<Pricing>,
    ) {
        self.pricing = pricing;
        self.transcription_pricing = transcription_pricing;
        self.price_from_now();
    }

    /// A cost starts at zero once there is a price to count it with.
    fn price_from_now(&mut self) {
        if self.pricing.is_some() || self.transcription_pricing.is_some() {
            self.cost_usd.get_or_insert(0.0);
        }
        if self.transcription_pricing.is_some() {
            self.transcription_cost_usd.get_or_insert(0.0);
        }
    }

    /// Adds what one more response was billed; returns its tokens and what they cost.
    pub fn add(&mut self, usage: &Usage) -> (TokenTotals, Option<f64>) {
        let billed = TokenTotals::of(usage);
        let cost_usd = self
            .pricing
            .as_ref()
            .and_then(|pricing| pricing.tokens_usd(&billed));
        self.tokens = self.tokens.plus(&billed);
        self.responses += 1;
        self.last_response = Some(billed);
        if let Some(cost_usd) = cost_usd {
            *self.cost_usd.get_or_insert(0.0) += cost_usd;
        }
        (billed, cost_usd)
    }

    /// Adds what one more transcription was billed, at the transcription model's prices: a
    /// duration at a price per minute, tokens at prices per million.
    pub fn add_transcription(&mut self, usage: &TranscriptionUsage) -> TranscriptionBill {
        let rate = self
            .transcription_pricing
            .as_ref()
            .map(|pricing| pricing.rate);
        let bill = match usage {
            TranscriptionUsage::Duration { seconds } => {
                let seconds = seconds.max(0.0);
                TranscriptionBill {
                    seconds: Some(seconds),
                    tokens: TokenTotals::default(),
                    cost_usd: match rate {
                        Some(Rate::PerMinute(prices)) => Some(prices.cost_usd(seconds, 0.0)),
                        _ => None,
                    },
                }
            }
            TranscriptionUsage::Tokens {
                input_tokens,
                output_tokens,
                input_token_details,
                ..
            } => {
                let details = input_token_details.clone().unwrap_or_default();
                let by_modality = details.audio_tokens.is_some() || details.text_tokens.is_some();
                let tokens = TokenTotals {
                    // Transcription listens to audio: a total without its modalities is audio.
                    audio_in: if by_modality {
                        details.audio_tokens.unwrap_or(0)
                    } else {
                        *input_tokens
                    },
                    text_in: details.text_tokens.unwrap_or(0),
                    text_out: *output_tokens,
                    ..TokenTotals::default()
                };
                TranscriptionBill {
                    seconds: None,
                    cost_usd: match rate {
                        Some(Rate::PerMillionTokens(prices)) => Some(prices.cost_usd(&tokens)),
                        _ => None,
                    },
                    tokens,
                }
            }
        };
        self.transcriptions += 1;
        self.transcribed_seconds += bill.seconds.unwrap_or(0.0);
        if let Some(cost_usd) = bill.cost_usd {
            *self.transcription_cost_usd.get_or_insert(0.0) += cost_usd;
            *self.cost_usd.get_or_insert(0.0) += cost_usd;
        }
        bill
    }

    /// Adds what a session billed by duration reports it has used so far. The reports are
    /// cumulative for their session (the Live API: "Do not sum values across usage events"),
    /// so only what grew since the same session's last report is added and costed, at a price
    /// per minute for the active time and one for the paused time; another session (a call
    /// placed again) starts from nothing, and a report that goes back, or is not a number, adds
    /// nothing.
    pub fn add_session_usage(&mut self, session_id: &str, reported: SessionSeconds) -> SessionBill {
        let before = match &self.last_session_report {
            Some((id, seen)) if id == session_id => *seen,
            _ => SessionSeconds::default(),
        };
        // `f64::max` keeps the number when the other side is NaN.
        let now = SessionSeconds {
            active: reported.active.max(before.active),
            paused: reported.paused.max(before.paused),
        };
        let added = SessionSeconds {
            active: now.active - before.active,
            paused: now.paused - before.paused,
        };
        self.last_session_report = Some((session_id.to_owned(), now));
        self.session_seconds.active += added.active;
        self.session_seconds.paused += added.paused;
        let cost_usd = match self.pricing.as_ref().map(|pricing| pricing.rate) {
            Some(Rate::PerMinute(prices)) => Some(prices.cost_usd(added.active, added.paused)),
            _ => None,
        };
        if let Some(cost_usd) = cost_usd {
            *self.cost_usd.get_or_insert(0.0) += cost_usd;
        }
        SessionBill { added, cost_usd }
    }

    /// The share of input tokens that were cached, in the last response and over the
    /// conversation (`None` before any input was billed): what truncating to a retention
    /// ratio saves shows here.
    pub fn cached_shares(&self) -> (Option<f64>, Option<f64>) {
        let share = |tokens: &TokenTotals| {
            let input = tokens.text_in + tokens.audio_in + tokens.image_in;
            let cached = tokens.cached_text_in + tokens.cached_audio_in + tokens.cached_image_in;
            (input > 0).then(|| cached.min(input) as f64 / input as f64)
        };
        (
            self.last_response.as_ref().and_then(share),
            share(&self.tokens),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn per_minute(model: &str, per_minute: f64) -> Pricing {
        Pricing {
            model: model.to_owned(),
            rate: Rate::PerMinute(MinutePrices {
                per_minute,
                per_paused_minute: 0.0,
            }),
            taken_on: "2026-12-04".to_owned(),
            free: false,
        }
    }

    fn per_token(audio_in: f64) -> Pricing {
        Pricing {
            model: "gpt-realtime-2.1".to_owned(),
            rate: Rate::PerMillionTokens(Prices {
                audio_in,
                cached_audio_in: audio_in / 80.0,
                ..Prices::default()
            }),
            taken_on: String::new(),
            free: false,
        }
    }

    #[test]
    fn a_duration_billed_transcription_costs_its_minutes_and_adds_to_the_total() {
        let mut spending = Spending::new(
            Some(per_token(32.0)),
            Some(per_minute("gpt-realtime-whisper", 0.017)),
        );
        assert_eq!(spending.cost_usd, Some(0.0));
        let bill = spending.add_transcription(&TranscriptionUsage::Duration { seconds: 30.0 });
        assert_eq!(bill.seconds, Some(30.0));
        assert!((bill.cost_usd.unwrap() - 0.0085).abs() < 1e-12);
        spending.add_transcription(&TranscriptionUsage::Duration { seconds: 90.0 });
        assert_eq!(spending.transcribed_seconds, 120.0);
        assert_eq!(spending.transcriptions, 2);
        assert!((spending.transcription_cost_usd.unwrap() - 0.034).abs() < 1e-12);
        let usage = Usage {
            input_tokens: Some(1_000_000),
            input_token_details: Some(walkie_openai::InputTokenDetails {
                audio_tokens: Some(1_000_000),
                ..Default::default()
            }),
            ..Usage::default()
        };
        let (_, response_usd) = spending.add(&usage);
        assert_eq!(response_usd, Some(32.0));
        assert!(
            (spending.cost_usd.unwrap() - 32.034).abs() < 1e-9,
            "{spending:?}"
        );
    }

    #[test]
    fn a_transcription_billed_another_way_than_its_model_is_counted_but_not_costed() {
        let mut spending = Spending::new(None, Some(per_minute("gpt-realtime-whisper", 0.017)));
        let bill = spending.add_transcription(&TranscriptionUsage::Tokens {
            input_tokens: 500,
            output_tokens: 20,
            total_tokens: 520,
            input_token_details: None,
        });
        assert_eq!(
            bill.tokens.audio_in, 500,
            "a total without modalities is audio"
        );
        assert_eq!(bill.cost_usd, None);
        assert_eq!(spending.transcription_cost_usd, Some(0.0));
        let mut unpriced = Spending::new(None, None);
        unpriced.add_transcription(&TranscriptionUsage::Duration { seconds: 5.0 });
        assert_eq!(unpriced.cost_usd, None);
        assert_eq!(unpriced.transcribed_seconds, 5.0);
    }

    #[test]
    fn a_negative_duration_costs_nothing() {
        let mut spending = Spending::new(None, Some(per_minute("gpt-realtime-whisper", 1.0)));
        let bill = spending.add_transcription(&TranscriptionUsage::Duration { seconds: -60.0 });
        assert_eq!(bill.cost_usd, Some(0.0));
        assert_eq!(spending.transcribed_seconds, 0.0);
    }

    #[test]
    fn a_per_minute_session_model_bills_no_tokens() {
        let mut spending = Spending::new(Some(per_minute("gpt-live-1.1", 0.05)), None);
        let (tokens, cost_usd) = spending.add(&Usage {
            output_tokens: Some(100),
            ..Usage::default()
        });
        assert_eq!(tokens.text_out, 100);
        assert_eq!(cost_usd, None);
        assert_eq!(spending.cost_usd, Some(0.0));
    }

    fn live(active: f64, paused: f64) -> SessionSeconds {
        SessionSeconds { active, paused }
    }

    #[test]
    fn a_live_session_is_costed_per_active_and_paused_minute_from_its_cumulative_reports() {
        let mut gpt_live = per_minute("gpt-live-1.1", 0.05);
        gpt_live.rate = Rate::PerMinute(MinutePrices {
            per_minute: 0.05,
            per_paused_minute: 0.02,
        });
        let mut spending = Spending::new(Some(gpt_live), None);
        let first = spending.add_session_usage("live_1", live(60.0, 0.0));
        assert_eq!(first.added, live(60.0, 0.0));
        assert!((first.cost_usd.unwrap() - 0.05).abs() < 1e-12);
        // The next report restates the first minute: only the growth is billed.
        let second = spending.add_session_usage("live_1", live(90.0, 60.0));
        assert_eq!(second.added, live(30.0, 60.0));
        assert!((second.cost_usd.unwrap() - (0.025 + 0.02)).abs() < 1e-12);
        assert_eq!(
            spending.add_session_usage("live_1", live(90.0, 60.0)).added,
            live(0.0, 0.0)
        );
        // A call placed again: a new session, counted from nothing.
        assert_eq!(
            spending.add_session_usage("live_2", live(30.0, 0.0)).added,
            live(30.0, 0.0)
        );
        // A report that goes back, or is not a number, adds nothing.
        assert_eq!(
            spending
                .add_session_usage("live_2", live(10.0, f64::NAN))
                .added,
            live(0.0, 0.0)
        );
        assert_eq!(spending.session_seconds, live(120.0, 60.0));
        assert!(
            (spending.cost_usd.unwrap() - (0.05 + 0.045 + 0.025)).abs() < 1e-12,
            "{spending:?}"
        );
    }

    #[test]
    fn a_session_usage_without_a_price_per_minute_is_counted_not_costed() {
        let mut spending = Spending::new(Some(per_token(32.0)), None);
        let bill = spending.add_session_usage("live_1", live(30.0, 5.0));
        assert_eq!((bill.added, bill.cost_usd), (live(30.0, 5.0), None));
        assert_eq!(spending.cost_usd, Some(0.0));
        assert_eq!(spending.session_seconds, live(30.0, 5.0));
    }

    #[test]
    fn the_cached_share_is_read_per_reply_and_over_the_conversation() {
        let mut spending = Spending::new(Some(per_token(32.0)), None);
        assert_eq!(spending.cached_shares(), (None, None));
        let usage = |audio: u64, cached: u64| Usage {
            input_token_details: Some(walkie_openai::InputTokenDetails {
                audio_tokens: Some(audio),
                cached_tokens_details: Some(walkie_openai::CachedTokenDetails {
                    audio_tokens: Some(cached),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Usage::default()
        };
        spending.add(&usage(100, 0));
        spending.add(&usage(300, 240));
        assert_eq!(spending.cached_shares(), (Some(0.8), Some(0.6)));
    }
}
