//! The signalling server: `POST /v1/realtime/calls` (SDP offer in, SDP answer out, call id in
//! `Location`) and `POST /v1/realtime/calls/{id}/hangup`, on 127.0.0.1 only.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::json;
use tokio::sync::{Mutex, oneshot};
use walkie_rtc::{PeerConfig, peer};

pub(crate) struct Shared {
    pub token: Option<String>,
    pub peer: PeerConfig,
    pub faults: Vec<crate::fault::Fault>,
    pub calls: Mutex<HashMap<String, oneshot::Sender<()>>>,
    pub next_call: AtomicU64,
    pub calls_total: AtomicU64,
}

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/realtime/calls", post(create_call))
        .route("/v1/realtime/calls/{call_id}/hangup", post(hangup))
        // The retired beta SDP endpoint answers as the GA server does.
        .route("/v1/realtime", post(beta_endpoint))
        .with_state(shared)
}

fn error(status: StatusCode, kind: &str, code: &str, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": kind, "code": code, "param": null}});
    (status, axum::Json(body)).into_response()
}

/// `Some(refusal)` when the provider wants a token and the request lacks the right one.
fn refusal(shared: &Shared, headers: &HeaderMap) -> Option<Response> {
    let token = shared.token.as_ref()?;
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    if presented == Some(token.as_str()) {
        None
    } else {
        Some(error(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            "invalid_api_key",
            "Incorrect API key provided for the local provider.",
        ))
    }
}

async fn create_call(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refused) = refusal(&shared, &headers) {
        return refused;
    }
    let is_sdp = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/sdp"));
    if !is_sdp {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_request_error",
            "unsupported_content_type",
            "The local provider takes the SDP offer as Content-Type: application/sdp.",
        );
    }
    let Ok(offer) = std::str::from_utf8(&body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "invalid_offer",
            "The SDP offer is not UTF-8 text.",
        );
    };
    let (peer, answer) = match peer::answer(&shared.peer, offer).await {
        Ok(answered) => answered,
        Err(refused) => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "invalid_offer",
                &refused.to_string(),
            );
        }
    };
    let number = shared.next_call.fetch_add(1, Ordering::Relaxed) + 1;
    let call_id = format!("rtc_local_{number:06}_{:08x}", rand::random::<u32>());
    let (hangup_tx, hangup_rx) = oneshot::channel();
    shared.calls.lock().await.insert(call_id.clone(), hangup_tx);
    shared.calls_total.fetch_add(1, Ordering::Relaxed);
    let task_shared = shared.clone();
    let task_id = call_id.clone();
    let faults = crate::fault::FaultPlan::new(shared.faults.clone());
    tokio::spawn(async move {
        crate::call::run(task_id.clone(), peer, hangup_rx, faults).await;
        task_shared.calls.lock().await.remove(&task_id);
    });
    (
        StatusCode::CREATED,
        [
            (header::CONTENT_TYPE, "application/sdp".to_owned()),
            (header::LOCATION, format!("/v1/realtime/calls/{call_id}")),
        ],
        answer,
    )
        .into_response()
}

async fn hangup(
    State(shared): State<Arc<Shared>>,
    Path(call_id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refusal(&shared, &headers) {
        return refused;
    }
    match shared.calls.lock().await.remove(&call_id) {
        Some(hangup) => {
            let _ = hangup.send(());
            StatusCode::OK.into_response()
        }
        None => error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "call_not_found",
            &format!("No active call with id {call_id}."),
        ),
    }
}

async fn beta_endpoint() -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        "beta_api_shape_disabled",
        "The Realtime Beta API is no longer supported. Please use /v1/realtime for the GA API.",
    )
}
