//! What each response of the local provider "costs", counted the way OpenAI documents it
//! (platform docs, "Managing costs" of the Realtime API), so that Walkie's usage and cost
//! figures meet realistic numbers before they meet a bill:
//!
//! - the whole conversation so far, plus the instructions, is the input of every response;
//! - user audio is 1 token per 100 ms, assistant audio 1 token per 50 ms;
//! - what the previous response already took as input is cached this time (a prefix);
//! - text is about 4 characters a token (the local provider has no tokenizer);
//! - a picture costs what OpenAI's vision guide counts ([`crate::picture`]).
//!
//! An out-of-band response (`conversation: "none"`) takes the instructions alone and joins no
//! conversation.

use walkie_openai::{CachedTokenDetails, InputTokenDetails, OutputTokenDetails, Usage};

/// Tokens by modality.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tokens {
    pub text: u64,
    pub audio: u64,
    pub image: u64,
}

impl Tokens {
    pub fn total(self) -> u64 {
        self.text + self.audio + self.image
    }

    fn plus(self, other: Tokens) -> Tokens {
        Tokens {
            text: self.text + other.text,
            audio: self.audio + other.audio,
            image: self.image + other.image,
        }
    }

    fn at_most(self, other: Tokens) -> Tokens {
        Tokens {
            text: self.text.min(other.text),
            audio: self.audio.min(other.audio),
            image: self.image.min(other.image),
        }
    }
}

/// Text tokens of `text`: a token per 4 characters, rounded up.
pub(crate) fn text_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// Audio tokens of `audio_ms` of the user's audio.
pub(crate) fn user_audio_tokens(audio_ms: u64) -> u64 {
    audio_ms.div_ceil(100)
}

/// Audio tokens of `audio_ms` of the assistant's audio.
pub(crate) fn assistant_audio_tokens(audio_ms: u64) -> u64 {
    audio_ms.div_ceil(50)
}

/// The conversation as the model's input, and what the last response took in.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    conversation: Tokens,
    last_input: Tokens,
}

impl Ledger {
    /// Something joined the conversation (a user's turn, a created item).
    pub fn joined(&mut self, tokens: Tokens) {
        self.conversation = self.conversation.plus(tokens);
    }

    /// Bills a response that took the conversation (unless `out_of_band`) and `instructions`
    /// in and gave `output` out; the output joins the conversation.
    pub fn bill(&mut self, instructions: u64, output: Tokens, out_of_band: bool) -> Usage {
        let instructions = Tokens {
            text: instructions,
            ..Tokens::default()
        };
        let (input, cached) = if out_of_band {
            (instructions, Tokens::default())
        } else {
            let input = self.conversation.plus(instructions);
            let cached = self.last_input.at_most(input);
            self.last_input = input;
            self.conversation = self.conversation.plus(output);
            (input, cached)
        };
        Usage {
            total_tokens: Some(input.total() + output.total()),
            input_tokens: Some(input.total()),
            output_tokens: Some(output.total()),
            input_token_details: Some(InputTokenDetails {
                text_tokens: Some(input.text),
                audio_tokens: Some(input.audio),
                image_tokens: Some(input.image),
                cached_tokens: Some(cached.total()),
                cached_tokens_details: Some(CachedTokenDetails {
                    text_tokens: Some(cached.text),
                    audio_tokens: Some(cached.audio),
                    image_tokens: Some(cached.image),
                }),
            }),
            output_token_details: Some(OutputTokenDetails {
                text_tokens: Some(output.text),
                audio_tokens: Some(output.audio),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(audio_ms: u64, transcript: &str) -> Tokens {
        Tokens {
            text: text_tokens(transcript),
            audio: assistant_audio_tokens(audio_ms),
            image: 0,
        }
    }

    #[test]
    fn audio_is_ten_tokens_a_second_from_the_user_and_twenty_from_the_assistant() {
        assert_eq!(user_audio_tokens(1_000), 10);
        assert_eq!(user_audio_tokens(1_050), 11);
        assert_eq!(assistant_audio_tokens(1_000), 20);
        assert_eq!(text_tokens("four"), 1);
        assert_eq!(text_tokens("five!"), 2);
    }

    #[test]
    fn each_response_takes_the_conversation_in_and_the_last_input_comes_back_cached() {
        let mut ledger = Ledger::default();
        ledger.joined(Tokens {
            text: 0,
            audio: user_audio_tokens(2_000),
            image: 0,
        });
        let first = ledger.bill(10, reply(2_000, "twelve chars"), false);
        assert_eq!(first.input_tokens, Some(10 + 20));
        assert_eq!(first.output_tokens, Some(40 + 3));
        assert_eq!(first.total_tokens, Some(73));
        let details = first.input_token_details.expect("details");
        assert_eq!(details.cached_tokens, Some(0));

        ledger.joined(Tokens {
            text: 0,
            audio: user_audio_tokens(1_000),
            image: 0,
        });
        let second = ledger.bill(10, reply(1_000, ""), false);
        let details = second.input_token_details.expect("details");
        // Instructions, the first turn, the first reply, the second turn.
        assert_eq!(details.text_tokens, Some(10 + 3));
        assert_eq!(details.audio_tokens, Some(20 + 40 + 10));
        assert_eq!(
            details.cached_tokens,
            Some(30),
            "what the first response took in"
        );
        let cached = details.cached_tokens_details.expect("cached by modality");
        assert_eq!(
            (cached.text_tokens, cached.audio_tokens),
            (Some(10), Some(20))
        );
    }

    #[test]
    fn an_out_of_band_response_takes_the_instructions_alone_and_joins_nothing() {
        let mut ledger = Ledger::default();
        ledger.joined(Tokens {
            text: 5,
            audio: 50,
            image: 0,
        });
        let chime = ledger.bill(10, reply(800, "a chime"), true);
        assert_eq!(chime.input_tokens, Some(10));
        let next = ledger.bill(10, reply(0, ""), false);
        assert_eq!(
            next.input_tokens,
            Some(10 + 5 + 50),
            "the chime is not in it"
        );
    }
}
