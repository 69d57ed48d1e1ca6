//! The [`KebabName`] trait: a value's kebab-case name. A leaf, so the error
//! model, the Host Status and the name tables ([`crate::names`]) can all
//! name it without naming each other.

/// A value's kebab-case name, the spelling users and files see.
pub trait KebabName: Copy {
    fn kebab_name(self) -> &'static str;
}

/// A protobuf enum value that has no counterpart in the host model
/// (UNSPECIFIED, or a state this daemon never enters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0} has no counterpart in the host model")]
pub struct NoCounterpart(pub &'static str);
