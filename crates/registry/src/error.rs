//! [`RegistryError`]: what went wrong talking to a registry. Every text in it that the registry
//! wrote is escaped for printing ([`opm_core::printable`]).

/// A request to a registry that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The request did not complete: no connection, TLS refused, timed out.
    #[error("{what}: {method} {url} failed")]
    Network {
        /// What was asked for.
        what: String,
        /// The method.
        method: reqwest::Method,
        /// Where.
        url: String,
        /// Why.
        source: reqwest::Error,
    },
    /// The registry answered with an error status.
    #[error("{what}: {method} {url} answered {status}{body}{hint}")]
    Status {
        /// What was asked for.
        what: String,
        /// The method.
        method: reqwest::Method,
        /// Where.
        url: String,
        /// The status.
        status: reqwest::StatusCode,
        /// `: ` and the start of the error body, escaped, or nothing.
        body: String,
        /// What to do about it, or nothing.
        hint: &'static str,
    },
    /// A response declared a length over its limit; none of it was read.
    #[error(
        "{what} from {url} declares {declared} bytes, over its limit of {limit} bytes; none of \
         it was read"
    )]
    Declared {
        /// What was asked for.
        what: String,
        /// Where.
        url: String,
        /// Its `Content-Length`.
        declared: u64,
        /// The limit.
        limit: u64,
    },
    /// A response went on past its limit; reading stopped there.
    #[error(
        "{what} from {url} is longer than its limit of {limit} bytes; opm stopped reading there"
    )]
    TooLong {
        /// What was asked for.
        what: String,
        /// Where.
        url: String,
        /// The limit.
        limit: u64,
    },
    /// A URL a registry named (a token realm, a redirect, an upload location) is plain HTTP to
    /// a host that is not this machine, without `--insecure-http`.
    #[error(
        "{what}: {url} is plain HTTP to a host that is not on loopback; opm uses it only with \
         --insecure-http"
    )]
    PlainHttp {
        /// What the URL was for.
        what: String,
        /// The URL.
        url: String,
    },
    /// The registry asked for authentication opm cannot give.
    #[error("{url} wants {wanted}")]
    Unauthorized {
        /// Where.
        url: String,
        /// What it wants and why opm cannot give it.
        wanted: String,
    },
    /// A response is not what the distribution API says it is.
    #[error("{what} from {url}: {detail}")]
    Invalid {
        /// What was asked for.
        what: String,
        /// Where.
        url: String,
        /// What is wrong with it, escaped.
        detail: String,
    },
    /// Bytes that do not hash to the digest they were fetched by.
    #[error(
        "{what}: the registry served bytes whose digest is {actual}; expected {expected}: refused"
    )]
    Digest {
        /// What was fetched.
        what: String,
        /// The digest it was fetched by.
        expected: String,
        /// The digest of what came.
        actual: String,
    },
    /// The registry's host does not make a URL.
    #[error("{host:?} is not a registry host: {detail}")]
    Host {
        /// The host, escaped.
        host: String,
        /// Why.
        detail: String,
    },
    /// The HTTP client could not be set up.
    #[error("cannot set up the registry client")]
    Setup(#[source] reqwest::Error),
}
