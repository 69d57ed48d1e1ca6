//! The two locks of the design doc.
//!
//! * [`ConnectionLock`]: a read-write lock. Queries (status, config, last
//!   error, validation) hold it in read mode for their whole duration, so
//!   they run concurrently. Servicing holds it in write mode around every
//!   state transition (checking the state and recording the operation at
//!   the start, committing the new state at the end), so a query never
//!   observes half a transition. It is NOT held while images are written,
//!   so status queries stay answerable during a long operation.
//! * [`ServicingLock`]: at most one servicing operation at a time, held by
//!   the operation's task (not the connection), so a client that disconnects
//!   does not free it. A second request is refused at once, naming the
//!   running operation.

use std::sync::{Arc, Mutex, PoisonError};

/// Connection read-write lock.
pub type ConnectionLock = tokio::sync::RwLock<()>;

/// The operation that holds the servicing lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningOperation {
    /// Empty until the operation has started (id assigned).
    pub operation_id: String,
    pub rpc: &'static str,
}

/// Global servicing lock.
#[derive(Debug, Default, Clone)]
pub struct ServicingLock {
    current: Arc<Mutex<Option<RunningOperation>>>,
}

/// Holds the servicing lock; released on drop.
#[derive(Debug)]
pub struct ServicingGuard {
    current: Arc<Mutex<Option<RunningOperation>>>,
}

impl ServicingLock {
    /// Takes the lock for `rpc`, or returns the operation holding it.
    pub fn try_acquire(&self, rpc: &'static str) -> Result<ServicingGuard, RunningOperation> {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(running) = current.as_ref() {
            return Err(running.clone());
        }
        *current = Some(RunningOperation {
            operation_id: String::new(),
            rpc,
        });
        Ok(ServicingGuard {
            current: Arc::clone(&self.current),
        })
    }

    /// The running operation, if any.
    pub fn running(&self) -> Option<RunningOperation> {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl ServicingGuard {
    /// Names the operation once its id is known.
    pub fn set_operation_id(&self, id: &str) {
        if let Some(running) = self
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            running.operation_id = id.to_owned();
        }
    }
}

impl Drop for ServicingGuard {
    fn drop(&mut self) {
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn second_acquire_names_the_running_operation_until_released() {
        let lock = ServicingLock::default();
        let guard = lock.try_acquire("Install").unwrap();
        guard.set_operation_id("op-1");
        let busy = lock.try_acquire("UpdateStage").unwrap_err();
        assert_eq!(busy.operation_id, "op-1");
        assert_eq!(busy.rpc, "Install");
        drop(guard);
        assert!(lock.try_acquire("UpdateStage").is_ok());
    }
}
