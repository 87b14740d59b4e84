//! Call setup over real HTTP on loopback: the request each endpoint sends (form, path, auth,
//! session) and the typed error each answer becomes. The server is a plain TCP listener that
//! records what arrived and answers with canned bytes, so every status, header and failure
//! (a redirect, silence, a non-TLS peer) can be produced exactly.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use walkie_openai::{AudioConfig, AudioOutput, SessionConfig};
use walkie_rtc::signalling::MAX_RESPONSE_BYTES;
use walkie_rtc::{Auth, CallForm, Endpoint, RtcError, Signalling, Stage};

const OFFER: &str = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n";
const ANSWER: &str = "v=0\r\no=- 2 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n";

/// One request as it arrived.
#[derive(Debug)]
struct Request {
    method: String,
    /// Path and query, as in the request line.
    target: String,
    /// Names lowercased.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the body is JSON")
    }

    /// The parts of a `multipart/form-data` body: (name, content type, content).
    fn parts(&self) -> Vec<(String, String, String)> {
        let content_type = self.header("content-type").expect("a content type");
        let boundary = content_type
            .split("boundary=")
            .nth(1)
            .expect("a multipart content type names its boundary")
            .trim_matches('"');
        let body = String::from_utf8(self.body.clone()).expect("a text body");
        let delimiter = format!("--{boundary}");
        let mut parts = Vec::new();
        for chunk in body.split(&delimiter).skip(1) {
            if chunk.starts_with("--") {
                break;
            }
            let chunk = chunk
                .strip_prefix("\r\n")
                .expect("a part starts on a new line");
            let (head, content) = chunk.split_once("\r\n\r\n").expect("a part has headers");
            let header = |name: &str| {
                head.lines()
                    .find_map(|line| {
                        let (key, value) = line.split_once(':')?;
                        key.eq_ignore_ascii_case(name)
                            .then(|| value.trim().to_owned())
                    })
                    .unwrap_or_default()
            };
            let disposition = header("content-disposition");
            let name = disposition
                .split("name=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .expect("a form part has a name")
                .to_owned();
            let content = content.strip_suffix("\r\n").unwrap_or(content).to_owned();
            parts.push((name, header("content-type"), content));
        }
        parts
    }
}

async fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut data = Vec::new();
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|window| window == b"\r\n\r\n") {
            break at;
        }
        let mut buffer = [0u8; 4096];
        let read = stream.read(&mut buffer).await.ok()?;
        if read == 0 {
            return None;
        }
        data.extend_from_slice(&buffer[..read]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let target = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| {
            let (key, value) = line.split_once(':')?;
            Some((key.trim().to_ascii_lowercase(), value.trim().to_owned()))
        })
        .collect();
    let mut body = data[head_end + 4..].to_vec();
    let length = headers
        .iter()
        .find(|(key, _)| key == "content-length")
        .and_then(|(_, value)| value.parse::<usize>().ok());
    let chunked = headers
        .iter()
        .any(|(key, value)| key == "transfer-encoding" && value.contains("chunked"));
    if chunked {
        while !body.ends_with(b"0\r\n\r\n") {
            let mut buffer = [0u8; 4096];
            let read = stream.read(&mut buffer).await.ok()?;
            if read == 0 {
                break;
            }
            body.extend_from_slice(&buffer[..read]);
        }
        body = dechunk(&body);
    } else if let Some(length) = length {
        while body.len() < length {
            let mut buffer = [0u8; 4096];
            let read = stream.read(&mut buffer).await.ok()?;
            if read == 0 {
                break;
            }
            body.extend_from_slice(&buffer[..read]);
        }
    }
    Some(Request {
        method,
        target,
        headers,
        body,
    })
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = data.windows(2).position(|window| window == b"\r\n") else {
            return body;
        };
        let size = usize::from_str_radix(
            std::str::from_utf8(&data[..line_end]).unwrap_or("0").trim(),
            16,
        )
        .unwrap_or(0);
        if size == 0 {
            return body;
        }
        let start = line_end + 2;
        body.extend_from_slice(&data[start..start + size]);
        data = &data[start + size + 2..];
    }
}

/// Answers the requests in turn (each on its own connection, closed after the answer) and
/// hands back what arrived.
async fn serve(answers: Vec<String>) -> (String, JoinHandle<Vec<Request>>) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let base = format!("http://{}", listener.local_addr().expect("bound"));
    let task = tokio::spawn(async move {
        let mut seen = Vec::new();
        for answer in answers {
            let Ok((mut stream, _)) = listener.accept().await else {
                break;
            };
            let Some(request) = read_request(&mut stream).await else {
                break;
            };
            seen.push(request);
            let _ = stream.write_all(answer.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
        seen
    });
    (base, task)
}

fn response(status: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut text = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    text
}

fn sdp_answer(location: Option<&str>) -> String {
    let mut headers = vec![("Content-Type", "application/sdp")];
    if let Some(location) = location {
        headers.push(("Location", location));
    }
    response("201 Created", &headers, ANSWER)
}

fn session() -> SessionConfig {
    SessionConfig {
        model: Some("gpt-realtime".to_owned()),
        instructions: Some("Be brief.".to_owned()),
        audio: Some(AudioConfig {
            output: Some(AudioOutput {
                voice: Some("marin".to_owned()),
                ..AudioOutput::default()
            }),
            ..AudioConfig::default()
        }),
        ..SessionConfig::default()
    }
}

fn signalling() -> Signalling {
    Signalling::new(Duration::from_secs(5)).expect("an HTTP client")
}

#[tokio::test]
async fn a_standard_key_sends_the_offer_and_the_session_as_multipart() {
    let (base, server) = serve(vec![sdp_answer(Some("/v1/realtime/calls/rtc_abc"))]).await;
    let endpoint = Endpoint::custom(&base, Auth::Bearer("sk-standard".to_owned())).expect("valid");
    let answer = signalling()
        .post_offer(&endpoint, OFFER, &session())
        .await
        .expect("the call is placed");
    assert_eq!(answer.sdp, ANSWER);
    assert_eq!(answer.call_id.as_deref(), Some("rtc_abc"));

    let seen = server.await.expect("the server ran");
    assert_eq!(seen.len(), 1);
    let request = &seen[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.target, "/v1/realtime/calls", "no query");
    assert_eq!(request.header("authorization"), Some("Bearer sk-standard"));
    assert!(
        request
            .header("content-type")
            .is_some_and(|value| value.starts_with("multipart/form-data; boundary=")),
        "{:?}",
        request.header("content-type")
    );
    let parts = request.parts();
    let names: Vec<&str> = parts.iter().map(|(name, _, _)| name.as_str()).collect();
    assert_eq!(names, ["sdp", "session"]);
    assert_eq!(parts[0].1, "application/sdp");
    assert_eq!(parts[0].2, OFFER);
    assert_eq!(parts[1].1, "application/json");
    let sent: Value = serde_json::from_str(&parts[1].2).expect("the session part is JSON");
    assert_eq!(
        sent,
        json!({"type": "realtime", "model": "gpt-realtime", "instructions": "Be brief.",
               "audio": {"output": {"voice": "marin"}}})
    );
}

#[tokio::test]
async fn no_key_also_sends_the_session_as_multipart() {
    let (base, server) = serve(vec![sdp_answer(Some("/v1/realtime/calls/rtc_local"))]).await;
    let endpoint = Endpoint::custom(&base, Auth::None).expect("valid");
    signalling()
        .post_offer(&endpoint, OFFER, &session())
        .await
        .expect("the call is placed");
    let seen = server.await.expect("the server ran");
    assert_eq!(seen[0].header("authorization"), None);
    assert_eq!(seen[0].parts().len(), 2);
}

#[tokio::test]
async fn the_ephemeral_path_mints_a_key_with_the_session_then_posts_the_raw_offer_with_it() {
    let (base, server) = serve(vec![
        response(
            "200 OK",
            &[("Content-Type", "application/json")],
            r#"{"value":"ek_minted","expires_at":1900000000,"session":{"type":"realtime"}}"#,
        ),
        sdp_answer(Some("/v1/realtime/calls/rtc_eph")),
    ])
    .await;
    let endpoint = Endpoint::custom(&base, Auth::Bearer("sk-standard".to_owned()))
        .expect("valid")
        .with_ephemeral_key();
    let answer = signalling()
        .post_offer(&endpoint, OFFER, &session())
        .await
        .expect("the call is placed");
    assert_eq!(answer.call_id.as_deref(), Some("rtc_eph"));

    let seen = server.await.expect("the server ran");
    assert_eq!(seen.len(), 2);
    let (mint, call) = (&seen[0], &seen[1]);
    assert_eq!(mint.target, "/v1/realtime/client_secrets");
    assert_eq!(mint.header("authorization"), Some("Bearer sk-standard"));
    assert_eq!(mint.header("content-type"), Some("application/json"));
    assert_eq!(
        mint.json()["session"],
        serde_json::to_value(session()).expect("JSON")
    );
    assert_eq!(mint.json()["session"]["type"], "realtime");
    assert_eq!(call.target, "/v1/realtime/calls");
    assert_eq!(call.header("authorization"), Some("Bearer ek_minted"));
    assert_eq!(call.header("content-type"), Some("application/sdp"));
    assert_eq!(call.body, OFFER.as_bytes());
}

#[tokio::test]
async fn an_ephemeral_key_in_the_settings_posts_the_raw_offer_directly() {
    let (base, server) = serve(vec![sdp_answer(Some("/v1/realtime/calls/rtc_x"))]).await;
    let endpoint = Endpoint::custom(&base, Auth::Bearer("ek_given".to_owned())).expect("valid");
    signalling()
        .post_offer(&endpoint, OFFER, &session())
        .await
        .expect("the call is placed");
    let seen = server.await.expect("the server ran");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].header("authorization"), Some("Bearer ek_given"));
    assert_eq!(seen[0].header("content-type"), Some("application/sdp"));
}

fn refused_multipart() -> String {
    response(
        "415 Unsupported Media Type",
        &[("Content-Type", "application/json")],
        r#"{"error":{"message":"Only application/sdp is accepted.","type":"invalid_request_error"}}"#,
    )
}

#[tokio::test]
async fn a_server_that_refuses_the_multipart_form_is_called_again_with_the_raw_offer_and_the_same_key()
 {
    let (base, server) = serve(vec![
        refused_multipart(),
        sdp_answer(Some("/v1/realtime/calls/rtc_raw")),
        sdp_answer(Some("/v1/realtime/calls/rtc_raw_again")),
    ])
    .await;
    let endpoint = Endpoint::custom(&base, Auth::Bearer("sk-server".to_owned())).expect("valid");
    let answer = signalling()
        .post_offer(&endpoint, OFFER, &session())
        .await
        .expect("the raw offer is answered");
    assert_eq!(answer.form, CallForm::RawSdp);
    assert_eq!(answer.call_id.as_deref(), Some("rtc_raw"));
    assert_eq!(answer.sdp, ANSWER);
    // The address is remembered: the next call (another client, as Settings' Test connection
    // makes) goes raw from the start.
    let again = signalling()
        .post_offer(&endpoint, OFFER, &session())
        .await
        .expect("the second call is answered");
    assert_eq!(again.form, CallForm::RawSdp);

    let seen = server.await.expect("the server ran");
    assert_eq!(seen.len(), 3, "one refused request, then one per call");
    assert!(
        seen[0]
            .header("content-type")
            .is_some_and(|value| value.starts_with("multipart/form-data")),
        "the first request is the documented form"
    );
    for raw in &seen[1..] {
        assert_eq!(raw.header("content-type"), Some("application/sdp"));
        assert_eq!(raw.header("authorization"), Some("Bearer sk-server"));
        assert_eq!(raw.body, OFFER.as_bytes());
    }
}

#[tokio::test]
async fn a_server_set_to_the_multipart_form_reports_its_refusal_instead_of_calling_again() {
    let (base, server) = serve(vec![refused_multipart()]).await;
    let endpoint = Endpoint::custom(&base, Auth::Bearer("sk-server".to_owned()))
        .expect("valid")
        .with_form(CallForm::Multipart);
    let error = signalling()
        .post_offer(&endpoint, OFFER, &session())
        .await
        .expect_err("a 415 with the form fixed");
    assert!(
        matches!(&error, RtcError::Http(failure) if failure.status == 415 && failure.message == "Only application/sdp is accepted."),
        "{error:?}"
    );
    assert_eq!(server.await.expect("the server ran").len(), 1);
}

#[tokio::test]
async fn a_server_set_to_the_raw_form_gets_the_raw_offer_with_a_standard_key_at_once() {
    let (base, server) = serve(vec![sdp_answer(Some("/v1/realtime/calls/rtc_set"))]).await;
    let endpoint = Endpoint::custom(&base, Auth::Bearer("sk-server".to_owned()))
        .expect("valid")
        .with_form(CallForm::RawSdp);
    let answer = signalling()
        .post_offer(&endpoint, OFFER, &session())
        .await
        .expect("the call is placed");
    assert_eq!(answer.form, CallForm::RawSdp);
    let seen = server.await.expect("the server ran");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].header("content-type"), Some("application/sdp"));
    assert_eq!(seen[0].header("authorization"), Some("Bearer sk-server"));
}

#[tokio::test]
async fn azure_mints_with_its_api_key_and_the_deployment_then_calls_with_the_token() {
    let (base, server) = serve(vec![
        response(
            "200 OK",
            &[("Content-Type", "application/json")],
            r#"{"value":"ek_azure","expires_at":1900000000}"#,
        ),
        sdp_answer(Some("/openai/v1/realtime/calls/rtc_az")),
    ])
    .await;
    let endpoint = Endpoint::azure(&base, "az-key", "my-deployment").expect("valid");
    let answer = signalling()
        .post_offer(&endpoint, OFFER, &session())
        .await
        .expect("the call is placed");
    assert_eq!(answer.call_id.as_deref(), Some("rtc_az"));

    let seen = server.await.expect("the server ran");
    let (mint, call) = (&seen[0], &seen[1]);
    assert_eq!(
        mint.target, "/openai/v1/realtime/client_secrets",
        "no api-version"
    );
    assert_eq!(mint.header("api-key"), Some("az-key"));
    assert_eq!(mint.header("authorization"), None);
    assert_eq!(mint.json()["session"]["model"], "my-deployment");
    assert_eq!(mint.json()["session"]["type"], "realtime");
    assert_eq!(call.target, "/openai/v1/realtime/calls", "no ?model=");
    assert_eq!(call.header("authorization"), Some("Bearer ek_azure"));
    assert_eq!(
        call.header("api-key"),
        None,
        "the offer goes with the token only"
    );
    assert_eq!(call.header("content-type"), Some("application/sdp"));
    assert_eq!(call.body, OFFER.as_bytes());
}

#[tokio::test]
async fn a_mint_answer_without_a_value_is_a_typed_error() {
    let (base, _server) = serve(vec![response("200 OK", &[], r#"{"expires_at":1}"#)]).await;
    let endpoint = Endpoint::azure(&base, "k", "d").expect("valid");
    let error = signalling()
        .post_offer(&endpoint, OFFER, &session())
        .await
        .expect_err("no key, no call");
    assert!(
        matches!(&error, RtcError::BadClientSecret { provider, .. } if provider == "Azure OpenAI"),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_refused_mint_is_typed_with_its_stage() {
    let (base, server) = serve(vec![response(
        "401 Unauthorized",
        &[("Content-Type", "application/json")],
        r#"{"error":{"code":"401","message":"Access denied due to invalid subscription key."}}"#,
    )])
    .await;
    let endpoint = Endpoint::azure(&base, "bad", "d").expect("valid");
    let error = signalling()
        .post_offer(&endpoint, OFFER, &session())
        .await
        .expect_err("a refused key places no call");
    assert!(
        matches!(&error, RtcError::KeyRefused(failure) if failure.stage == Stage::ClientSecret && failure.status == 401),
        "{error:?}"
    );
    assert_eq!(
        error.user_sentence(),
        "Azure OpenAI refused the API key: add a valid key in Settings."
    );
    assert_eq!(
        server.await.expect("the server ran").len(),
        1,
        "no offer was posted"
    );
}

#[tokio::test]
async fn a_missing_location_only_loses_the_call_id() {
    let (base, _server) = serve(vec![sdp_answer(None)]).await;
    let endpoint = Endpoint::custom(&base, Auth::None).expect("valid");
    let answer = signalling()
        .post_offer(&endpoint, OFFER, &session())
        .await
        .expect("an SDP answer without Location still places the call");
    assert_eq!(answer.sdp, ANSWER);
    assert_eq!(answer.call_id, None);
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let (base, server) = serve(vec![
        response("307 Temporary Redirect", &[("Location", "/elsewhere")], ""),
        sdp_answer(Some("/v1/realtime/calls/rtc_followed")),
    ])
    .await;
    // The raw-SDP form: its body could be sent again, so only the policy stops a follow.
    let endpoint = Endpoint::custom(&base, Auth::Bearer("ek_x".to_owned())).expect("valid");
    let error = signalling()
        .post_offer(&endpoint, OFFER, &session())
        .await
        .expect_err("a redirect fails the call");
    assert!(
        matches!(&error, RtcError::Redirected { failure, location: Some(to) } if failure.status == 307 && to == "/elsewhere"),
        "{error:?}"
    );
    server.abort();
    let seen = server.await;
    assert!(
        seen.is_err(),
        "the server was still waiting for a second request"
    );
}

#[tokio::test]
async fn each_http_status_on_the_offer_becomes_its_own_error() {
    /// Status line, headers, body, and the error expected.
    type Case = (
        &'static str,
        &'static [(&'static str, &'static str)],
        &'static str,
        fn(&RtcError) -> bool,
    );
    let cases: [Case; 5] = [
        (
            "400 Bad Request",
            &[],
            r#"{"error":{"message":"Unknown parameter: 'session.foo'.","type":"invalid_request_error","code":"unknown_parameter","param":"session.foo"}}"#,
            |error| matches!(error, RtcError::BadRequest(failure) if failure.message == "Unknown parameter: 'session.foo'."),
        ),
        (
            "403 Forbidden",
            &[],
            "",
            |error| matches!(error, RtcError::KeyRefused(failure) if failure.status == 403),
        ),
        (
            "404 Not Found",
            &[],
            r#"{"error":{"message":"The model `gpt-nope` does not exist.","type":"invalid_request_error","code":"model_not_found","param":null}}"#,
            |error| matches!(error, RtcError::NotFound(failure) if failure.code.as_deref() == Some("model_not_found")),
        ),
        (
            "429 Too Many Requests",
            &[("Retry-After", "7")],
            "",
            |error| matches!(error, RtcError::RateLimited { retry_after: Some(after), .. } if *after == Duration::from_secs(7)),
        ),
        (
            "502 Bad Gateway",
            &[],
            "Bad Gateway",
            |error| matches!(error, RtcError::ServerError(failure) if failure.status == 502),
        ),
    ];
    for (status, headers, body, expected) in cases {
        let (base, _server) = serve(vec![response(status, headers, body)]).await;
        let endpoint = Endpoint::custom(&base, Auth::Bearer("sk-x".to_owned()))
            .expect("valid")
            .named("OpenAI");
        let error = signalling()
            .post_offer(&endpoint, OFFER, &session())
            .await
            .expect_err("an error status places no call");
        assert!(expected(&error), "{status}: {error:?}");
        assert!(
            error.user_sentence().ends_with('.') && !error.user_sentence().contains('\n'),
            "one sentence: {}",
            error.user_sentence()
        );
    }
}

#[tokio::test]
async fn a_silent_server_is_a_timeout_of_the_sdp_exchange() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let base = format!("http://{}", listener.local_addr().expect("bound"));
    // Accepts, reads, never answers.
    let silent = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.expect("a connection");
        let mut sink = Vec::new();
        let _ = stream.read_to_end(&mut sink).await;
    });
    let endpoint = Endpoint::custom(&base, Auth::None).expect("valid");
    let error = Signalling::new(Duration::from_millis(300))
        .expect("an HTTP client")
        .post_offer(&endpoint, OFFER, &session())
        .await
        .expect_err("no answer, no call");
    assert!(
        matches!(error, RtcError::Timeout { stage: Stage::Signalling, after } if after == Duration::from_millis(300)),
        "{error:?}"
    );
    assert!(error.user_sentence().contains("did not answer within"));
    silent.abort();
}

#[tokio::test]
async fn a_closed_port_is_a_network_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let base = format!("http://{}", listener.local_addr().expect("bound"));
    drop(listener);
    let endpoint = Endpoint::custom(&base, Auth::None).expect("valid");
    let error = signalling()
        .post_offer(&endpoint, OFFER, &session())
        .await
        .expect_err("nothing listens");
    assert!(
        matches!(
            error,
            RtcError::Network {
                stage: Stage::Signalling,
                ..
            }
        ),
        "{error:?}"
    );
    let sentence = error.user_sentence();
    assert!(
        sentence.starts_with("The provider could not be reached ("),
        "{sentence}"
    );
    // The window gets the innermost cause; the log keeps the whole chain.
    assert!(!sentence.contains("error sending request"), "{sentence}");
    assert!(
        error.to_string().contains("error sending request"),
        "{error}"
    );
}

#[tokio::test]
async fn a_peer_that_does_not_speak_tls_is_a_tls_error() {
    // https to a plain-HTTP server: the handshake reads an HTTP answer instead of TLS.
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let base = format!("https://{}", listener.local_addr().expect("bound"));
    let plain = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.expect("a connection");
        let _ = stream
            .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            .await;
        let mut sink = Vec::new();
        let _ = stream.read_to_end(&mut sink).await;
    });
    let endpoint = Endpoint::custom(&base, Auth::None).expect("valid");
    let error = signalling()
        .post_offer(&endpoint, OFFER, &session())
        .await
        .expect_err("no TLS, no call");
    assert!(
        matches!(
            error,
            RtcError::Tls {
                stage: Stage::Signalling,
                ..
            }
        ),
        "{error:?}"
    );
    let sentence = error.user_sentence();
    assert!(
        sentence.starts_with("The secure connection to the provider failed ("),
        "{sentence}"
    );
    // The window gets the innermost cause; the log keeps the whole chain.
    assert!(!sentence.contains("error sending request"), "{sentence}");
    assert!(
        error.to_string().contains("error sending request"),
        "{error}"
    );
    plain.abort();
}

/// A response with no length: the body ends when the server closes the connection.
fn unbounded_response(status: &str, content_type: &str, body: &str) -> String {
    format!("HTTP/1.1 {status}\r\nConnection: close\r\nContent-Type: {content_type}\r\n\r\n{body}")
}

#[tokio::test]
async fn an_answer_longer_than_the_limit_is_a_typed_error_and_is_not_read_on() {
    let oversized_sdp = format!("{ANSWER}{}", "a=x\r\n".repeat(MAX_RESPONSE_BYTES / 5 + 1));
    for answer in [
        response(
            "201 Created",
            &[("Content-Type", "application/sdp")],
            &oversized_sdp,
        ),
        unbounded_response("201 Created", "application/sdp", &oversized_sdp),
    ] {
        let (base, _server) = serve(vec![answer]).await;
        let endpoint = Endpoint::custom(&base, Auth::None).expect("valid");
        let error = signalling()
            .post_offer(&endpoint, OFFER, &session())
            .await
            .expect_err("an answer of more than 1 MiB places no call");
        assert!(
            matches!(
                error,
                RtcError::ResponseTooLarge {
                    stage: Stage::Signalling,
                    limit_bytes: MAX_RESPONSE_BYTES
                }
            ),
            "{error:?}"
        );
        assert!(
            error.user_sentence().contains("larger than 1024 KiB"),
            "{}",
            error.user_sentence()
        );
    }

    // The minted key's answer too.
    let huge_key = format!(r#"{{"value":"ek_{}"}}"#, "k".repeat(MAX_RESPONSE_BYTES));
    let (base, _server) = serve(vec![response(
        "200 OK",
        &[("Content-Type", "application/json")],
        &huge_key,
    )])
    .await;
    let endpoint = Endpoint::custom(&base, Auth::Bearer("std-key".to_owned()))
        .expect("valid")
        .with_ephemeral_key();
    let error = signalling()
        .post_offer(&endpoint, OFFER, &session())
        .await
        .expect_err("no key is taken from an oversized answer");
    assert!(
        matches!(
            error,
            RtcError::ResponseTooLarge {
                stage: Stage::ClientSecret,
                ..
            }
        ),
        "{error:?}"
    );

    // An error answer keeps its status; its explanation is the body's start.
    let (base, _server) = serve(vec![unbounded_response(
        "500 Internal Server Error",
        "text/html",
        &"<p>oops</p>".repeat(MAX_RESPONSE_BYTES / 5),
    )])
    .await;
    let endpoint = Endpoint::custom(&base, Auth::None).expect("valid");
    let error = signalling()
        .post_offer(&endpoint, OFFER, &session())
        .await
        .expect_err("a 500 places no call");
    assert!(
        matches!(&error, RtcError::ServerError(failure) if failure.message.starts_with("<p>oops</p>")),
        "{error:?}"
    );
}

/// Set in the child process of the proxy test, which then runs the test's client side.
const PROXY_CHILD: &str = "WALKIE_RTC_TEST_PROXY_CHILD";
const PROXY_TEST: &str = "a_loopback_server_is_reached_without_the_environments_proxy";

#[tokio::test]
async fn a_loopback_server_is_reached_without_the_environments_proxy() {
    if std::env::var_os(PROXY_CHILD).is_some() {
        // The child: every proxy variable names the parent's recording proxy.
        let (base, _server) = serve(vec![sdp_answer(Some("/v1/realtime/calls/rtc_direct"))]).await;
        let local = Endpoint::custom(&base, Auth::None).expect("valid");
        let answer = signalling()
            .post_offer(&local, OFFER, &session())
            .await
            .expect("the loopback server is reached directly");
        assert_eq!(answer.call_id.as_deref(), Some("rtc_direct"));
        // Any other host still goes through the proxy, which refuses it.
        let remote = Endpoint::custom("https://realtime.example.test", Auth::None).expect("valid");
        signalling()
            .post_offer(&remote, OFFER, &session())
            .await
            .expect_err("the proxy refuses");
        return;
    }
    // The parent: a proxy that records each request line and refuses it. The environment
    // goes to a child process, as the variables are read when a client is built.
    let proxy = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let proxy_url = format!("http://{}", proxy.local_addr().expect("bound"));
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let recording = {
        let seen = seen.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = proxy.accept().await else {
                    return;
                };
                let Some(request) = read_request(&mut stream).await else {
                    continue;
                };
                seen.lock()
                    .expect("the list")
                    .push(format!("{} {}", request.method, request.target));
                let _ = stream
                    .write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                    .await;
                let _ = stream.shutdown().await;
            }
        })
    };
    let mut child = std::process::Command::new(std::env::current_exe().expect("this test binary"));
    child
        .args(["--exact", PROXY_TEST, "--nocapture", "--test-threads=1"])
        .env(PROXY_CHILD, "1")
        .env_remove("NO_PROXY")
        .env_remove("no_proxy");
    for variable in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        child.env(variable, &proxy_url);
    }
    let output = tokio::task::spawn_blocking(move || child.output())
        .await
        .expect("the child ran")
        .expect("the test binary starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "the child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    recording.abort();
    let seen = seen.lock().expect("the list").clone();
    assert_eq!(
        seen,
        ["CONNECT realtime.example.test:443"],
        "only the remote host went through the proxy"
    );
}
