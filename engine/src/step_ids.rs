//! Ids of the planned steps that a flow may drop once it runs (see
//! `machinery::plan`). A leaf: the plan and the flows both name them.

/// The configure step (fstab, OS configuration): it runs only when the new
/// root is mounted.
pub const CONFIGURE: &str = "configure";
/// The boot-files step: it runs only when the new root is mounted.
pub const BOOT_FILES: &str = "boot-files";
/// The runtime update's step that changes the running system.
pub const APPLY: &str = "apply";
