//! Where the test bench reaches into the provider. With the `test-bench` feature, the faults
//! of `crate::fault` (a call's server events) and `crate::http_fault` (the calls endpoint)
//! fire as configured; without it (the app's build) these hooks exist but can never fire, and
//! no fault is compiled in.

/// What the call's driver does before sending one event.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    not(feature = "test-bench"),
    expect(dead_code, reason = "only the test bench injects")
)]
pub(crate) enum Injection {
    SendText(String),
    Wait(std::time::Duration),
    Drop,
    Close,
    /// Copies of the event about to go out, with `delta` replaced by `delta_bytes` of text,
    /// until `total_bytes` of deltas are sent.
    Flood {
        total_bytes: u64,
        delta_bytes: u32,
    },
}

#[cfg(feature = "test-bench")]
mod hooks {
    use std::sync::atomic::{AtomicU64, Ordering};

    use axum::http::header;
    use axum::response::{IntoResponse, Response};
    use walkie_openai::{ErrorDetail, ServerEvent};

    use super::Injection;
    use crate::ProviderConfig;
    use crate::fault::{Fault, MALFORMED_TEXT};
    use crate::http::ApiError;
    use crate::http_fault::HttpFault;

    /// A provider's faults: those of every call, and the calls endpoint's.
    #[derive(Debug)]
    pub(crate) struct Faults {
        events: Vec<Fault>,
        calls: Option<HttpFault>,
        /// Calls still to get `calls` (`u64::MAX`: all of them).
        calls_left: AtomicU64,
    }

    impl Faults {
        pub fn of(config: &ProviderConfig) -> Self {
            Self {
                events: config.faults.clone(),
                calls: config.calls_fault.clone(),
                calls_left: AtomicU64::new(config.calls_fault_times.unwrap_or(u64::MAX)),
            }
        }

        /// The faults of a new call.
        pub fn plan(&self) -> FaultPlan {
            FaultPlan::new(self.events.clone())
        }

        /// The calls endpoint's fault for this call, if one is due (and counts it).
        pub fn take_calls_fault(&self) -> CallsFault {
            let Some(fault) = self.calls.clone() else {
                return CallsFault(None);
            };
            let due = self
                .calls_left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| match left {
                    0 => None,
                    u64::MAX => Some(u64::MAX),
                    left => Some(left - 1),
                })
                .is_ok();
            CallsFault(due.then_some(fault))
        }
    }

    /// The calls endpoint's fault for one call.
    pub(crate) struct CallsFault(Option<HttpFault>);

    impl CallsFault {
        /// The error answer that replaces the call, for a status fault.
        pub fn status_response(&self) -> Option<Response> {
            let Some(HttpFault::Status {
                status,
                message,
                retry_after_s,
            }) = &self.0
            else {
                return None;
            };
            let (status, kind, code, default_message) = HttpFault::shape(*status);
            let mut response = ApiError {
                status,
                kind,
                code,
                param: None,
                message: message.clone().unwrap_or(default_message),
            }
            .into_response();
            if let Some(seconds) = retry_after_s {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, header::HeaderValue::from(*seconds));
            }
            Some(response)
        }

        /// Whether the call is answered without its `Location`.
        pub fn omits_location(&self) -> bool {
            self.0 == Some(HttpFault::NoLocation)
        }
    }

    /// The faults of one call, consumed as events are sent.
    #[derive(Clone, Debug, Default)]
    pub(crate) struct FaultPlan {
        faults: Vec<Fault>,
        sent: u64,
    }

    impl FaultPlan {
        pub fn new(faults: Vec<Fault>) -> Self {
            Self { faults, sent: 0 }
        }

        /// Whether events of this type are never to be sent.
        pub fn suppresses(&self, event_type: &str) -> bool {
            self.faults.iter().any(
                |fault| matches!(fault, Fault::Suppress { event_type: suppressed } if suppressed == event_type),
            )
        }

        /// Called before each server event goes out (of type `event_type`): what to do first,
        /// in the listed order.
        pub fn before_event(&mut self, event_type: &str) -> Vec<Injection> {
            self.sent += 1;
            let number = self.sent;
            let flood = self.faults.iter().position(|fault| {
                matches!(fault, Fault::Flood { event_type: flooded, .. } if flooded == event_type)
            });
            // A flood fires once, before the first event of its type.
            let flood = flood.and_then(|index| match self.faults.remove(index) {
                Fault::Flood {
                    total_bytes,
                    delta_bytes,
                    ..
                } => Some(Injection::Flood {
                    total_bytes,
                    delta_bytes,
                }),
                _ => None,
            });
            let mut injections: Vec<Injection> = self
                .faults
                .iter()
                .filter(|fault| fault.at_event() == Some(number))
                .filter_map(|fault| {
                    Some(match fault {
                        Fault::DropConnection { .. } => Injection::Drop,
                        Fault::AbruptClose { .. } => Injection::Close,
                        Fault::Malformed { text, .. } => Injection::SendText(
                            text.clone().unwrap_or_else(|| MALFORMED_TEXT.to_owned()),
                        ),
                        Fault::Delay { ms, .. } => {
                            Injection::Wait(std::time::Duration::from_millis(*ms))
                        }
                        Fault::Suppress { .. } | Fault::Flood { .. } => return None,
                        Fault::Error {
                            error_type,
                            code,
                            message,
                            ..
                        } => Injection::SendText(
                            ServerEvent::Error {
                                error: ErrorDetail {
                                    kind: error_type.clone(),
                                    code: code.clone(),
                                    message: message.clone(),
                                    param: None,
                                    event_id: None,
                                },
                            }
                            .to_json(&format!("event_fault{number:04}")),
                        ),
                    })
                })
                .collect();
            injections.extend(flood);
            injections
        }
    }
}

#[cfg(not(feature = "test-bench"))]
mod hooks {
    use axum::response::Response;

    use super::Injection;
    use crate::ProviderConfig;

    /// No faults: the provider behaves.
    #[derive(Debug)]
    pub(crate) struct Faults;

    impl Faults {
        pub fn of(_: &ProviderConfig) -> Self {
            Faults
        }

        pub fn plan(&self) -> FaultPlan {
            FaultPlan
        }

        pub fn take_calls_fault(&self) -> CallsFault {
            CallsFault
        }
    }

    pub(crate) struct CallsFault;

    impl CallsFault {
        pub fn status_response(&self) -> Option<Response> {
            None
        }

        pub fn omits_location(&self) -> bool {
            false
        }
    }

    #[derive(Clone, Debug, Default)]
    pub(crate) struct FaultPlan;

    impl FaultPlan {
        pub fn suppresses(&self, _event_type: &str) -> bool {
            false
        }

        pub fn before_event(&mut self, _event_type: &str) -> Vec<Injection> {
            Vec::new()
        }
    }
}

pub(crate) use hooks::{FaultPlan, Faults};
