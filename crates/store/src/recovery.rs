//! Recovery after an unclean stop: nothing closed is ever lost, and what was open is closed.
//!
//! A conversation needs recovery when its `.writing` marker is still there or its journal does
//! not end with a close record. Recovery then, in this order: cuts the journal's torn last line;
//! sets every turn WAV's header to the whole samples present; closes what the journal left open
//! (session parts and AG-UI messages as interrupted, the active run, the open turns, recording
//! the WAV sizes found); appends a `recovered` and a `closed` record; regenerates the
//! transcripts; removes the marker. Each step is idempotent, so a recovery that is itself killed
//! is simply run again. Times written by recovery are the conversation's last known time, so a
//! conversation recovered a week later does not seem to last a week.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use walkie_agui::event::{RunFinished, TextMessageEnd};
use walkie_agui::{Event, JsonObject};
use walkie_session::Speaker;

use crate::conversation::{Conversation, turn_wav_file};
use crate::error::StoreError;
use crate::files::{TURNS_DIR, WRITING_MARKER_FILE, write_transcripts};
use crate::journal::{
    AudioSource, GarbageLine, JOURNAL_FILE, JournalFile, ParsedJournal, Record, Recovered,
    WavClosed, read_journal,
};
use crate::wav::{WavRepair, repair_wav};

/// What recovering one folder did.
#[derive(Debug)]
pub struct RecoveryReport {
    /// The conversation folder.
    pub dir: PathBuf,
    /// What was mended (also journaled); `None` when the folder needed nothing or was removed.
    pub recovered: Option<Recovered>,
    /// Lines of the journal that are not records (kept, skipped).
    pub garbage: Vec<GarbageLine>,
    /// WAV files whose header or length changed, with what the repair found.
    pub wavs_repaired: Vec<(PathBuf, WavRepair)>,
    /// WAV files that could not be repaired (left untouched).
    pub wav_problems: Vec<StoreError>,
    /// The folder held no record at all (killed while being created) and was removed.
    pub removed_empty: bool,
}

/// Whether the folder was left by an unclean stop.
pub fn needs_recovery(dir: &Path) -> bool {
    if dir.join(WRITING_MARKER_FILE).exists() {
        return true;
    }
    match read_journal(&dir.join(JOURNAL_FILE)) {
        Ok(parsed) => !parsed.closed_cleanly() || parsed.torn_tail_bytes > 0,
        Err(_) => false,
    }
}

/// Recovers one conversation folder; see the module docs. `now_unix_ms` stamps the `recovered`
/// record only.
pub fn recover_conversation(dir: &Path, now_unix_ms: i64) -> Result<RecoveryReport, StoreError> {
    let mut report = RecoveryReport {
        dir: dir.to_path_buf(),
        recovered: None,
        garbage: Vec::new(),
        wavs_repaired: Vec::new(),
        wav_problems: Vec::new(),
        removed_empty: false,
    };
    let journal_path = dir.join(JOURNAL_FILE);
    let parsed = match read_journal(&journal_path) {
        Ok(parsed) => parsed,
        Err(error) if error.io_kind() == Some(std::io::ErrorKind::NotFound) => {
            ParsedJournal::default()
        }
        Err(error) => return Err(error),
    };
    report.garbage = parsed.garbage.clone();
    let Some(started) = parsed.started().cloned() else {
        if parsed.records.is_empty() && parsed.garbage.is_empty() && !holds_audio(dir) {
            fs::remove_dir_all(dir).map_err(|error| StoreError::io("remove", dir, error))?;
            report.removed_empty = true;
            return Ok(report);
        }
        return Err(StoreError::NotAConversation {
            path: dir.to_path_buf(),
            reason: "its journal does not begin with a start record".into(),
        });
    };
    let mut model = Conversation::from_records(parsed.records.iter().map(|(_, record)| record));
    // A WAV whose header cannot be read is taken to be at the rates in force last.
    let fallback_rates_hz = model.sample_rates_hz().unwrap_or((
        started.user_sample_rate_hz,
        started.assistant_sample_rate_hz,
    ));
    let marker = dir.join(WRITING_MARKER_FILE);

    if !parsed.closed_cleanly() || parsed.torn_tail_bytes > 0 || parsed.missing_final_newline {
        let mut journal = JournalFile::open_for_repair(&journal_path, &parsed)?;
        let open_wavs = repair_wavs(dir, &model, fallback_rates_hz, &mut report);
        if !parsed.closed_cleanly() {
            let last_unix_ms = model.last_unix_ms();
            let recovered = Recovered {
                unix_ms: now_unix_ms,
                torn_bytes_dropped: parsed.torn_tail_bytes,
                garbage_lines: parsed.garbage.len() as u64,
                messages_closed: model.open_messages().map(str::to_owned).collect(),
                parts_closed: model.open_parts().map(|part| part.0).collect(),
                turns_closed: model.open_turns().map(|turn| turn.turn).collect(),
            };
            let mut records = vec![Record::Recovered(recovered.clone())];
            for message_id in &recovered.messages_closed {
                let mut metadata = JsonObject::new();
                metadata.insert("interrupted".into(), Value::Bool(true));
                records.push(Record::Agui {
                    event: Event::TextMessageEnd(TextMessageEnd {
                        message_id: message_id.clone(),
                        subagent_run_id: None,
                        metadata: Some(metadata),
                        timestamp: Some(last_unix_ms),
                        raw_event: None,
                    }),
                });
            }
            if let Some((thread_id, run_id)) = model.active_run() {
                records.push(Record::Agui {
                    event: Event::RunFinished(Box::new(RunFinished {
                        thread_id: thread_id.to_owned(),
                        run_id: run_id.to_owned(),
                        result: None,
                        outcome: None,
                        usage: None,
                        timestamp: Some(last_unix_ms),
                        raw_event: None,
                    })),
                });
            }
            for closed in open_wavs {
                records.push(Record::WavClosed(WavClosed {
                    unix_ms: last_unix_ms,
                    ..closed
                }));
            }
            for turn in &recovered.turns_closed {
                records.push(Record::TurnEnded {
                    turn: *turn,
                    unix_ms: last_unix_ms,
                    interrupted: true,
                });
            }
            records.push(Record::Closed {
                unix_ms: last_unix_ms,
            });
            for record in &records {
                journal.append(record)?;
                model.apply(record);
            }
            report.recovered = Some(recovered);
        }
    } else {
        repair_wavs(dir, &model, fallback_rates_hz, &mut report);
    }
    write_transcripts(dir, &model)?;
    match fs::remove_file(&marker) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(StoreError::io("remove", &marker, error)),
    }
    Ok(report)
}

/// Repairs every WAV of the folder's turns; returns the close records owed for WAVs of turns that
/// did not record one (open turns), with the samples found.
fn repair_wavs(
    dir: &Path,
    model: &Conversation,
    (user_rate_hz, assistant_rate_hz): (u32, u32),
    report: &mut RecoveryReport,
) -> Vec<WavClosed> {
    let mut owed = Vec::new();
    for turn in model.turns() {
        for speaker in [Speaker::User, Speaker::Assistant] {
            let path = dir.join(turn_wav_file(turn.turn, speaker));
            if !path.exists() {
                continue;
            }
            let fallback_rate_hz = match speaker {
                Speaker::User => user_rate_hz,
                Speaker::Assistant => assistant_rate_hz,
            };
            match repair_wav(&path, fallback_rate_hz) {
                Ok(repair) => {
                    let recorded = match speaker {
                        Speaker::User => &turn.user_wav,
                        Speaker::Assistant => &turn.assistant_wav,
                    };
                    if recorded.is_none() {
                        owed.push(WavClosed {
                            turn: turn.turn,
                            speaker,
                            sample_count: repair.sample_count,
                            sample_rate_hz: repair.sample_rate_hz,
                            source: if repair.sample_count == 0 {
                                AudioSource::Empty
                            } else {
                                AudioSource::Recovered
                            },
                            unix_ms: 0,
                            audio_start_unix_ms: None,
                        });
                    }
                    if repair.changed {
                        report.wavs_repaired.push((path, repair));
                    }
                }
                Err(error) => report.wav_problems.push(error),
            }
        }
    }
    owed
}

fn holds_audio(dir: &Path) -> bool {
    fs::read_dir(dir.join(TURNS_DIR))
        .map(|mut entries| entries.next().is_some())
        .unwrap_or(false)
}
