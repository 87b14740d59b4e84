//! A whole conversation as one file: its turn WAVs placed on the conversation's time line, the
//! user on the left and the assistant on the right or both mixed, as WAV or as Opus in Ogg; and
//! WebVTT captions of its transcript on the same time line.
//!
//! Why the journal places the audio and not the order of the files: the two sides overlap where
//! the user barged in, and the pauses between turns are part of how the conversation went. The
//! time line is the journal's wall time less the time between a hang-up and the continuation
//! after it ([`Conversation::conversation_ms`]), so a conversation continued a week later does not
//! export a week of silence. A turn WAV is read only while the time line passes it: an hour's
//! export holds a turn in memory, not the hour.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use walkie_agui::Role;
use walkie_dsp::codec::{MAX_PACKET_BYTES, OpusFileEncoder};
use walkie_dsp::resample::StreamResampler;
use walkie_session::Speaker;

use crate::conversation::Conversation;
use crate::error::StoreError;
use crate::files::{create_private_file, temporary_path};
use crate::journal::AudioSource;

/// How the two sides share the file's channels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ExportChannels {
    /// The user on the left channel, the assistant on the right.
    Stereo,
    /// Both on one channel.
    Mixed,
}

impl ExportChannels {
    fn count(self) -> usize {
        match self {
            ExportChannels::Stereo => 2,
            ExportChannels::Mixed => 1,
        }
    }

    fn channel_of(self, speaker: Speaker) -> usize {
        match (self, speaker) {
            (ExportChannels::Stereo, Speaker::Assistant) => 1,
            _ => 0,
        }
    }
}

/// The file format of an audio export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AudioFormat {
    /// 16-bit PCM at the turns' own rate (the higher of the two sides'): nothing lost.
    Wav,
    /// Opus in Ogg (RFC 7845) at 48 kHz: a tenth of the size.
    OggOpus,
}

/// What an audio export holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AudioExport {
    pub channels: ExportChannels,
    pub format: AudioFormat,
}

/// The bit rate of an exported Opus file per channel: plenty for speech.
pub const OPUS_BITRATE_PER_CHANNEL_BPS: i32 = 32_000;

/// The longest time line exported: a day. A journal that places a turn later than that, or
/// more than [`PAST_THE_END_MS`] past the conversation's own end, is corrupt, and writing the
/// silence before it would fill the disk.
pub const MAX_EXPORT_MS: u64 = 24 * 3_600_000;
/// How far past the conversation's last record a turn may start (its WAV closes with the turn).
pub const PAST_THE_END_MS: u64 = 60_000;

/// The rate of every Ogg Opus file's time line (RFC 7845: granule positions count 48 kHz).
const OPUS_RATE_HZ: u32 = walkie_dsp::CALL_RATE_HZ;

/// One turn WAV on the conversation's time line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AudioClip {
    pub turn: u32,
    pub speaker: Speaker,
    /// Relative to the conversation folder.
    pub file: String,
    pub sample_rate_hz: u32,
    pub sample_count: u64,
    /// Where its first sample falls on the conversation's time line.
    pub start_ms: u64,
}

impl AudioClip {
    pub fn duration_ms(&self) -> u64 {
        let duration_ms =
            u128::from(self.sample_count) * 1000 / u128::from(self.sample_rate_hz.max(1));
        u64::try_from(duration_ms).unwrap_or(u64::MAX)
    }

    pub fn end_ms(&self) -> u64 {
        self.start_ms.saturating_add(self.duration_ms())
    }
}

/// Every turn WAV that holds audio, placed on the time line, in order of start.
///
/// A WAV's start is the journal's (`audio_start_unix_ms`); a journal written before it was kept
/// places the user's WAV at its turn's start and the assistant's after the user's.
pub fn audio_clips(conversation: &Conversation) -> Vec<AudioClip> {
    let mut clips = Vec::new();
    for turn in conversation.turns() {
        let mut user_end_unix_ms = None;
        for (speaker, wav) in [
            (Speaker::User, &turn.user_wav),
            (Speaker::Assistant, &turn.assistant_wav),
        ] {
            let Some(wav) = wav else { continue };
            if wav.sample_count == 0 || wav.source == AudioSource::Empty {
                continue;
            }
            let start_unix_ms = wav.audio_start_unix_ms.unwrap_or(match speaker {
                Speaker::User => turn.started_unix_ms,
                Speaker::Assistant => user_end_unix_ms.unwrap_or(turn.started_unix_ms),
            });
            if speaker == Speaker::User {
                let duration_ms = i64::try_from(wav.duration_ms()).unwrap_or(i64::MAX);
                user_end_unix_ms = Some(start_unix_ms.saturating_add(duration_ms));
            }
            clips.push(AudioClip {
                turn: turn.turn,
                speaker,
                file: wav.file.clone(),
                sample_rate_hz: wav.sample_rate_hz,
                sample_count: wav.sample_count,
                start_ms: conversation.conversation_ms(start_unix_ms),
            });
        }
    }
    clips.sort_by_key(|clip| (clip.start_ms, clip.turn, clip.speaker == Speaker::Assistant));
    clips
}

/// How long a caption without audio (a typed message) stays up: a reading pace, within bounds.
fn reading_ms(text: &str) -> u64 {
    let words = text.split_whitespace().count() as u64;
    (words * 300).clamp(1_500, 10_000)
}

/// The transcript as WebVTT captions on the export's time line: each said message for as long
/// as its turn WAV sounds, a typed one from when it was sent for a reading time, each under its
/// speaker's voice (`<v You>`, `<v Assistant>`).
pub fn render_webvtt(conversation: &Conversation) -> String {
    let clips = audio_clips(conversation);
    let mut cues: Vec<(u64, u64, &'static str, String)> = Vec::new();
    let mut last_start_ms = 0;
    for message in conversation.messages() {
        let voice = match message.role() {
            Some(Role::User) => "You",
            Some(Role::Assistant) => "Assistant",
            _ => continue,
        };
        let Some(text) = message
            .content()
            .map(cue_text)
            .filter(|text| !text.is_empty())
        else {
            continue;
        };
        let clip = conversation
            .turn_of_message(message.id())
            .and_then(|(turn, speaker)| {
                clips
                    .iter()
                    .find(|clip| clip.turn == turn.turn && clip.speaker == speaker)
            });
        let (start_ms, end_ms) = match clip {
            Some(clip) => (clip.start_ms, clip.end_ms()),
            None => {
                let start_ms = conversation
                    .message_started_unix_ms(message.id())
                    .map_or(last_start_ms, |at| conversation.conversation_ms(at));
                (start_ms, start_ms.saturating_add(reading_ms(&text)))
            }
        };
        last_start_ms = start_ms;
        cues.push((start_ms, end_ms.max(start_ms + 1), voice, text));
    }
    // WebVTT wants cues in order of start.
    cues.sort_by_key(|cue| cue.0);
    let mut out = String::from("WEBVTT\n");
    for (number, (start_ms, end_ms, voice, text)) in cues.iter().enumerate() {
        out.push_str(&format!(
            "\n{}\n{} --> {}\n<v {voice}>{text}\n",
            number + 1,
            vtt_time(*start_ms),
            vtt_time(*end_ms)
        ));
    }
    out
}

/// `hh:mm:ss.ttt`.
fn vtt_time(ms: u64) -> String {
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// A message as cue text: its lines without the blank ones (a blank line ends a cue), and the
/// three characters WebVTT reserves escaped (so a message holding "-->" or "<v" is read as
/// words, not as a timing or a tag).
fn cue_text(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// What an audio export wrote.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExportedAudio {
    /// The file's length.
    pub duration_ms: u64,
    /// Turn WAVs placed in it.
    pub clips: usize,
    /// Turn WAVs left out: missing or not WAV, or placed past the conversation's end or
    /// [`MAX_EXPORT_MS`] by a journal that says so. The export went on without them.
    pub left_out: Vec<String>,
}

/// Writes the audio of `conversation` (its folder `dir`) to `destination`, replacing it once
/// the whole file is written.
pub fn write_audio(
    dir: &Path,
    conversation: &Conversation,
    export: AudioExport,
    destination: &Path,
) -> Result<ExportedAudio, StoreError> {
    let latest_start_ms = conversation
        .duration_ms()
        .saturating_add(PAST_THE_END_MS)
        .min(MAX_EXPORT_MS);
    let (clips, placed_too_late): (Vec<AudioClip>, Vec<AudioClip>) = audio_clips(conversation)
        .into_iter()
        .partition(|clip| clip.start_ms <= latest_start_ms);
    let rate_hz = match export.format {
        AudioFormat::Wav => clips
            .iter()
            .map(|clip| clip.sample_rate_hz)
            .max()
            .unwrap_or(walkie_session::DEFAULT_OUTPUT_SAMPLE_RATE_HZ),
        AudioFormat::OggOpus => OPUS_RATE_HZ,
    };
    let temporary = temporary_path(destination);
    let _ = fs::remove_file(&temporary);
    let written = (|| {
        let file = create_private_file(&temporary)
            .map_err(|error| StoreError::io("create", &temporary, error))?;
        let writer = BufWriter::new(file);
        let channels = export.channels.count();
        let mut sink: Box<dyn AudioSink> = match export.format {
            AudioFormat::Wav => Box::new(WavSink::new(writer, channels, rate_hz, &temporary)?),
            AudioFormat::OggOpus => Box::new(OggOpusSink::new(writer, channels, &temporary)?),
        };
        let mut exported = mix(dir, &clips, export.channels, rate_hz, sink.as_mut())?;
        sink.finish()?;
        exported
            .left_out
            .extend(placed_too_late.into_iter().map(|clip| clip.file));
        Ok(exported)
    })();
    match written {
        Ok(exported) => {
            fs::rename(&temporary, destination)
                .map_err(|error| StoreError::io("replace", destination, error))?;
            Ok(exported)
        }
        Err(error) => {
            let _ = fs::remove_file(&temporary);
            Err(error)
        }
    }
}

/// Frames mixed per pass: 100 ms of them.
fn block_frames(rate_hz: u32) -> u64 {
    u64::from(rate_hz / 10).max(1)
}

fn frame_at(ms: u64, rate_hz: u32) -> u64 {
    ms.saturating_mul(u64::from(rate_hz)) / 1000
}

/// A clip read and brought to the export's rate, with its place in output frames.
struct LoadedClip {
    channel: usize,
    start_frame: u64,
    samples: Vec<f32>,
}

impl LoadedClip {
    fn end_frame(&self) -> u64 {
        self.start_frame + self.samples.len() as u64
    }
}

fn mix(
    dir: &Path,
    clips: &[AudioClip],
    channels: ExportChannels,
    rate_hz: u32,
    sink: &mut dyn AudioSink,
) -> Result<ExportedAudio, StoreError> {
    let channel_count = channels.count();
    let block = block_frames(rate_hz);
    let mut exported = ExportedAudio::default();
    let mut active: Vec<LoadedClip> = Vec::new();
    let mut next = 0;
    let mut position: u64 = 0;
    let mut buffer = vec![0.0f32; block as usize * channel_count];
    loop {
        while let Some(clip) = clips.get(next)
            && frame_at(clip.start_ms, rate_hz) < position + block
        {
            next += 1;
            match load_clip(dir, clip, rate_hz) {
                Ok(samples) => {
                    exported.clips += 1;
                    active.push(LoadedClip {
                        channel: channels.channel_of(clip.speaker),
                        start_frame: frame_at(clip.start_ms, rate_hz),
                        samples,
                    });
                }
                Err(_) => exported.left_out.push(clip.file.clone()),
            }
        }
        let until = if next < clips.len() {
            position + block
        } else {
            let end = active.iter().map(LoadedClip::end_frame).max().unwrap_or(0);
            if end <= position {
                break;
            }
            end.min(position + block)
        };
        let frames = (until - position) as usize;
        let out = &mut buffer[..frames * channel_count];
        out.fill(0.0);
        for clip in &active {
            let from = clip.start_frame.max(position);
            let to = clip.end_frame().min(until);
            for frame in from..to {
                let sample = clip.samples[(frame - clip.start_frame) as usize];
                let slot = &mut out[(frame - position) as usize * channel_count + clip.channel];
                *slot = (*slot + sample).clamp(-1.0, 1.0);
            }
        }
        sink.write(out)?;
        position = until;
        active.retain(|clip| clip.end_frame() > position);
    }
    exported.duration_ms = position * 1000 / u64::from(rate_hz);
    Ok(exported)
}

/// A turn WAV's samples at `rate_hz`, as far as the file reads.
fn load_clip(dir: &Path, clip: &AudioClip, rate_hz: u32) -> Result<Vec<f32>, StoreError> {
    let path = dir.join(&clip.file);
    let mut reader =
        hound::WavReader::open(&path).map_err(|error| StoreError::wav(&path, error))?;
    let from_hz = reader.spec().sample_rate;
    let samples: Vec<f32> = reader
        .samples::<i16>()
        .map_while(Result::ok)
        .map(|sample| f32::from(sample) / 32_768.0)
        .collect();
    if from_hz == rate_hz {
        return Ok(samples);
    }
    let mut resampler =
        StreamResampler::new(from_hz, rate_hz).map_err(|error| StoreError::Wav {
            path: path.clone(),
            message: error.to_string(),
        })?;
    let wanted = (samples.len() as u64 * u64::from(rate_hz) / u64::from(from_hz)) as usize;
    let delay = resampler.output_delay_samples();
    let mut out = Vec::with_capacity(wanted + delay + resampler.max_output_for(0));
    resampler.process(&samples, &mut out);
    // Zeros push the resampler's delay and last partial chunk out.
    let flush =
        vec![0.0; (from_hz as usize / 100 + 1) * 2 + delay * from_hz as usize / rate_hz as usize];
    resampler.process(&flush, &mut out);
    Ok(out.into_iter().skip(delay).take(wanted).collect())
}

/// Where mixed audio goes: interleaved samples in, a file out.
trait AudioSink {
    fn write(&mut self, interleaved: &[f32]) -> Result<(), StoreError>;
    fn finish(self: Box<Self>) -> Result<(), StoreError>;
}

struct WavSink<W: Write + std::io::Seek> {
    writer: hound::WavWriter<W>,
    path: PathBuf,
}

impl<W: Write + std::io::Seek> WavSink<W> {
    fn new(writer: W, channels: usize, rate_hz: u32, path: &Path) -> Result<Self, StoreError> {
        let spec = hound::WavSpec {
            channels: u16::try_from(channels).unwrap_or(1),
            sample_rate: rate_hz,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let writer =
            hound::WavWriter::new(writer, spec).map_err(|error| StoreError::wav(path, error))?;
        Ok(Self {
            writer,
            path: path.to_path_buf(),
        })
    }
}

fn to_i16(sample: f32) -> i16 {
    (sample * 32_767.0).round().clamp(-32_768.0, 32_767.0) as i16
}

impl<W: Write + std::io::Seek> AudioSink for WavSink<W> {
    fn write(&mut self, interleaved: &[f32]) -> Result<(), StoreError> {
        let mut writer = self.writer.get_i16_writer(interleaved.len() as u32);
        for &sample in interleaved {
            writer.write_sample(to_i16(sample));
        }
        writer
            .flush()
            .map_err(|error| StoreError::wav(&self.path, error))
    }

    fn finish(self: Box<Self>) -> Result<(), StoreError> {
        let path = self.path;
        self.writer
            .finalize()
            .map_err(|error| StoreError::wav(&path, error))
    }
}

/// The serial number of the one logical stream of an exported Ogg file.
const OGG_SERIAL: u32 = 0x5741_4c4b;

/// Opus packets in Ogg pages with the two headers RFC 7845 asks for, the last page's granule
/// position trimming the encoder's padding.
struct OggOpusSink<W: Write> {
    encoder: OpusFileEncoder,
    writer: ogg::PacketWriter<'static, W>,
    path: PathBuf,
    pre_skip: u64,
    /// Input samples per channel taken so far.
    input_frames: u64,
    /// Samples per channel encoded so far (whole 20 ms frames).
    encoded_frames: u64,
    frame: Vec<f32>,
    packet: Box<[u8; MAX_PACKET_BYTES]>,
    /// The newest packet, held back until it is known whether it ends the stream.
    held: Option<(Vec<u8>, u64)>,
}

impl<W: Write> OggOpusSink<W> {
    fn new(writer: W, channels: usize, path: &Path) -> Result<Self, StoreError> {
        let encode_error = |error: walkie_dsp::codec::CodecError| StoreError::Encode {
            path: path.to_path_buf(),
            reason: error.to_string(),
        };
        let channel_bitrate = i32::try_from(channels).unwrap_or(1);
        let mut encoder =
            OpusFileEncoder::new(channels, OPUS_BITRATE_PER_CHANNEL_BPS * channel_bitrate)
                .map_err(encode_error)?;
        let pre_skip = encoder.lookahead_samples().map_err(encode_error)? as u64;
        let mut writer = ogg::PacketWriter::new(writer);
        let io = |error| StoreError::io("write", path, error);
        let mut head = Vec::with_capacity(19);
        head.extend_from_slice(b"OpusHead");
        head.push(1);
        head.push(u8::try_from(channels).unwrap_or(1));
        head.extend_from_slice(&u16::try_from(pre_skip).unwrap_or(u16::MAX).to_le_bytes());
        head.extend_from_slice(&OPUS_RATE_HZ.to_le_bytes());
        head.extend_from_slice(&0i16.to_le_bytes());
        head.push(0);
        writer
            .write_packet(head, OGG_SERIAL, ogg::PacketWriteEndInfo::EndPage, 0)
            .map_err(io)?;
        let vendor = b"Walkie";
        let mut tags = Vec::with_capacity(8 + 4 + vendor.len() + 4);
        tags.extend_from_slice(b"OpusTags");
        tags.extend_from_slice(&(vendor.len() as u32).to_le_bytes());
        tags.extend_from_slice(vendor);
        tags.extend_from_slice(&0u32.to_le_bytes());
        writer
            .write_packet(tags, OGG_SERIAL, ogg::PacketWriteEndInfo::EndPage, 0)
            .map_err(io)?;
        let frame = Vec::with_capacity(encoder.frame_len());
        Ok(Self {
            encoder,
            writer,
            path: path.to_path_buf(),
            pre_skip,
            input_frames: 0,
            encoded_frames: 0,
            frame,
            packet: Box::new([0; MAX_PACKET_BYTES]),
            held: None,
        })
    }

    fn encode_frame(&mut self) -> Result<(), StoreError> {
        let length = self
            .encoder
            .encode(&self.frame, &mut self.packet)
            .map_err(|error| StoreError::Encode {
                path: self.path.clone(),
                reason: error.to_string(),
            })?;
        self.frame.clear();
        self.encoded_frames += walkie_dsp::FRAME_SAMPLES as u64;
        let packet = self.packet[..length].to_vec();
        if let Some((held, granule)) = self.held.replace((packet, self.encoded_frames)) {
            self.writer
                .write_packet(
                    held,
                    OGG_SERIAL,
                    ogg::PacketWriteEndInfo::NormalPacket,
                    granule,
                )
                .map_err(|error| StoreError::io("write", &self.path, error))?;
        }
        Ok(())
    }
}

impl<W: Write> AudioSink for OggOpusSink<W> {
    fn write(&mut self, interleaved: &[f32]) -> Result<(), StoreError> {
        let channels = self.encoder.channels();
        self.input_frames += (interleaved.len() / channels) as u64;
        let frame_len = self.encoder.frame_len();
        let mut rest = interleaved;
        while !rest.is_empty() {
            let take = (frame_len - self.frame.len()).min(rest.len());
            self.frame.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.frame.len() == frame_len {
                self.encode_frame()?;
            }
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<(), StoreError> {
        // Silence until the decoder, which drops the pre-skip, has every input sample.
        let frame_len = self.encoder.frame_len();
        while self.held.is_none()
            || self.encoded_frames < self.pre_skip + self.input_frames
            || !self.frame.is_empty()
        {
            self.frame.resize(frame_len, 0.0);
            self.encode_frame()?;
        }
        let io = |error| StoreError::io("write", &self.path, error);
        let last_granule = self.pre_skip + self.input_frames;
        let (packet, _) = self
            .held
            .take()
            .expect("the loop above encodes until a packet is held");
        self.writer
            .write_packet(
                packet,
                OGG_SERIAL,
                ogg::PacketWriteEndInfo::EndStream,
                last_granule,
            )
            .map_err(io)?;
        self.writer
            .inner_mut()
            .flush()
            .map_err(|error| StoreError::io("write", &self.path, error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caption_times_are_hours_minutes_seconds_and_milliseconds() {
        assert_eq!(vtt_time(0), "00:00:00.000");
        assert_eq!(vtt_time(3_723_004), "01:02:03.004");
    }

    #[test]
    fn cue_text_escapes_what_webvtt_reserves_and_drops_blank_lines() {
        assert_eq!(
            cue_text("a <b> & c --> d\n\n  second line  "),
            "a &lt;b&gt; &amp; c --&gt; d\nsecond line"
        );
    }
}
