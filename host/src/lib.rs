//! The host servicing model.
