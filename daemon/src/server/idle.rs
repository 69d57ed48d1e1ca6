//! Activity accounting and idle shutdown.
//!
//! Everything that must keep the daemon alive holds an [`ActivityGuard`]:
//! each open connection, each in-flight request (a streaming response counts
//! until its body ends or is dropped), and each background servicing task.
//! The idle timer starts when the count drops to zero and never fires while
//! anything is active.

use std::{
    fmt,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use tokio::sync::watch;
use tonic::body::Body;
use tower::{Layer, Service};

/// Counts what keeps the daemon alive. Cheap to clone; all clones share the counts.
///
/// Two counts: everything (connections, requests, operations) decides idle
/// exit; work (requests, operations, not idle connections) is what shutdown
/// waits for before exiting.
///
/// Connections that have not sent a request yet are counted apart
/// ([`Activity::handshaking`]): they keep nothing alive (see
/// `listener::connection::HANDSHAKE_TIMEOUT`).
#[derive(Clone)]
pub struct Activity {
    all: Arc<watch::Sender<usize>>,
    work: Arc<watch::Sender<usize>>,
    handshaking: Arc<AtomicUsize>,
}

impl fmt::Debug for Activity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Activity")
            .field("active", &self.active())
            .field("working", &self.working())
            .field("handshaking", &self.handshaking())
            .finish()
    }
}

impl Default for Activity {
    fn default() -> Self {
        Self::new()
    }
}

impl Activity {
    /// A fresh tracker with nothing active.
    pub fn new() -> Self {
        Self {
            all: Arc::new(watch::channel(0).0),
            work: Arc::new(watch::channel(0).0),
            handshaking: Arc::default(),
        }
    }

    /// Marks a connection that has not sent its first request yet: counted
    /// in [`Activity::handshaking`] only, so it neither keeps the daemon
    /// from exiting as idle nor delays shutdown.
    pub fn handshake_guard(&self) -> HandshakeGuard {
        self.handshaking.fetch_add(1, Ordering::Relaxed);
        HandshakeGuard {
            handshaking: Arc::clone(&self.handshaking),
        }
    }

    /// How many connections are open without having sent a request.
    pub fn handshaking(&self) -> usize {
        self.handshaking.load(Ordering::Relaxed)
    }

    /// Marks a piece of work (a request, a background servicing operation)
    /// active until the returned guard is dropped. `what` names it in trace logs.
    pub fn guard(&self, what: &'static str) -> ActivityGuard {
        self.all.send_modify(|count| *count += 1);
        self.work.send_modify(|count| *count += 1);
        tracing::trace!(what, active = self.active(), "activity started");
        ActivityGuard {
            activity: self.clone(),
            what,
            is_work: true,
        }
    }

    /// Marks an open connection: keeps the daemon from idling out, but
    /// shutdown does not wait for idle connections.
    pub fn connection_guard(&self) -> ActivityGuard {
        self.all.send_modify(|count| *count += 1);
        ActivityGuard {
            activity: self.clone(),
            what: "connection",
            is_work: false,
        }
    }

    /// How many things (connections included) are active now.
    pub fn active(&self) -> usize {
        *self.all.borrow()
    }

    /// How many requests and operations are in flight now.
    pub fn working(&self) -> usize {
        *self.work.borrow()
    }

    /// Resolves once no request or operation is in flight.
    pub async fn wait_no_work(&self) {
        let mut rx = self.work.subscribe();
        // The sender lives in `self`, so the channel cannot close here.
        let _ = rx.wait_for(|count| *count == 0).await;
    }

    /// Resolves when nothing has been active for `timeout` in a row.
    pub async fn idle_for(&self, timeout: Duration) {
        let mut rx = self.all.subscribe();
        loop {
            if rx.wait_for(|count| *count == 0).await.is_err() {
                return;
            }
            rx.mark_unchanged();
            tokio::select! {
                () = tokio::time::sleep(timeout) => {
                    if *rx.borrow() == 0 {
                        return;
                    }
                }
                // Any change (even 0 -> 1 -> 0) restarts the timer.
                changed = rx.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
            }
        }
    }
}

/// Counts one connection still in its handshake while held.
#[derive(Debug)]
pub struct HandshakeGuard {
    handshaking: Arc<AtomicUsize>,
}

impl Drop for HandshakeGuard {
    fn drop(&mut self) {
        self.handshaking.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Keeps the daemon alive while held. Obtain one with [`Activity::guard`].
#[must_use = "the daemon may exit as idle as soon as the guard is dropped"]
pub struct ActivityGuard {
    activity: Activity,
    what: &'static str,
    is_work: bool,
}

impl fmt::Debug for ActivityGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ActivityGuard")
            .field("what", &self.what)
            .finish()
    }
}

impl Drop for ActivityGuard {
    fn drop(&mut self) {
        let decrement = |count: &mut usize| *count = count.saturating_sub(1);
        if self.is_work {
            self.activity.work.send_modify(decrement);
        }
        self.activity.all.send_modify(decrement);
        tracing::trace!(
            what = self.what,
            active = self.activity.active(),
            "activity ended"
        );
    }
}

/// Tower layer: every request is active until its response body ends or is dropped.
#[derive(Debug, Clone)]
pub struct ActivityLayer {
    activity: Activity,
}

impl ActivityLayer {
    /// Counts requests on `activity`.
    pub fn new(activity: Activity) -> Self {
        Self { activity }
    }
}

impl<S> Layer<S> for ActivityLayer {
    type Service = ActivityService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ActivityService {
            inner,
            activity: self.activity.clone(),
        }
    }
}

/// Service made by [`ActivityLayer`].
#[derive(Debug, Clone)]
pub struct ActivityService<S> {
    inner: S,
    activity: Activity,
}

impl<S, ReqBody> Service<http::Request<ReqBody>> for ActivityService<S>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<Body>> + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = super::ResponseFuture<Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        // Taken before the handler runs, so a slow unary call counts too.
        let guard = self.activity.guard("request");
        let future = self.inner.call(request);
        Box::pin(async move {
            let response = future.await?;
            Ok(response.map(|body| {
                Body::new(TrackedBody {
                    inner: body,
                    guard: Some(guard),
                })
            }))
        })
    }
}

/// A response body that holds an activity guard until it ends or is dropped.
struct TrackedBody {
    inner: Body,
    guard: Option<ActivityGuard>,
}

impl HttpBody for TrackedBody {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            self.guard = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn idle_timer_waits_for_the_last_guard_to_drop() {
        let activity = Activity::new();
        let guard = activity.guard("test");
        let idle = activity.idle_for(Duration::from_secs(1));
        tokio::pin!(idle);
        tokio::select! {
            () = &mut idle => panic!("fired while active"),
            () = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
        drop(guard);
        tokio::time::timeout(Duration::from_secs(2), idle)
            .await
            .unwrap();
        assert_eq!(activity.active(), 0);
    }
}
