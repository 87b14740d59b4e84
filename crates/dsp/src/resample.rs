//! Fixed-ratio sample-rate conversion between a device and the call (48 kHz), on rubato's FFT
//! resampler: cheap, a few milliseconds of delay, and it rejects the aliases that the
//! polynomial resamplers let through.
//!
//! [`StreamResampler`] takes input in whatever pieces it arrives and produces output as soon as a
//! whole 10 ms chunk is in. It allocates only in [`StreamResampler::new`].

use rubato::audioadapter_buffers::direct::InterleavedSlice;
use rubato::{Fft, FixedSync, Resampler};

/// Why a resampler could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ResampleSetupError {
    #[error("cannot resample from {from_hz} Hz to {to_hz} Hz: {reason}")]
    Unsupported {
        from_hz: u32,
        to_hz: u32,
        reason: String,
    },
}

/// Mono conversion from `from_hz` to `to_hz` in 10 ms input chunks.
pub struct StreamResampler {
    /// `None` when the rates are equal: samples pass through untouched.
    fft: Option<Fft<f32>>,
    chunk_in: usize,
    pending: Vec<f32>,
    scratch_out: Vec<f32>,
}

impl std::fmt::Debug for StreamResampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamResampler")
            .field("chunk_in", &self.chunk_in)
            .field("pending", &self.pending.len())
            .field("passthrough", &self.fft.is_none())
            .finish()
    }
}

impl StreamResampler {
    pub fn new(from_hz: u32, to_hz: u32) -> Result<Self, ResampleSetupError> {
        let unsupported = |reason: String| ResampleSetupError::Unsupported {
            from_hz,
            to_hz,
            reason,
        };
        if from_hz == 0 || to_hz == 0 {
            return Err(unsupported("a sample rate of 0 Hz".to_owned()));
        }
        let chunk_in = (from_hz / 100).max(1) as usize;
        if from_hz == to_hz {
            return Ok(Self {
                fft: None,
                chunk_in,
                pending: Vec::new(),
                scratch_out: Vec::new(),
            });
        }
        let fft = Fft::<f32>::new(
            from_hz as usize,
            to_hz as usize,
            chunk_in,
            1,
            FixedSync::Input,
        )
        .map_err(|error| unsupported(error.to_string()))?;
        let scratch_out = vec![0.0; fft.output_frames_max()];
        Ok(Self {
            fft: Some(fft),
            chunk_in,
            pending: Vec::with_capacity(chunk_in),
            scratch_out,
        })
    }

    /// Forgets everything in flight (a flushed playback): the next input starts afresh.
    pub fn reset(&mut self) {
        self.pending.clear();
        if let Some(fft) = self.fft.as_mut() {
            fft.reset();
        }
    }

    /// How many output samples the resampler holds back, as its delay.
    pub fn output_delay_samples(&self) -> usize {
        self.fft.as_ref().map_or(0, Resampler::output_delay)
    }

    /// Converts `input`, appending every finished output sample to `output`. `output` never
    /// grows beyond what the caller reserved if it reserved [`Self::max_output_for`] samples.
    pub fn process(&mut self, input: &[f32], output: &mut Vec<f32>) {
        let Some(fft) = self.fft.as_mut() else {
            output.extend_from_slice(input);
            return;
        };
        process_in_chunks(
            fft,
            self.chunk_in,
            &mut self.pending,
            &mut self.scratch_out,
            input,
            output,
        );
    }

    /// The most output samples one call with `input_len` samples can append.
    pub fn max_output_for(&self, input_len: usize) -> usize {
        match &self.fft {
            None => input_len,
            Some(fft) => (input_len / self.chunk_in + 1) * fft.output_frames_max(),
        }
    }
}

/// Feeds `input` to `resampler` in chunks of `chunk_in` mono samples (what does not make a
/// whole chunk waits in `pending`, which holds `chunk_in`), appending what comes out to
/// `output`; `scratch_out` holds the resampler's largest output. Allocates only if `output`
/// has too little room.
pub(crate) fn process_in_chunks<R: Resampler<f32>>(
    resampler: &mut R,
    chunk_in: usize,
    pending: &mut Vec<f32>,
    scratch_out: &mut [f32],
    mut input: &[f32],
    output: &mut Vec<f32>,
) {
    while !input.is_empty() {
        let take = (chunk_in - pending.len()).min(input.len());
        pending.extend_from_slice(&input[..take]);
        input = &input[take..];
        if pending.len() < chunk_in {
            break;
        }
        let chunk = InterleavedSlice::new(&pending[..], 1, chunk_in)
            .expect("the pending buffer holds exactly one chunk of mono frames");
        let out_len = resampler.output_frames_next();
        let mut out = InterleavedSlice::new_mut(&mut scratch_out[..out_len], 1, out_len)
            .expect("the scratch buffer was sized to the resampler's largest output");
        let (_, produced) = resampler
            .process_into_buffer(&chunk, &mut out, None)
            .expect("buffers sized from the resampler's own frame counts are accepted");
        output.extend_from_slice(&scratch_out[..produced]);
        pending.clear();
    }
}
