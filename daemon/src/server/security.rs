//! Security model: the daemon runs as root only, and only root or members
//! of the socket group may call it. The socket file's mode is the first
//! barrier; the peer check here is the second, so a socket file with
//! looser permissions than intended still does not open the API.

use std::{
    fs,
    sync::atomic::Ordering,
    task::{Context, Poll},
};

use nix::unistd::{Gid, Group, Uid, geteuid};
use tonic::body::Body;
use tower::{Layer, Service};

use super::ServerError;
use super::peer::{PeerAccess, PeerInfo};
use super::refusal_log::RefusalLog;

/// Fails unless the effective user is root.
pub fn require_root() -> Result<(), ServerError> {
    let euid = geteuid();
    if euid.is_root() {
        Ok(())
    } else {
        Err(ServerError::NotRoot {
            euid: euid.as_raw(),
        })
    }
}

/// Who may call the API besides root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessPolicy {
    group: Option<(Gid, String)>,
}

impl AccessPolicy {
    /// Root only.
    pub fn root_only() -> Self {
        Self { group: None }
    }

    /// Root and members of `gid` (named `name` in messages).
    pub fn root_and_group(gid: Gid, name: String) -> Self {
        Self {
            group: Some((gid, name)),
        }
    }

    /// Root and the group named `name`; fails if the group does not exist.
    pub fn root_and_group_named(name: &str) -> Result<Self, ServerError> {
        let group = Group::from_name(name)
            .map_err(|source| ServerError::GroupLookup {
                name: name.to_owned(),
                source,
            })?
            .ok_or_else(|| ServerError::UnknownGroup(name.to_owned()))?;
        Ok(Self::root_and_group(group.gid, name.to_owned()))
    }

    /// The allowed group, if any.
    pub fn group(&self) -> Option<Gid> {
        self.group.as_ref().map(|(gid, _)| *gid)
    }

    /// What a caller needs, for messages.
    pub fn requirement(&self) -> String {
        match &self.group {
            Some((gid, name)) => format!("root or membership in group {name} (gid {gid})"),
            None => "root".to_owned(),
        }
    }

    /// Decides access for a peer from its credentials.
    pub fn check(&self, uid: u32, gid: u32, pid: Option<i32>) -> PeerAccess {
        if Uid::from_raw(uid).is_root() {
            return PeerAccess::Allowed;
        }
        if let Some((group, _)) = &self.group {
            let group = group.as_raw();
            if gid == group || pid.is_some_and(|pid| supplementary_groups(pid).contains(&group)) {
                return PeerAccess::Allowed;
            }
        }
        PeerAccess::Denied(format!(
            "permission denied: caller uid {uid} gid {gid} is not allowed; tridentd requires {}",
            self.requirement()
        ))
    }
}

/// Supplementary groups of a live process, from the `Groups:` line of
/// /proc/<pid>/status (the process's actual groups, not the user's
/// configured ones). Empty if the process is gone.
fn supplementary_groups(pid: i32) -> Vec<u32> {
    let Ok(status) = fs::read_to_string(format!("/proc/{pid}/status")) else {
        return Vec::new();
    };
    status
        .lines()
        .find_map(|line| line.strip_prefix("Groups:"))
        .map(|groups| {
            groups
                .split_whitespace()
                .filter_map(|gid| gid.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Tower layer answering PERMISSION_DENIED for peers that failed the check
/// (the warning rate-limited by [`RefusalLog`]).
#[derive(Debug, Clone)]
pub struct PeerAuthLayer {
    refusals: RefusalLog,
}

impl PeerAuthLayer {
    /// Warns about a refused peer at most once per `log_interval`.
    pub fn new(log_interval: std::time::Duration) -> Self {
        Self {
            refusals: RefusalLog::new(log_interval),
        }
    }
}

impl<S> Layer<S> for PeerAuthLayer {
    type Service = PeerAuthService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        PeerAuthService {
            inner,
            refusals: self.refusals.clone(),
        }
    }
}

/// Service made by [`PeerAuthLayer`].
#[derive(Debug, Clone)]
pub struct PeerAuthService<S> {
    inner: S,
    refusals: RefusalLog,
}

impl<S, ReqBody> Service<http::Request<ReqBody>> for PeerAuthService<S>
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
        if let Some(peer) = request.extensions().get::<PeerInfo>() {
            peer.request_seen.store(true, Ordering::Release);
        }
        let denied = match request.extensions().get::<PeerInfo>() {
            Some(PeerInfo {
                access: PeerAccess::Allowed,
                ..
            }) => None,
            Some(
                peer @ PeerInfo {
                    access: PeerAccess::Denied(message),
                    ..
                },
            ) => {
                self.refusals.refused(peer, request.uri().path());
                Some(message.clone())
            }
            // Fail closed: a connection we could not identify gets nothing.
            None => Some("permission denied: peer credentials unavailable".to_owned()),
        };
        match denied {
            Some(message) => {
                let response = tonic::Status::permission_denied(message).into_http::<Body>();
                Box::pin(async move { Ok(response) })
            }
            None => Box::pin(self.inner.call(request)),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn root_is_always_allowed_and_others_need_the_group() {
        let policy = AccessPolicy::root_and_group(Gid::from_raw(4242), "ops".into());
        assert_eq!(policy.check(0, 0, None), PeerAccess::Allowed);
        assert_eq!(policy.check(1000, 4242, None), PeerAccess::Allowed);
        let PeerAccess::Denied(message) = policy.check(1000, 1000, None) else {
            panic!("non-member allowed");
        };
        assert!(message.contains("uid 1000"), "{message}");
        assert!(message.contains("group ops"), "{message}");
    }

    #[test]
    fn root_only_policy_denies_every_other_user() {
        let policy = AccessPolicy::root_only();
        assert!(matches!(
            policy.check(65534, 65534, None),
            PeerAccess::Denied(_)
        ));
    }
}
