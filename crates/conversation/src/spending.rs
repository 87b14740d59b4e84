//! What a conversation has spent: the tokens each `response.done` was billed, summed over every
//! call of the conversation, and priced by the table of the model in use.
//!
//! Why here: the user should see the running cost without adding anything up, and ending a
//! call on a spent budget is a decision about the conversation, which is the machine's.

use walkie_openai::Usage;
pub use walkie_session::TokenTotals;

/// A model's prices in US dollars per million tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
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

/// The prices a conversation is costed at.
#[derive(Clone, Debug, PartialEq)]
pub struct Pricing {
    /// The model whose prices these are, as the price table names it.
    pub model: String,
    pub prices: Prices,
    /// When the prices were taken from the provider's price list (`2025-08-28`), or empty for
    /// prices the user entered.
    pub taken_on: String,
    /// The provider bills nothing (the local one): the cost is what the same tokens would
    /// cost at these prices.
    pub free: bool,
}

/// What the conversation has spent so far, after each billed response.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spending {
    /// Every response of the conversation, summed.
    pub tokens: TokenTotals,
    /// How many responses were billed.
    pub responses: u64,
    /// What the responses cost, each at the prices of its time, when they are known.
    pub cost_usd: Option<f64>,
    /// The prices the responses to come are costed at.
    pub pricing: Option<Pricing>,
}

impl Spending {
    /// Nothing spent yet, to be costed at `pricing`.
    pub fn new(pricing: Option<Pricing>) -> Self {
        Self {
            cost_usd: pricing.as_ref().map(|_| 0.0),
            pricing,
            ..Self::default()
        }
    }

    /// Adds what one more response was billed; returns its tokens and what they cost.
    pub fn add(&mut self, usage: &Usage) -> (TokenTotals, Option<f64>) {
        let billed = TokenTotals::of(usage);
        let cost_usd = self
            .pricing
            .as_ref()
            .map(|pricing| pricing.prices.cost_usd(&billed));
        self.tokens = self.tokens.plus(&billed);
        self.responses += 1;
        if let Some(cost_usd) = cost_usd {
            *self.cost_usd.get_or_insert(0.0) += cost_usd;
        }
        (billed, cost_usd)
    }
}
