//! `futures_core::Stream` over the session's poll API (feature `stream`).
//!
//! Why it is here and this thin: the core stays runtime-free; an async consumer only needs "poll,
//! and wake me when something is pushed". The session keeps the waker of the active iterator and
//! wakes it on the next push, park or close. Dropping the stream stops iterating, which trims the
//! backlog at once, exactly like leaving an `async for`.

use std::cell::RefCell;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures_core::Stream;

use crate::backlog::Delivery;
use crate::error::IterationError;
use crate::session::{EventIterator, Session};

/// Shared access to a session from the async side (the producer keeps another handle).
pub trait SessionHandle {
    /// Run `f` with the session borrowed mutably.
    fn with_session<R>(&self, f: impl FnOnce(&mut Session) -> R) -> R;
}

impl SessionHandle for Rc<RefCell<Session>> {
    fn with_session<R>(&self, f: impl FnOnce(&mut Session) -> R) -> R {
        f(&mut self.borrow_mut())
    }
}

impl SessionHandle for Arc<Mutex<Session>> {
    fn with_session<R>(&self, f: impl FnOnce(&mut Session) -> R) -> R {
        // A panic elsewhere while holding the lock does not make the queue inconsistent: every
        // mutation completes before the lock is released, so the poisoned value is still usable.
        let mut guard = self.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut guard)
    }
}

/// The session's main stream as an async `Stream` of [`Delivery`] items.
///
/// It ends (`None`) when the session is closed.
pub struct EventStream<H: SessionHandle> {
    handle: H,
    iterator: Option<EventIterator>,
}

impl<H: SessionHandle> EventStream<H> {
    /// Start iterating the session through `handle` (a second concurrent iterator is an error).
    pub fn new(handle: H) -> Result<Self, IterationError> {
        let iterator = handle.with_session(|session| session.iterate())?;
        Ok(Self {
            handle,
            iterator: Some(iterator),
        })
    }
}

impl<H: SessionHandle + Unpin> Stream for EventStream<H> {
    type Item = Delivery;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Delivery>> {
        let this = self.get_mut();
        let Some(iterator) = &this.iterator else {
            return Poll::Ready(None);
        };
        this.handle
            .with_session(|session| match session.poll_event(iterator) {
                Ok(Some(delivery)) => Poll::Ready(Some(delivery)),
                Ok(None) => {
                    session.iterator_waker = Some(cx.waker().clone());
                    Poll::Pending
                }
                Err(_) => Poll::Ready(None),
            })
    }
}

impl<H: SessionHandle> Drop for EventStream<H> {
    fn drop(&mut self) {
        if let Some(iterator) = self.iterator.take() {
            // A closed session has nothing left to stop; that error is expected here.
            let _ = self
                .handle
                .with_session(|session| session.stop_iterating(iterator));
        }
    }
}
