//! Settings' voice preview: one short reply in the voice the form names, played on the chosen
//! speaker, from a call of its own placed beside any call under way and hung up after it.
//!
//! Why a call of its own: a session's voice is fixed once it has spoken, and a preview must
//! not touch the conversation. The call is placed through the app's one [`Dialler`]; what the
//! preview asks, when it is over and what it says are [`walkie_conversation::VoicePreview`]'s
//! decisions; this task carries them. The microphone is never opened: the engine starts with
//! it closed and is never asked to capture.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::{Notify, oneshot};
use walkie_audio::engine::{Engine, EngineConfig, EngineEvent};
use walkie_conversation::{PreviewInput, PreviewOutput, VoicePreview};
use walkie_rtc::{Call, CallEvent};

use crate::CommandError;
use crate::dialler::Dialler;
use crate::plan::Provider;
use crate::settings::Settings;
use crate::settings_commands::{SaveError, SettingsState, TypedKey, form_plan};

/// The preview playing now, if any: sending on it stops it.
#[derive(Default)]
pub(crate) struct Previewing {
    playing: Mutex<Option<oneshot::Sender<()>>>,
}

impl Previewing {
    /// Stops the preview playing, if any, and keeps `next` as the one playing now.
    fn replace(&self, next: Option<oneshot::Sender<()>>) {
        let mut playing = self
            .playing
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(stop) = playing.take() {
            let _ = stop.send(());
        }
        *playing = next;
    }
}

/// Plays one short reply in the form's voice on the form's speaker, with the provider and key
/// the form holds (nothing is saved, the call under way is not touched). A preview already
/// playing is stopped first. The answer is a sentence for the form.
#[tauri::command]
pub(crate) async fn preview_voice(
    state: tauri::State<'_, SettingsState>,
    previewing: tauri::State<'_, Previewing>,
    dialler: tauri::State<'_, Dialler>,
    settings: Settings,
    key: Option<TypedKey>,
) -> Result<String, SaveError> {
    let voice = settings.voice.clone();
    let plan = form_plan(&state, settings, key).await?;
    let not_played = |why: String| CommandError::TestCall(format!("No preview: {why}."));
    let provider = plan
        .provider
        .clone()
        .map_err(|error| not_played(error.to_string()))?;
    if provider == Provider::Local {
        return Ok("The offline demo has no voices: it plays your own words back.".to_owned());
    }
    if plan.family() == walkie_session::turn::ProviderFamily::Live {
        // A Live session speaks when its model decides to: there is no reply to ask for.
        return Ok(format!(
            "GPT-Live has no preview: save, then hold the key and say hello to hear {voice}."
        ));
    }
    let (stop, stopped) = oneshot::channel();
    previewing.replace(Some(stop));
    let engine = EngineConfig {
        privacy_mic: true,
        echo_cancellation: false,
        ..plan.engine.clone()
    };
    let machine = VoicePreview::new(voice.clone(), provider.label());
    let call = dialler
        .inner()
        .clone()
        .connect(plan, Vec::new(), false)
        .await;
    let answer = match call {
        Ok(mut call) => {
            let answer = play(&mut call, machine, engine, stopped).await;
            if let Err(error) = call.hangup().await {
                log::info!("the preview call did not hang up cleanly: {error}");
            }
            answer
        }
        Err(failure) => Err(format!(
            "The preview of {voice} from {} failed. {}",
            provider.label(),
            failure.sentence
        )),
    };
    answer.map_err(|why| {
        log::info!("the voice preview failed: {why}");
        CommandError::TestCall(why).into()
    })
}

/// Stops the preview playing, if any.
#[tauri::command]
pub(crate) fn stop_voice_preview(previewing: tauri::State<'_, Previewing>) {
    previewing.replace(None);
}

/// Carries the preview machine's outputs on the answered call and its engine, and feeds it
/// what they report, until it finishes: its answer for the form.
async fn play(
    call: &mut Call,
    mut machine: VoicePreview,
    engine: EngineConfig,
    mut stopped: oneshot::Receiver<()>,
) -> Result<String, String> {
    let started = Instant::now();
    let now_ms = move || started.elapsed().as_millis() as u64;
    let woken = Arc::new(Notify::new());
    let waker = woken.clone();
    let (engine, events) =
        match Engine::start(engine, |_: &[u8], _: u32| {}, move || waker.notify_one()) {
            Ok(started) => started,
            Err(error) => {
                let reason = error.to_string();
                machine.handle_input(PreviewInput::SpeakerUnavailable { reason }, now_ms());
                return match machine.poll_output() {
                    Some(PreviewOutput::Finished(answer)) => answer,
                    other => unreachable!("a preview with no speaker is over, not {other:?}"),
                };
            }
        };
    machine.handle_input(PreviewInput::Answered, now_ms());
    loop {
        while let Some(output) = machine.poll_output() {
            match output {
                PreviewOutput::Send { event, event_id } => {
                    if let Err(error) = call.send(&event, Some(event_id)).await {
                        let reason = Some(format!("the reply could not be asked for: {error}"));
                        machine.handle_input(PreviewInput::CallEnded { reason }, now_ms());
                    }
                }
                PreviewOutput::Finished(answer) => return answer,
            }
        }
        let deadline_ms = machine.next_deadline_ms();
        let input = tokio::select! {
            _ = &mut stopped => PreviewInput::Stop,
            () = sleep_until(deadline_ms, now_ms()) => PreviewInput::Tick,
            event = call.next_event() => match event {
                Some(CallEvent::Text(text)) => PreviewInput::ServerText(text),
                Some(CallEvent::Audio(audio)) => {
                    let (sequence, timestamp) = (audio.sequence_number, audio.timestamp);
                    engine.receive_rtp(sequence, timestamp, &audio.payload, audio.received_at);
                    continue;
                }
                Some(CallEvent::Ended(reason)) => PreviewInput::CallEnded {
                    reason: Some(crate::edges::describe(&reason)),
                },
                None => PreviewInput::CallEnded { reason: None },
                Some(_) => continue,
            },
            () = woken.notified() => {
                for event in events.try_iter() {
                    let input = match event {
                        EngineEvent::AssistantAudio(chunk) => PreviewInput::AssistantAudio(chunk),
                        EngineEvent::PlaybackDrained => PreviewInput::Drained,
                        EngineEvent::DeviceUnavailable { reason, .. } => {
                            PreviewInput::SpeakerUnavailable { reason }
                        }
                        _ => continue,
                    };
                    machine.handle_input(input, now_ms());
                }
                continue;
            }
        };
        machine.handle_input(input, now_ms());
    }
}

/// Waits until `deadline_ms` (forever without one), `now_ms` being now.
async fn sleep_until(deadline_ms: Option<u64>, now_ms: u64) {
    match deadline_ms {
        Some(deadline_ms) => {
            let wait_ms = deadline_ms.saturating_sub(now_ms);
            tokio::time::sleep(std::time::Duration::from_millis(wait_ms)).await
        }
        None => std::future::pending().await,
    }
}
