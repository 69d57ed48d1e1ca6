//! `os.kernelCommandLine`: the arguments the boot entries of the new OS
//! carry beyond the image's own. The boot-entry writer calls
//! [`extra_args`]; nothing is written here.

use trident_host::config::Os;

/// The extra kernel arguments, in the order given, each checked to be one
/// word (a boot entry's `options` line is split on whitespace).
pub fn extra_args(os: &Os) -> Result<Vec<String>, super::root_fs::OsConfigError> {
    let args = &os.kernel_command_line.extra_command_line;
    for (i, arg) in args.iter().enumerate() {
        trident_host::config::document_rules::check_word(arg, "kernel argument").map_err(
            |rule| {
                super::root_fs::OsConfigError::document(
                    format!("os.kernelCommandLine.extraCommandLine[{i}]"),
                    rule,
                )
            },
        )?;
    }
    Ok(args.clone())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn gives_the_extra_args_in_order_and_refuses_spaces() {
        let mut os = Os::default();
        assert!(extra_args(&os).unwrap().is_empty());
        os.kernel_command_line.extra_command_line = vec!["console=ttyS0".into(), "quiet".into()];
        assert_eq!(extra_args(&os).unwrap(), ["console=ttyS0", "quiet"]);
        os.kernel_command_line.extra_command_line = vec!["a b".into()];
        let err = extra_args(&os).unwrap_err();
        assert_eq!(err.key(), "os.kernelCommandLine.extraCommandLine[0]");
    }
}
