//! The secrets this process knows of, for sinks that cannot be handed the
//! configuration that holds them (the OTLP export redacts every string it
//! sends with [`redact_known`]). The daemon adds the secrets of every Host
//! Configuration it accepts and of the stored Host Status at start-up;
//! values are only ever added (a secret of a replaced configuration may
//! still sit in a record not yet exported).

use std::borrow::Cow;
use std::sync::{PoisonError, RwLock};

use super::Secrets;

static KNOWN: RwLock<Option<Secrets>> = RwLock::new(None);

/// Adds `secrets` to the known ones.
pub fn remember(secrets: &Secrets) {
    if secrets.is_empty() {
        return;
    }
    let mut known = KNOWN.write().unwrap_or_else(PoisonError::into_inner);
    known.get_or_insert_with(Secrets::default).extend(secrets);
}

/// The known secrets (e.g. to redact a script's output with the secrets of
/// every script, not only its own environment's).
pub fn snapshot() -> Secrets {
    KNOWN
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .unwrap_or_default()
}

/// `text` with every known secret value, every PEM private key body and
/// URL credentials replaced by [`super::REDACTED`].
pub fn redact_known(text: &str) -> Cow<'_, str> {
    let known = KNOWN.read().unwrap_or_else(PoisonError::into_inner);
    match known.as_ref() {
        Some(secrets) => secrets.redact(text),
        None => super::redact_patterns(Cow::Borrowed(text)),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn remembered_secrets_are_redacted_from_then_on() {
        let value = "known-only-after-remember-71c";
        assert_eq!(redact_known(value), value);
        let env = BTreeMap::from([("X_TOKEN".to_owned(), value.to_owned())]);
        remember(&Secrets::of_env(&env));
        assert_eq!(redact_known(&format!("t={value}")), "t=[REDACTED]");
    }
}
