//! The async adapter: the poll API as a `futures_core::Stream`, woken by pushes, ended by close,
//! and stopping iteration when dropped.
#![cfg(feature = "stream")]

mod common;

use std::cell::RefCell;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use common::*;
use futures_core::Stream;
use walkie_session::stream::EventStream;
use walkie_session::{Delivery, IterationError, Session, SessionEvent};

#[derive(Default)]
struct CountingWaker {
    wakes: AtomicUsize,
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }
}

fn poll_once<S: Stream + Unpin>(stream: &mut S, waker: &Waker) -> Poll<Option<S::Item>> {
    Pin::new(stream).poll_next(&mut Context::from_waker(waker))
}

#[test]
fn a_pending_stream_is_woken_by_the_next_push_and_then_yields_it() {
    let session = Rc::new(RefCell::new(Session::default()));
    let mut stream = EventStream::new(session.clone()).unwrap();
    let wakes = Arc::new(CountingWaker::default());
    let waker = Waker::from(wakes.clone());

    assert!(poll_once(&mut stream, &waker).is_pending());
    session
        .borrow_mut()
        .push(SessionEvent::ResponseInterrupted, 5)
        .unwrap();

    assert_eq!(wakes.wakes.load(Ordering::SeqCst), 1);
    let Poll::Ready(Some(Delivery::Event(event))) = poll_once(&mut stream, &waker) else {
        panic!("the pushed event is ready")
    };
    assert_eq!(event.event, SessionEvent::ResponseInterrupted);
}

#[test]
fn the_stream_counts_as_the_one_iterator_and_dropping_it_stops_iterating() {
    let session = Rc::new(RefCell::new(Session::default()));
    let stream = EventStream::new(session.clone()).unwrap();

    assert_eq!(
        session.borrow_mut().iterate(),
        Err(IterationError::AlreadyIterating)
    );
    drop(stream);
    assert!(!session.borrow().is_iterating());
}

#[test]
fn dropping_the_stream_trims_the_backlog_at_once() {
    let session = Rc::new(RefCell::new(Session::default()));
    let stream = EventStream::new(session.clone()).unwrap();
    let part = start_assistant_speech(&mut session.borrow_mut(), 0);
    for n in 0..1_000 {
        session
            .borrow_mut()
            .push_delta(part, audio_delta(n), 1)
            .unwrap();
    }

    drop(stream);

    assert_eq!(session.borrow().backlog_len().deltas, 512);
}

#[test]
fn closing_the_session_ends_the_stream() {
    let session = Arc::new(std::sync::Mutex::new(Session::default()));
    let mut stream = EventStream::new(session.clone()).unwrap();
    let wakes = Arc::new(CountingWaker::default());
    let waker = Waker::from(wakes.clone());
    assert!(poll_once(&mut stream, &waker).is_pending());

    session.lock().unwrap().close();

    assert_eq!(
        wakes.wakes.load(Ordering::SeqCst),
        1,
        "close wakes the waiting consumer"
    );
    assert!(matches!(poll_once(&mut stream, &waker), Poll::Ready(None)));
}
