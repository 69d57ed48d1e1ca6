//! The Watch RPCs without decoding and re-encoding: records leave the ring
//! as the bytes the layer encoded, wrapped on the fly in the response
//! framing (`repeated StreamEvent events = 1` of every Watch response) with
//! their cursor appended. Only what a filter must look into is decoded.

use std::convert::Infallible;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::BufMut;
use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use prost::Message;
use tonic::body::Body;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::{Request, Response, Status};
use trident_proto::v1::{RecordKind, WatchOptions};

use super::validate;
use crate::bus::subscriber::Out;
use crate::bus::{Bus, Subscription};
use crate::record::wire::{
    len_delimited_len, put_len_delimited, put_str, put_varint, str_len, varint_len,
};

/// Field 1 of every Watch response, of `StreamEvent` (record) and of
/// `Record` (cursor); fields 1 and 2 of `Cursor`.
const TAG_EVENTS: u32 = 1;
const TAG_EVENT_RECORD: u32 = 1;
const TAG_RECORD_CURSOR: u32 = 1;
const TAG_CURSOR_RUN_ID: u32 = 1;
const TAG_CURSOR_SEQUENCE: u32 = 2;
/// Field 3 of `Record` (boot_id).
const TAG_RECORD_BOOT_ID: u32 = 3;

/// One Watch response, already encoded.
#[derive(Debug)]
pub struct EncodedResponse(Vec<u8>);

/// Encodes a batch as a Watch response; records of the ring get `boot_id`
/// when the subscriber asked for boot ids.
pub(crate) fn encode_batch(
    batch: Vec<Out>,
    run_id: &str,
    boot_id: Option<&str>,
) -> EncodedResponse {
    let mut buf = Vec::with_capacity(
        batch
            .iter()
            .map(|o| match o {
                Out::Raw(_, bytes) => bytes.len() + 64,
                Out::Event(_) => 128,
            })
            .sum(),
    );
    for out in batch {
        match out {
            Out::Event(event) => {
                put_len_delimited(TAG_EVENTS, event.encoded_len(), &mut buf);
                // A Vec grows as needed: encoding cannot fail.
                let _ = event.encode(&mut buf);
            }
            Out::Raw(seq, bytes) => {
                let cursor_len = str_len(TAG_CURSOR_RUN_ID, run_id.as_bytes())
                    + varint_len(TAG_CURSOR_SEQUENCE, seq);
                let boot_id = boot_id.unwrap_or_default().as_bytes();
                let record_len = bytes.len()
                    + len_delimited_len(TAG_RECORD_CURSOR, cursor_len)
                    + str_len(TAG_RECORD_BOOT_ID, boot_id);
                put_len_delimited(
                    TAG_EVENTS,
                    len_delimited_len(TAG_EVENT_RECORD, record_len),
                    &mut buf,
                );
                put_len_delimited(TAG_EVENT_RECORD, record_len, &mut buf);
                buf.extend_from_slice(&bytes);
                put_len_delimited(TAG_RECORD_CURSOR, cursor_len, &mut buf);
                put_str(TAG_CURSOR_RUN_ID, run_id.as_bytes(), &mut buf);
                put_varint(TAG_CURSOR_SEQUENCE, seq, &mut buf);
                put_str(TAG_RECORD_BOOT_ID, boot_id, &mut buf);
            }
        }
    }
    EncodedResponse(buf)
}

/// Codec: prost-decoded requests, pre-encoded responses.
#[derive(Debug)]
struct WatchCodec<R>(PhantomData<R>);

#[derive(Debug)]
struct ResponseEncoder;

#[derive(Debug)]
struct RequestDecoder<R>(PhantomData<R>);

impl<R: Message + Default + Send + 'static> Codec for WatchCodec<R> {
    type Encode = EncodedResponse;
    type Decode = R;
    type Encoder = ResponseEncoder;
    type Decoder = RequestDecoder<R>;

    fn encoder(&mut self) -> Self::Encoder {
        ResponseEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        RequestDecoder(PhantomData)
    }
}

impl Encoder for ResponseEncoder {
    type Item = EncodedResponse;
    type Error = Status;

    fn encode(&mut self, item: EncodedResponse, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item.0);
        Ok(())
    }
}

impl<R: Message + Default> Decoder for RequestDecoder<R> {
    type Item = R;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<R>, Status> {
        R::decode(src)
            .map(Some)
            .map_err(|e| Status::invalid_argument(format!("malformed request: {e}")))
    }
}

type EncodedStream = Pin<Box<dyn Stream<Item = Result<EncodedResponse, Status>> + Send + 'static>>;

/// What a Watch request asks for: its options and record kinds.
pub(super) type Split<R> = fn(R) -> Result<(Option<WatchOptions>, Vec<RecordKind>), Status>;

/// One Watch method: what to subscribe to, from its request.
struct WatchMethod<R> {
    bus: Bus,
    split: Split<R>,
}

impl<R: Send + 'static> tower::Service<Request<R>> for WatchMethod<R> {
    type Response = Response<EncodedStream>;
    type Error = Status;
    type Future = std::future::Ready<Result<Self::Response, Status>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<R>) -> Self::Future {
        std::future::ready(self.subscribe(request.into_inner()))
    }
}

impl<R> WatchMethod<R> {
    fn subscribe(&self, request: R) -> Result<Response<EncodedStream>, Status> {
        let (options, kinds) = (self.split)(request)?;
        let options = options.unwrap_or_default();
        validate(&options)?;
        let run_id = self.bus.run_id().to_owned();
        let boot_id = options
            .with_boot_ids
            .then(|| self.bus.config().boot_id.clone());
        let batches = self.bus.subscribe_out(Subscription { options, kinds });
        Ok(Response::new(Box::pin(batches.map(move |batch| {
            Ok(encode_batch(batch, &run_id, boot_id.as_deref()))
        }))))
    }
}

/// Streams one Watch call: `split` says what the request asks for.
pub(super) fn serve_watch<R>(
    bus: Bus,
    request: http::Request<Body>,
    split: Split<R>,
) -> BoxFuture<'static, Result<http::Response<Body>, Infallible>>
where
    R: Message + Default + Send + 'static,
{
    Box::pin(async move {
        let mut grpc = tonic::server::Grpc::new(WatchCodec::<R>(PhantomData));
        Ok(grpc
            .server_streaming(WatchMethod { bus, split }, request)
            .await)
    })
}
