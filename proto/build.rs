//! Compiles the .proto files with `protox` (pure Rust, no system `protoc`)
//! and generates tonic clients and servers with `tonic-prost-build`. The
//! encoded file descriptor set is kept for gRPC server reflection.

use std::{env, fs, path::PathBuf};

use prost::Message;

const PROTO_ROOT: &str = "trident";
const INCLUDE: &str = ".";

fn proto_files(dir: &std::path::Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            proto_files(&path, out)?;
        } else if path.extension().is_some_and(|ext| ext == "proto") {
            out.push(path);
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut files = Vec::new();
    proto_files(std::path::Path::new(PROTO_ROOT), &mut files)?;
    files.sort();
    println!("cargo:rerun-if-changed={PROTO_ROOT}");

    let fds = protox::compile(&files, [INCLUDE])?;
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    fs::write(out_dir.join("trident_descriptor.bin"), fds.encode_to_vec())?;

    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
