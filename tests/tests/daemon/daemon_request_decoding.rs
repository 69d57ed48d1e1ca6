//! Requests tonic refuses before a handler runs get the codes daemon/README.md's
//! error mapping promises: an oversize message RESOURCE_EXHAUSTED naming
//! the limit, malformed protobuf INVALID_ARGUMENT (tonic alone answers
//! OUT_OF_RANGE and INTERNAL). A raw-bytes client sends what a generated
//! client never would.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use bytes::{Buf, BufMut};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::{Code, Status};
use trident_e2e::Daemon;

/// Sends and receives message bodies as they are.
#[derive(Debug, Clone, Default)]
struct RawCodec;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        let bytes = src.chunk().to_vec();
        src.advance(bytes.len());
        Ok(Some(bytes))
    }
}

async fn call_raw(daemon: &Daemon, path: &'static str, body: Vec<u8>) -> Result<Vec<u8>, Status> {
    let mut grpc = tonic::client::Grpc::new(daemon.channel().await.unwrap());
    grpc.ready().await.unwrap();
    grpc.unary(
        tonic::Request::new(body),
        http::uri::PathAndQuery::from_static(path),
        RawCodec,
    )
    .await
    .map(tonic::Response::into_inner)
}

const VERSION: &str = "/trident.v1.VersionService/Version";
const GET_LAST_ERROR: &str = "/trident.v1.TelemetryService/GetLastError";

#[tokio::test]
async fn oversize_request_is_resource_exhausted_naming_the_limit() {
    let daemon = Daemon::start().await.unwrap();
    for path in [VERSION, GET_LAST_ERROR] {
        let status = call_raw(&daemon, path, vec![0; 5 << 20]).await.unwrap_err();
        assert_eq!(status.code(), Code::ResourceExhausted, "{path}: {status:?}");
        assert!(
            status.message().contains("4194304 bytes"),
            "{path}: {status:?}"
        );
    }
    // The daemon keeps serving.
    assert!(call_raw(&daemon, VERSION, Vec::new()).await.is_ok());
}

#[tokio::test]
async fn malformed_protobuf_is_invalid_argument() {
    let daemon = Daemon::start().await.unwrap();
    // A field tag with wire type 7 (invalid), then a truncated varint.
    for body in [vec![0x0f, 0x01], vec![0x08, 0xff, 0xff]] {
        for path in [VERSION, GET_LAST_ERROR] {
            let status = call_raw(&daemon, path, body.clone()).await.unwrap_err();
            assert_eq!(status.code(), Code::InvalidArgument, "{path}: {status:?}");
            assert!(
                status.message().contains("malformed request message"),
                "{path}: {status:?}"
            );
        }
    }
    assert!(call_raw(&daemon, VERSION, Vec::new()).await.is_ok());
}
