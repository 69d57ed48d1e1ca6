//! `trident-e2e-pki DIR HOST...`: writes a throw-away CA (`DIR/ca.pem`), the
//! orchestrator's certificate for `orchestrator.test`
//! (`DIR/orchestrator.{pem,key}`) and one certificate per HOST
//! (`DIR/HOST.{pem,key}`, identity HOST), for tests outside Rust (the
//! Python client through the reverse-connect proxy).

use std::path::PathBuf;
use std::process::ExitCode;

use trident_rcp::pki::{LeafSpec, TestCa};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: trident-e2e-pki DIR HOST...");
        return ExitCode::from(2);
    };
    let result = (|| -> anyhow::Result<()> {
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
