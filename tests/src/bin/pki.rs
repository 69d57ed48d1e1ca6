//! `trident-e2e-pki DIR HOST...`: writes a throw-away CA (`DIR/ca.pem`), the
//! orchestrator's certificate for `orchestrator.test`
//! (`DIR/orchestrator.{pem,key}`) and one certificate per HOST
//! (`DIR/HOST.{pem,key}`, identity HOST), for tests outside Rust (the
//! Python client through the reverse-connect proxy). DIR is created if
//! missing; `--help` prints this usage.

use std::path::PathBuf;
use std::process::ExitCode;

use trident_rcp::pki::{LeafSpec, TestCa};

const USAGE: &str = "usage: trident-e2e-pki DIR HOST...";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Options first: `--help` is not a directory to write into.
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    if let Some(option) = args.iter().find(|a| a.starts_with('-')) {
        eprintln!("trident-e2e-pki: unknown option {option}\n{USAGE}");
        return ExitCode::from(2);
    }
    let mut args = args.into_iter();
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = (|| -> anyhow::Result<()> {
        std::fs::create_dir_all(&dir)?;
        let ca = TestCa::new("trident e2e CA")?;
        ca.write_files(&dir, "orchestrator", &LeafSpec::dns("orchestrator.test"))?;
        for host in args {
            ca.write_files(&dir, &host, &LeafSpec::dns(&host))?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("trident-e2e-pki: {err:#}");
            ExitCode::from(1)
        }
    }
}
