//! Turn WAV files: written incrementally with hound, valid at every moment, repairable after a
//! crash, and able to wait in memory while the disk refuses writes.
//!
//! Why flush after every chunk: hound's `flush` rewrites the header, so a file read (or a process
//! killed) between two chunks already holds a valid WAV with every sample handed over so far.
//! It costs two small writes per chunk (see docs/benchmarks.md). After a crash, [`repair_wav`]
//! sets the header to the whole samples present; it is split into a pure planning step
//! ([`plan_wav_repair`]) that the property tests drive with arbitrary bytes.
//!
//! Files are mono 16-bit PCM with hound's canonical 44-byte header.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::error::StoreError;

/// Size of the canonical header of a mono PCM16 WAV.
pub const WAV_HEADER_BYTES: u64 = 44;
const BYTES_PER_SAMPLE: u64 = 2;

/// The spec of every turn WAV.
pub fn wav_spec(sample_rate_hz: u32) -> hound::WavSpec {
    hound::WavSpec {
        channels: 1,
        sample_rate: sample_rate_hz,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    }
}

/// The canonical 44-byte header for `sample_count` mono PCM16 samples.
pub fn canonical_header(sample_rate_hz: u32, sample_count: u64) -> [u8; 44] {
    // A RIFF file cannot declare more than 4 GiB; clamp so the RIFF size still fits.
    let data_bytes = u32::try_from(sample_count.saturating_mul(BYTES_PER_SAMPLE))
        .unwrap_or(u32::MAX)
        .min((u32::MAX - 36) & !1);
    let mut header = [0u8; 44];
    header[0..4].copy_from_slice(b"RIFF");
    header[4..8].copy_from_slice(&data_bytes.saturating_add(36).to_le_bytes());
    header[8..12].copy_from_slice(b"WAVE");
    header[12..16].copy_from_slice(b"fmt ");
    header[16..20].copy_from_slice(&16u32.to_le_bytes());
    header[20..22].copy_from_slice(&1u16.to_le_bytes());
    header[22..24].copy_from_slice(&1u16.to_le_bytes());
    header[24..28].copy_from_slice(&sample_rate_hz.to_le_bytes());
    header[28..32].copy_from_slice(&sample_rate_hz.saturating_mul(2).to_le_bytes());
    header[32..34].copy_from_slice(&2u16.to_le_bytes());
    header[34..36].copy_from_slice(&16u16.to_le_bytes());
    header[36..40].copy_from_slice(b"data");
    header[40..44].copy_from_slice(&data_bytes.to_le_bytes());
    header
}

/// What a repair will do (or did) to a WAV file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WavRepair {
    /// The file's sample rate (from its header, or the fallback for a torn header).
    pub sample_rate_hz: u32,
    /// Whole samples the file holds after the repair.
    pub sample_count: u64,
    /// The header to write at offset 0.
    pub header: [u8; 44],
    /// The file's length after the repair.
    pub repaired_len_bytes: u64,
    /// Whether the file changes at all.
    pub changed: bool,
}

/// Plans the repair of a WAV file from its first bytes (up to 44) and its length. Pure; never
/// panics. A file shorter than a header is a header torn at creation: it becomes an empty WAV at
/// `fallback_rate_hz`. A longer file must be a mono PCM16 RIFF/WAVE file with a canonical header;
/// anything else is refused rather than overwritten.
pub fn plan_wav_repair(
    head: &[u8],
    file_len_bytes: u64,
    fallback_rate_hz: u32,
) -> Result<WavRepair, String> {
    if file_len_bytes < WAV_HEADER_BYTES {
        let header = canonical_header(fallback_rate_hz, 0);
        return Ok(WavRepair {
            sample_rate_hz: fallback_rate_hz,
            sample_count: 0,
            header,
            repaired_len_bytes: WAV_HEADER_BYTES,
            changed: true,
        });
    }
    let Some(head) = head.get(..WAV_HEADER_BYTES as usize) else {
        return Err(format!(
            "only {} header bytes were given for a {file_len_bytes}-byte file",
            head.len()
        ));
    };
    let u16_at = |at: usize| u16::from_le_bytes([head[at], head[at + 1]]);
    let u32_at =
        |at: usize| u32::from_le_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
    if &head[0..4] != b"RIFF" || &head[8..12] != b"WAVE" {
        return Err("no RIFF/WAVE signature".into());
    }
    if &head[12..16] != b"fmt " || u32_at(16) != 16 || &head[36..40] != b"data" {
        return Err("not the canonical 44-byte PCM header the store writes".into());
    }
    let (format, channels, bits) = (u16_at(20), u16_at(22), u16_at(34));
    if format != 1 || channels != 1 || bits != 16 {
        return Err(format!(
            "format {format}, {channels} channels, {bits} bits (want PCM, mono, 16 bits)"
        ));
    }
    let header_rate = u32_at(24);
    let sample_rate_hz = if header_rate == 0 {
        fallback_rate_hz
    } else {
        header_rate
    };
    let max_samples = u64::from(u32::MAX - 36) / BYTES_PER_SAMPLE;
    let sample_count = ((file_len_bytes - WAV_HEADER_BYTES) / BYTES_PER_SAMPLE).min(max_samples);
    let header = canonical_header(sample_rate_hz, sample_count);
    let repaired_len_bytes = WAV_HEADER_BYTES + sample_count * BYTES_PER_SAMPLE;
    let changed = header[..] != head[..] || repaired_len_bytes != file_len_bytes;
    Ok(WavRepair {
        sample_rate_hz,
        sample_count,
        header,
        repaired_len_bytes,
        changed,
    })
}

/// Repairs a WAV file in place: the header is set to the whole samples present, a torn odd byte
/// is dropped. Returns what it did. See [`plan_wav_repair`].
pub fn repair_wav(path: &Path, fallback_rate_hz: u32) -> Result<WavRepair, StoreError> {
    let mut file = crate::files::no_follow_options()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|error| StoreError::io("open", path, error))?;
    let file_len_bytes = file
        .metadata()
        .map_err(|error| StoreError::io("inspect", path, error))?
        .len();
    let mut head = Vec::with_capacity(WAV_HEADER_BYTES as usize);
    (&mut file)
        .take(WAV_HEADER_BYTES)
        .read_to_end(&mut head)
        .map_err(|error| StoreError::io("read", path, error))?;
    let plan = plan_wav_repair(&head, file_len_bytes, fallback_rate_hz).map_err(|reason| {
        StoreError::UnrepairableWav {
            path: path.to_path_buf(),
            reason,
        }
    })?;
    if plan.changed {
        file.set_len(plan.repaired_len_bytes)
            .map_err(|error| StoreError::io("truncate", path, error))?;
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.write_all(&plan.header))
            .map_err(|error| StoreError::io("rewrite the header of", path, error))?;
        file.sync_all()
            .map_err(|error| StoreError::io("sync", path, error))?;
    }
    Ok(plan)
}

/// Sets a (closed) WAV file to its first `sample_count` samples: a barge-in's cut.
fn cut_wav(path: &Path, sample_rate_hz: u32, sample_count: u64) -> Result<(), StoreError> {
    let mut file = crate::files::no_follow_options()
        .write(true)
        .open(path)
        .map_err(|error| StoreError::io("open", path, error))?;
    file.set_len(WAV_HEADER_BYTES + sample_count * BYTES_PER_SAMPLE)
        .map_err(|error| StoreError::io("cut", path, error))?;
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.write_all(&canonical_header(sample_rate_hz, sample_count)))
        .map_err(|error| StoreError::io("rewrite the header of", path, error))
}

type Writer = hound::WavWriter<BufWriter<File>>;

/// How many samples the WAVs of one recording may hold in memory, together, while the disk
/// refuses them (a full disk). Past it, samples are dropped and counted instead of held: an
/// hour of talk to a full disk would otherwise be 660 MiB of audio in memory.
#[derive(Debug)]
pub struct UnsavedAudio {
    room_samples: AtomicUsize,
    dropped_samples: AtomicU64,
}

impl UnsavedAudio {
    pub fn new(max_samples: usize) -> Arc<UnsavedAudio> {
        Arc::new(UnsavedAudio {
            room_samples: AtomicUsize::new(max_samples),
            dropped_samples: AtomicU64::new(0),
        })
    }

    /// Samples dropped so far because the room was used up.
    pub fn dropped_samples(&self) -> u64 {
        self.dropped_samples.load(Ordering::Relaxed)
    }

    /// Takes room for up to `wanted` samples: how many may be held (the rest are dropped).
    fn hold(&self, wanted: usize) -> usize {
        let mut kept = 0;
        let _ = self
            .room_samples
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |room| {
                kept = wanted.min(room);
                Some(room - kept)
            });
        self.dropped_samples
            .fetch_add((wanted - kept) as u64, Ordering::Relaxed);
        kept
    }

    /// Gives back the room of `samples` that were written or let go.
    fn release(&self, samples: usize) {
        self.room_samples.fetch_add(samples, Ordering::Relaxed);
    }
}

/// One turn WAV being written; see the module docs.
///
/// Samples are on disk (in a valid file) when [`TurnWav::write`] returns `Ok`. On a failure they
/// stay in memory, and [`TurnWav::resume`] puts the file back to the last samples known written
/// and appends the rest.
pub struct TurnWav {
    path: PathBuf,
    sample_rate_hz: u32,
    writer: Option<Writer>,
    /// Whether the file exists with a valid header (created at least once).
    created: bool,
    /// Samples known to be in the file.
    written_samples: u64,
    /// Samples handed over but not known to be in the file (only after a failure).
    unsaved: Vec<i16>,
    /// Samples handed over and dropped: the failure lasted past the room `unsaved` shares.
    dropped_samples: u64,
    unsaved_room: Arc<UnsavedAudio>,
    failed: bool,
}

impl std::fmt::Debug for TurnWav {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnWav")
            .field("path", &self.path)
            .field("sample_rate_hz", &self.sample_rate_hz)
            .field("written_samples", &self.written_samples)
            .field("unsaved_samples", &self.unsaved.len())
            .field("dropped_samples", &self.dropped_samples)
            .finish()
    }
}

impl TurnWav {
    /// A WAV at `path`, created on disk now (an empty valid file) if the disk allows. While
    /// the disk refuses samples they are held in `unsaved_room`, shared with the recording's
    /// other WAVs.
    pub fn create(
        path: PathBuf,
        sample_rate_hz: u32,
        unsaved_room: Arc<UnsavedAudio>,
    ) -> (TurnWav, Result<(), StoreError>) {
        let mut wav = TurnWav {
            path,
            sample_rate_hz,
            writer: None,
            created: false,
            written_samples: 0,
            unsaved: Vec::new(),
            dropped_samples: 0,
            unsaved_room,
            failed: false,
        };
        let result = wav.open_writer();
        if result.is_err() {
            wav.failed = true;
        }
        (wav, result)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn sample_rate_hz(&self) -> u32 {
        self.sample_rate_hz
    }

    /// Every sample handed over: saved, held or dropped.
    pub fn sample_count(&self) -> u64 {
        self.written_samples + self.unsaved.len() as u64 + self.dropped_samples
    }

    /// Holds samples the disk did not take, as far as the shared room allows.
    fn hold_unsaved(&mut self, samples: &[i16]) {
        let kept = self.unsaved_room.hold(samples.len());
        self.unsaved.extend_from_slice(&samples[..kept]);
        self.dropped_samples += (samples.len() - kept) as u64;
    }

    /// Lets go of the held samples past the first `keep`, giving their room back.
    fn let_go_unsaved(&mut self, keep: usize) {
        let let_go = self.unsaved.len().saturating_sub(keep);
        self.unsaved.truncate(keep);
        self.unsaved_room.release(let_go);
    }

    fn open_writer(&mut self) -> Result<(), StoreError> {
        let writer = if self.created {
            cut_wav(&self.path, self.sample_rate_hz, self.written_samples)?;
            hound::WavWriter::append(&self.path)
        } else {
            crate::files::create_private_file(&self.path)
                .map_err(hound::Error::IoError)
                .and_then(|file| {
                    hound::WavWriter::new(BufWriter::new(file), wav_spec(self.sample_rate_hz))
                })
                .and_then(|mut writer| {
                    // Puts the header on disk now: an empty turn is a valid empty WAV.
                    writer.flush()?;
                    Ok(writer)
                })
        }
        .map_err(|error| StoreError::wav(&self.path, error))?;
        self.created = true;
        self.writer = Some(writer);
        Ok(())
    }

    /// Appends samples and flushes (the header stays valid). While failing, samples only queue.
    pub fn write(&mut self, samples: &[i16]) -> Result<(), StoreError> {
        if self.failed {
            self.hold_unsaved(samples);
            return Ok(());
        }
        if self.writer.is_none()
            && let Err(error) = self.open_writer()
        {
            self.fail_with(samples);
            return Err(error);
        }
        let writer = self
            .writer
            .as_mut()
            .expect("open_writer succeeded, so the writer is present");
        match write_samples(writer, samples) {
            Ok(()) => {
                self.written_samples += samples.len() as u64;
                Ok(())
            }
            Err(error) => {
                self.fail_with(samples);
                Err(StoreError::wav(&self.path, error))
            }
        }
    }

    fn fail_with(&mut self, samples: &[i16]) {
        self.hold_unsaved(samples);
        self.failed = true;
        // hound finalizes on drop and ignores errors there; the file is cut back on resume.
        self.writer = None;
    }

    /// Retries after a failure: cuts the file back to the samples known written, appends the
    /// queued ones. `Ok` means the file holds every sample handed over.
    pub fn resume(&mut self) -> Result<(), StoreError> {
        if !self.failed {
            return Ok(());
        }
        self.writer = None;
        self.open_writer()?;
        let writer = self
            .writer
            .as_mut()
            .expect("open_writer succeeded, so the writer is present");
        if let Err(error) = write_samples(writer, &self.unsaved) {
            self.writer = None;
            return Err(StoreError::wav(&self.path, error));
        }
        self.written_samples += self.unsaved.len() as u64;
        self.let_go_unsaved(0);
        self.failed = false;
        Ok(())
    }

    /// Keeps only the first `sample_count` samples (a barge-in's cut). No-op if fewer exist.
    /// Dropped samples count as the newest: a cut within them keeps all that is held.
    pub fn cut_to(&mut self, sample_count: u64) -> Result<(), StoreError> {
        if sample_count >= self.sample_count() {
            return Ok(());
        }
        let held = self.written_samples + self.unsaved.len() as u64;
        self.dropped_samples = sample_count.saturating_sub(held);
        if sample_count >= self.written_samples {
            self.let_go_unsaved((sample_count - self.written_samples) as usize);
            return Ok(());
        }
        self.let_go_unsaved(0);
        if let Some(writer) = self.writer.take() {
            writer
                .finalize()
                .map_err(|error| StoreError::wav(&self.path, error))?;
        }
        self.written_samples = sample_count;
        if self.failed {
            return Ok(());
        }
        // Reopens at the cut (open_writer cuts the file to `written_samples` first).
        if let Err(error) = self.open_writer() {
            self.failed = true;
            return Err(error);
        }
        Ok(())
    }

    /// Finishes the file and syncs it to disk. Returns the sample count on success; on failure
    /// the WAV stays queued and can be closed again after [`TurnWav::resume`].
    pub fn close(&mut self) -> Result<u64, StoreError> {
        self.resume()?;
        if let Some(writer) = self.writer.take() {
            writer
                .finalize()
                .map_err(|error| StoreError::wav(&self.path, error))?;
        }
        let file =
            File::open(&self.path).map_err(|error| StoreError::io("open", &self.path, error))?;
        file.sync_all()
            .map_err(|error| StoreError::io("sync", &self.path, error))?;
        Ok(self.written_samples)
    }
}

impl Drop for TurnWav {
    fn drop(&mut self) {
        // The room it held goes back to the recording's other WAVs.
        self.unsaved_room.release(self.unsaved.len());
    }
}

fn write_samples(writer: &mut Writer, samples: &[i16]) -> Result<(), hound::Error> {
    if samples.is_empty() {
        return Ok(());
    }
    // hound's bulk path buffers up to the count it was given; write in bounded pieces.
    for piece in samples.chunks(4096) {
        let mut bulk = writer.get_i16_writer(piece.len() as u32);
        for &sample in piece {
            bulk.write_sample(sample);
        }
        bulk.flush()?;
    }
    writer.flush()
}

/// Reads a turn WAV's samples.
pub fn read_wav_samples(path: &Path) -> Result<(u32, Vec<i16>), StoreError> {
    let mut reader = hound::WavReader::open(path).map_err(|error| StoreError::wav(path, error))?;
    let rate = reader.spec().sample_rate;
    let samples = reader
        .samples::<i16>()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| StoreError::wav(path, error))?;
    Ok((rate, samples))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE_HZ: u32 = 1_000;

    /// A WAV in a folder that does not exist yet: every write fails until it does.
    fn wav_in_missing_folder(
        root: &Path,
        name: &str,
        room: &Arc<UnsavedAudio>,
    ) -> (PathBuf, TurnWav) {
        let path = root.join("not-yet").join(name);
        let (wav, created) = TurnWav::create(path.clone(), RATE_HZ, room.clone());
        assert!(
            created.is_err(),
            "the folder is missing, so the file cannot be made"
        );
        (path, wav)
    }

    #[test]
    fn while_the_disk_refuses_audio_the_wavs_hold_only_their_shared_room_and_count_the_rest() {
        let root = tempfile::tempdir().expect("a temporary folder");
        let room = UnsavedAudio::new(1_000);
        let (path, mut user) = wav_in_missing_folder(root.path(), "user.wav", &room);
        let (_, mut assistant) = wav_in_missing_folder(root.path(), "assistant.wav", &room);
        let second: Vec<i16> = (0..1_000).map(|n| n as i16).collect();
        for _ in 0..3 {
            user.write(&second)
                .expect("a refused write is held, not an error");
        }
        assistant.write(&second[..200]).expect("held or dropped");
        assert_eq!(
            user.unsaved.len(),
            1_000,
            "the user's WAV holds the whole room"
        );
        assert_eq!(assistant.unsaved.len(), 0, "and leaves none for the other");
        assert_eq!(room.dropped_samples(), 2_200);
        assert_eq!(
            user.sample_count(),
            3_000,
            "every sample handed over is counted"
        );

        std::fs::create_dir(root.path().join("not-yet")).expect("the folder appears");
        user.resume().expect("saving resumes");
        let (_, on_disk) = read_wav_samples(&path).expect("a valid WAV");
        assert_eq!(on_disk, second, "the file holds the second that was kept");
        assistant.resume().expect("saving resumes");
        // The room came back: a new refusal is held again.
        let (_, mut later) = wav_in_missing_folder(root.path(), "later/none.wav", &room);
        later.write(&second[..500]).expect("held");
        assert_eq!(later.unsaved.len(), 500);
        drop(later);
        let (_, mut last) = wav_in_missing_folder(root.path(), "later/last.wav", &room);
        last.write(&second).expect("held");
        assert_eq!(
            last.unsaved.len(),
            1_000,
            "a dropped WAV gives its room back"
        );
    }
}
