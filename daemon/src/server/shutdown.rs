//! Shutdown: signals, the trigger that stops the server, and the hook list
//! run after in-flight work is done (telemetry flush registers there).

use std::{
    fmt,
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{
    signal::unix::{SignalKind, signal},
    sync::watch,
};

/// Why the daemon is stopping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownReason {
    /// SIGTERM (systemd stop) or SIGINT (Ctrl-C).
    Signal(&'static str),
    /// Nothing was active for the inactivity timeout.
    Idle(Duration),
}

impl fmt::Display for ShutdownReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Signal(name) => write!(f, "received {name}"),
            Self::Idle(timeout) => write!(f, "idle for {}", humantime::format_duration(*timeout)),
        }
    }
}

/// Fires once; every clone can trigger it or wait for it.
#[derive(Debug, Clone)]
pub struct ShutdownTrigger {
    tx: Arc<watch::Sender<Option<ShutdownReason>>>,
}

impl Default for ShutdownTrigger {
    fn default() -> Self {
        Self::new()
    }
}

impl ShutdownTrigger {
    /// A trigger that has not fired.
    pub fn new() -> Self {
        let (tx, _rx) = watch::channel(None);
        Self { tx: Arc::new(tx) }
    }

    /// Starts shutdown; the first reason wins.
    pub fn trigger(&self, reason: ShutdownReason) {
        self.tx.send_if_modified(|current| {
            if current.is_none() {
                *current = Some(reason);
                true
            } else {
                false
            }
        });
    }

    /// The reason, once triggered.
    pub fn reason(&self) -> Option<ShutdownReason> {
        *self.tx.borrow()
    }

    /// Resolves once shutdown has been triggered.
    pub async fn triggered(&self) -> ShutdownReason {
        let mut rx = self.tx.subscribe();
        loop {
            if let Some(reason) = *rx.borrow_and_update() {
                return reason;
            }
            // The sender lives in `self`; it cannot be dropped while we wait.
            if rx.changed().await.is_err() {
                return ShutdownReason::Signal("shutdown");
            }
        }
    }
}

/// Triggers shutdown on SIGTERM or SIGINT.
pub fn spawn_signal_listener(trigger: ShutdownTrigger) -> std::io::Result<()> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        trigger.trigger(ShutdownReason::Signal(name));
    });
    Ok(())
}

type Hook = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// Work to do once the server has stopped, before the process exits
/// (e.g. flushing telemetry exporters). Hooks run in reverse registration
/// order, each bounded by a timeout so a stuck hook cannot hang exit.
#[derive(Clone, Default)]
pub struct ShutdownHooks {
    hooks: Arc<Mutex<Vec<(&'static str, Hook)>>>,
}

impl fmt::Debug for ShutdownHooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self
            .hooks
            .lock()
            .map(|hooks| hooks.iter().map(|(name, _)| *name).collect())
            .unwrap_or_default();
        f.debug_struct("ShutdownHooks")
            .field("hooks", &names)
            .finish()
    }
}

/// Bound on each shutdown hook.
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(5);

impl ShutdownHooks {
    /// Registers `hook` under `name` (used in logs).
    pub fn register<F, Fut>(&self, name: &'static str, hook: F)
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let hook: Hook = Box::new(move || Box::pin(hook()));
        match self.hooks.lock() {
            Ok(mut hooks) => hooks.push((name, hook)),
            Err(poisoned) => poisoned.into_inner().push((name, hook)),
        }
    }

    /// Runs and removes every hook, last registered first.
    pub async fn run(&self) {
        let hooks = match self.hooks.lock() {
            Ok(mut hooks) => std::mem::take(&mut *hooks),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        for (name, hook) in hooks.into_iter().rev() {
            tracing::debug!(hook = name, "running shutdown hook");
            if tokio::time::timeout(HOOK_TIMEOUT, hook()).await.is_err() {
                tracing::warn!(hook = name, timeout = ?HOOK_TIMEOUT, "shutdown hook timed out");
            }
        }
    }
}
