//! `trident stream-disk URL [--hash H] [--verify-writes sampled|full]`:
//! StreamingService (v1).

use trident_proto::v1::streaming_service_client::StreamingServiceClient;
use trident_proto::v1::{self, StreamDiskRequest};

use crate::args::{StreamDiskArgs, VerifyWrites};
use crate::ctx::Ctx;
use crate::exit::{CliError, CliResult, Exit};
use crate::servicing::{self, fail, reboot};

/// Hex digits of a SHA-384.
const SHA384_HEX_LEN: usize = 96;

pub async fn run(ctx: &Ctx, args: &StreamDiskArgs) -> CliResult<Exit> {
    let image_hash = match &args.hash {
        None => None,
        Some(hash) => {
            let hex = hash.strip_prefix("sha384:").unwrap_or(hash);
            if hex.len() != SHA384_HEX_LEN || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(fail(
                    &args.servicing,
                    CliError::Usage(format!(
                        "--hash must be a SHA-384 of 96 hex digits (optionally \"sha384:\"-prefixed), got {hash:?}"
                    )),
                ));
            }
            Some(hex.to_ascii_lowercase())
        }
    };
    let request = StreamDiskRequest {
        image_url: args.url.clone(),
        image_hash,
        reboot: reboot(),
        // Sent only when asked for: a default request is upstream's.
        verify_writes: match args.verify_writes {
            VerifyWrites::Sampled => v1::VerifyWrites::Unspecified,
            VerifyWrites::Full => v1::VerifyWrites::Full,
        } as i32,
    };
    servicing::run(
        ctx,
        &args.servicing,
        "stream-disk",
        false,
        |channel, trace| {
            let request = request.clone();
            async move {
                StreamingServiceClient::new(channel)
                    .stream_disk(trace.request(request))
                    .await
            }
        },
    )
    .await
}
