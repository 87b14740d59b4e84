//! Contract violations on the data channel get the API's typed `error` events, over real
//! WebRTC: `model` in a `session.update`, and a voice change once the session has produced
//! audio. Each refused update is refused whole: nothing of it applies.

mod common;

use std::time::Duration;

use common::{Connected, calls, connect, multipart, offer, send, until};
use serde_json::{Value, json};
use walkie_local::scenario::{encode_opus, speech_like};
use walkie_local::{LocalProvider, ProviderConfig};

/// Sends an update the provider must refuse with `code`; then shows, by a harmless update, the
/// session as it is (nothing of the refused update applied).
async fn refused_whole(peer: &mut walkie_rtc::Peer, update: &str, code: &str) -> Value {
    send(peer, update).await;
    let (error, _) = until(peer, "error").await;
    assert_eq!(error["error"]["type"], "invalid_request_error");
    assert_eq!(error["error"]["code"], code);
    assert_eq!(error["error"]["event_id"], "evt_refused");
    send(
        peer,
        r#"{"type":"session.update","session":{"type":"realtime"}}"#,
    )
    .await;
    let (updated, _) = until(peer, "session.updated").await;
    updated["session"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_in_session_update_and_a_voice_change_after_audio_are_typed_errors() {
    let provider = LocalProvider::start(ProviderConfig::default())
        .await
        .expect("the provider listens");
    let pending = offer().await;
    let session = json!({
        "type": "realtime",
        "model": "gpt-realtime",
        "instructions": "Kept.",
        "audio": {"input": {"turn_detection": null}, "output": {"voice": "marin"}}
    });
    let request = calls(&provider).multipart(multipart(pending.sdp(), Some(&session)));
    let Connected { mut peer, .. } = connect(request, pending).await;
    until(&mut peer, "session.created").await;

    let session = refused_whole(
        &mut peer,
        r#"{"type":"session.update","event_id":"evt_refused","session":{"type":"realtime","model":"gpt-realtime","instructions":"Lost.","audio":{"input":{"turn_detection":{"type":"server_vad"}}}}}"#,
        "invalid_value",
    )
    .await;
    assert_eq!(session["instructions"], "Kept.");
    assert_eq!(session["audio"]["input"]["turn_detection"], Value::Null);

    // One push-to-talk turn: the reply is audio.
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    for frame in encode_opus(&speech_like(600)).expect("encodes") {
        tick.tick().await;
        peer.handle.send_audio(frame, 960).expect("the call is up");
    }
    send(&peer, r#"{"type":"input_audio_buffer.commit"}"#).await;
    send(&peer, r#"{"type":"response.create"}"#).await;
    until(&mut peer, "output_audio_buffer.started").await;

    let session = refused_whole(
        &mut peer,
        r#"{"type":"session.update","event_id":"evt_refused","session":{"type":"realtime","instructions":"Lost.","audio":{"output":{"voice":"cedar"}}}}"#,
        "cannot_update_voice",
    )
    .await;
    assert_eq!(session["instructions"], "Kept.");
    assert_eq!(session["audio"]["output"]["voice"], "marin");
    peer.handle.close().await;
    provider.shutdown().await;
}
