//! Settings' voice preview: one short reply in the voice the form names, played on the chosen
//! speaker, from a call of its own placed beside any call under way and hung up after it.
//!
//! Why a call of its own: a session's voice is fixed once it has spoken, and a preview must
//! not touch the conversation. The reply is out of band (`conversation: "none"`), so it is not
//! even part of the preview call's own conversation. The microphone is never opened: the
//! engine starts with it closed and is never asked to capture.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};
use walkie_audio::engine::{Engine, EngineConfig, EngineEvent};
use walkie_openai::{ClientEvent, Modality, ResponseConfig, ServerEvent};
use walkie_rtc::{Call, CallEvent};

use crate::CommandError;
use crate::plan::Provider;
use crate::settings::Settings;
use crate::settings_commands::{SaveError, SettingsState, TypedKey, form_plan};

/// What the model is asked to say.
const PREVIEW_INSTRUCTIONS: &str = "Say, in one short friendly sentence and nothing else, \
    that this is how you sound.";
/// Once its reply is asked for, a preview ends by itself after this long, however it is going
/// (placing the call and hanging up are bounded by the call's own timeouts).
const LONGEST_PREVIEW: Duration = Duration::from_secs(30);

/// The preview playing now, if any: sending on it stops it.
#[derive(Default)]
pub(crate) struct VoicePreview {
    playing: Mutex<Option<oneshot::Sender<()>>>,
}

impl VoicePreview {
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

/// How a preview went.
#[derive(Debug)]
enum Preview {
    /// The reply played: what it said, and how much of its audio went to the speaker.
    Played { transcript: String, played_ms: u64 },
    /// The user stopped it (or started another).
    Stopped,
}

/// Why a preview did not play: a sentence that says what to do.
#[derive(Debug)]
struct PreviewFailed(String);

/// Plays one short reply in the form's voice on the form's speaker, with the provider and key
/// the form holds (nothing is saved, the call under way is not touched). A preview already
/// playing is stopped first. The answer is a sentence for the form.
#[tauri::command]
pub(crate) async fn preview_voice(
    state: tauri::State<'_, SettingsState>,
    preview: tauri::State<'_, VoicePreview>,
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
    let endpoint = provider
        .endpoint(None)
        .map_err(|error| not_played(error.to_string()))?;
    let (stop, stopped) = oneshot::channel();
    preview.replace(Some(stop));
    let engine = EngineConfig {
        privacy_mic: true,
        echo_cancellation: false,
        ..plan.engine.clone()
    };
    let outcome = play(plan.call_config(endpoint), engine, stopped).await;
    match outcome {
        Ok(Preview::Played {
            transcript,
            played_ms,
        }) => {
            let seconds = played_ms as f64 / 1000.0;
            let said = transcript.trim();
            Ok(if said.is_empty() {
                format!("Played {seconds:.1} s of {voice}.")
            } else {
                format!("{voice} ({seconds:.1} s): “{said}”")
            })
        }
        Ok(Preview::Stopped) => Ok("Stopped.".to_owned()),
        Err(PreviewFailed(why)) => {
            log::info!("the voice preview failed: {why}");
            Err(CommandError::TestCall(format!(
                "The preview of {voice} from {} failed. {why}",
                provider.label()
            ))
            .into())
        }
    }
}

/// Stops the preview playing, if any.
#[tauri::command]
pub(crate) fn stop_voice_preview(preview: tauri::State<'_, VoicePreview>) {
    preview.replace(None);
}

/// Places the call, asks for the reply and plays it until it has all been heard (or the user
/// stops it, or [`LONGEST_PREVIEW`] passes), then hangs up.
async fn play(
    config: walkie_rtc::CallConfig,
    engine: EngineConfig,
    stopped: oneshot::Receiver<()>,
) -> Result<Preview, PreviewFailed> {
    let mut call = Call::connect(config)
        .await
        .map_err(|error| PreviewFailed(error.user_sentence()))?;
    let outcome = listen(&mut call, engine, stopped).await;
    if let Err(error) = call.hangup().await {
        log::info!("the preview call did not hang up cleanly: {error}");
    }
    outcome
}

async fn listen(
    call: &mut Call,
    engine: EngineConfig,
    mut stopped: oneshot::Receiver<()>,
) -> Result<Preview, PreviewFailed> {
    let woken = Arc::new(Notify::new());
    let waker = woken.clone();
    let (engine, events) = Engine::start(engine, |_: &[u8], _: u32| {}, move || waker.notify_one())
        .map_err(|error| PreviewFailed(format!("The speaker could not be used: {error}.")))?;
    let reply = ClientEvent::ResponseCreate {
        response: Some(ResponseConfig {
            conversation: Some("none".to_owned()),
            output_modalities: Some(vec![Modality::Audio]),
            instructions: Some(PREVIEW_INSTRUCTIONS.to_owned()),
            ..ResponseConfig::default()
        }),
    };
    call.send(&reply, Some("walkie_voice_preview"))
        .await
        .map_err(|error| PreviewFailed(format!("Walkie could not ask for the reply: {error}.")))?;
    let give_up = tokio::time::sleep(LONGEST_PREVIEW);
    tokio::pin!(give_up);
    let mut transcript = String::new();
    let mut played_ms = 0;
    // The provider has sent the whole reply (its audio ended, or the response is done).
    let mut all_sent = false;
    loop {
        tokio::select! {
            _ = &mut stopped => return Ok(Preview::Stopped),
            () = &mut give_up => {
                return if played_ms > 0 {
                    Ok(Preview::Played { transcript, played_ms })
                } else {
                    Err(PreviewFailed(
                        "No audio came within 30 seconds: try again, or check the provider's \
                         status page."
                            .to_owned(),
                    ))
                };
            }
            event = call.next_event() => match event {
                Some(CallEvent::Text(text)) => match walkie_openai::decode_server_event(&text) {
                    Ok(ServerEvent::OutputAudioTranscriptDelta { delta, .. }) => {
                        transcript.push_str(&delta);
                    }
                    Ok(ServerEvent::OutputAudioBufferStopped { .. }) => all_sent = true,
                    Ok(ServerEvent::ResponseDone { .. }) if played_ms == 0 => {
                        // Done before any audio played: the rest is what is in flight.
                        all_sent = true;
                    }
                    Ok(ServerEvent::Error { error }) => {
                        return Err(PreviewFailed(format!(
                            "The provider refused the reply: {}",
                            error.message
                        )));
                    }
                    // The preview is only its reply; other events, and text Walkie cannot
                    // read, change nothing here.
                    _ => {}
                },
                Some(CallEvent::Audio(audio)) => {
                    engine.receive_rtp(
                        audio.sequence_number,
                        audio.timestamp,
                        &audio.payload,
                        audio.received_at,
                    );
                }
                Some(CallEvent::Ended(_)) | None if played_ms > 0 => {
                    return Ok(Preview::Played { transcript, played_ms });
                }
                Some(CallEvent::Ended(reason)) => {
                    return Err(PreviewFailed(format!(
                        "The call ended before the reply ({}): try again.",
                        crate::edges::describe(&reason)
                    )));
                }
                None => {
                    return Err(PreviewFailed(
                        "The call ended before the reply: try again.".to_owned(),
                    ));
                }
                Some(_) => {}
            },
            () = woken.notified() => {
                for event in events.try_iter() {
                    match event {
                        // The engine plays what it decodes, from the reply's first sound on;
                        // decoded call audio is 48 kHz mono.
                        EngineEvent::AssistantAudio(chunk)
                            if played_ms > 0 || walkie_session::turn::is_sounding(&chunk) =>
                        {
                            played_ms += chunk.samples().len() as u64 * 1000 / 48_000;
                        }
                        EngineEvent::PlaybackDrained if all_sent && played_ms > 0 => {
                            return Ok(Preview::Played { transcript, played_ms });
                        }
                        EngineEvent::DeviceUnavailable { reason, .. } => {
                            return Err(PreviewFailed(format!(
                                "The speaker could not be opened ({reason}): choose another \
                                 in Settings."
                            )));
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}
