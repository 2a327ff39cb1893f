//! How much of a registry's response opm reads, and how long it waits. Every body is read chunk
//! by chunk and reading stops at its limit, so a registry that streams without end costs opm at
//! most the limit (plus one chunk) of memory; a declared `Content-Length` over the limit is
//! refused before any of the body is read.

use std::time::Duration;

/// The most a manifest or index may weigh (a provider's is under 2 KiB).
pub const MAX_MANIFEST_BYTES: u64 = 1 << 20;
/// The most a tag list may weigh: some 40,000 version tags.
pub const MAX_TAG_LIST_BYTES: u64 = 1 << 20;
/// The most a token response may weigh (registries' tokens are a few KiB of JWT).
pub const MAX_TOKEN_BYTES: u64 = 64 << 10;
/// The most a provider's minisign signature layer may weigh.
pub const MAX_SIGNATURE_BYTES: u64 = 64 << 10;
/// How much of an error response's body is read and shown; the rest is not read.
pub const ERROR_BODY_SHOWN_BYTES: usize = 4 << 10;

/// How long connecting (TCP and TLS) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a response may stall between two reads.
pub const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a whole request for a manifest, tag list or token may take, body included: a
/// registry that trickles a byte a minute is cut off here.
pub const DOCUMENT_DEADLINE: Duration = Duration::from_secs(120);
/// How long a whole blob upload or download may take (a bundle is at most 256 MiB).
pub const BLOB_DEADLINE: Duration = Duration::from_secs(30 * 60);
/// The most redirects one request follows.
pub const MAX_REDIRECTS: usize = 5;
