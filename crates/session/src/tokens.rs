//! Tokens a provider billed, by modality and direction: what the conversation sums, the
//! journal saves and the window shows, in one type.

use serde::{Deserialize, Serialize};
use walkie_openai::Usage;

/// Tokens by modality and direction. An input count includes its cached part, as the
/// provider counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TokenTotals {
    pub text_in: u64,
    pub cached_text_in: u64,
    pub audio_in: u64,
    pub cached_audio_in: u64,
    pub image_in: u64,
    pub cached_image_in: u64,
    pub text_out: u64,
    pub audio_out: u64,
}

impl TokenTotals {
    /// What one response was billed.
    /// A figure the provider left out counts as none; a total given without its modalities is
    /// counted as text (a guess, and a low one: audio costs more).
    pub fn of(usage: &Usage) -> Self {
        let input = usage.input_token_details.clone().unwrap_or_default();
        let cached = input.cached_tokens_details.clone().unwrap_or_default();
        let output = usage.output_token_details.clone().unwrap_or_default();
        let by_modality_in = input.text_tokens.is_some()
            || input.audio_tokens.is_some()
            || input.image_tokens.is_some();
        let text_in = if by_modality_in {
            input.text_tokens.unwrap_or(0)
        } else {
            usage.input_tokens.unwrap_or(0)
        };
        let by_modality_out = output.text_tokens.is_some() || output.audio_tokens.is_some();
        let text_out = if by_modality_out {
            output.text_tokens.unwrap_or(0)
        } else {
            usage.output_tokens.unwrap_or(0)
        };
        Self {
            text_in,
            cached_text_in: cached.text_tokens.unwrap_or(0),
            audio_in: input.audio_tokens.unwrap_or(0),
            cached_audio_in: cached.audio_tokens.unwrap_or(0),
            image_in: input.image_tokens.unwrap_or(0),
            cached_image_in: cached.image_tokens.unwrap_or(0),
            text_out,
            audio_out: output.audio_tokens.unwrap_or(0),
        }
    }

    /// These and `more`, summed.
    pub fn plus(&self, more: &TokenTotals) -> TokenTotals {
        let add = u64::saturating_add;
        TokenTotals {
            text_in: add(self.text_in, more.text_in),
            cached_text_in: add(self.cached_text_in, more.cached_text_in),
            audio_in: add(self.audio_in, more.audio_in),
            cached_audio_in: add(self.cached_audio_in, more.cached_audio_in),
            image_in: add(self.image_in, more.image_in),
            cached_image_in: add(self.cached_image_in, more.cached_image_in),
            text_out: add(self.text_out, more.text_out),
            audio_out: add(self.audio_out, more.audio_out),
        }
    }

    /// Every token, in and out.
    pub fn total(&self) -> u64 {
        [
            self.text_in,
            self.audio_in,
            self.image_in,
            self.text_out,
            self.audio_out,
        ]
        .into_iter()
        .fold(0, u64::saturating_add)
    }
}
