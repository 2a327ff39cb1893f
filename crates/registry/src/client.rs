//! [`Client`]: the part of the OCI distribution API opm uses, on `reqwest` — manifests by tag
//! or digest, blobs, tag lists, blob uploads and manifest pushes — with anonymous, Basic and
//! Bearer-token authentication.
//!
//! Every body is read through [`read_bounded`], which stops at the limit its caller states
//! ([`opm_core::provider::oci::limits`]); error bodies through [`status_error`], which reads at most
//! [`ERROR_BODY_SHOWN_BYTES`] and shows them escaped. A request answered `401` with a
//! `WWW-Authenticate` challenge is sent once more: with a token from the `Bearer` realm (asked
//! for with the Docker config's credentials, if any) or with those credentials for `Basic`.
//! Plain HTTP is used for a loopback registry or with `insecure_http`, and only then is a token
//! realm, redirect or upload location allowed to be plain HTTP.

use bytes::Bytes;
use reqwest::header::{
    ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, LOCATION, WWW_AUTHENTICATE,
};
use reqwest::{Method, Response, StatusCode, Url};

use crate::credentials::Credentials;
use crate::error::RegistryError;
use opm_core::printable::escape;
use opm_core::provider::oci::challenge::{Challenge, parse_challenges};
use opm_core::provider::oci::documents::{self, INDEX_MEDIA_TYPE, MANIFEST_MEDIA_TYPE};
use opm_core::provider::oci::limits::{
    BLOB_DEADLINE, CONNECT_TIMEOUT, DOCUMENT_DEADLINE, ERROR_BODY_SHOWN_BYTES, MAX_MANIFEST_BYTES,
    MAX_REDIRECTS, MAX_TAG_LIST_BYTES, MAX_TOKEN_BYTES, READ_TIMEOUT,
};
use opm_core::provider::oci::reference::{OciRef, is_digest, is_loopback};

/// A client for one repository of one registry.
#[derive(Debug)]
pub struct Client {
    http: reqwest::Client,
    /// `scheme://host[:port]/`.
    base: Url,
    repository: String,
    insecure_http: bool,
    credentials: Option<Credentials>,
    /// What the last challenge was answered with, sent with every request to `base`.
    authorization: Option<HeaderValue>,
}

/// One request, as [`Client::send`] sends it (again, after a challenge).
struct Request<'a> {
    what: &'a str,
    method: Method,
    url: Url,
    headers: HeaderMap,
    body: Option<Bytes>,
    deadline: std::time::Duration,
}

impl Client {
    /// A client for `reference`'s repository: plain HTTP when its registry is on loopback or
    /// `insecure_http` allows it, else HTTPS.
    pub fn new(
        reference: &OciRef,
        insecure_http: bool,
        credentials: Option<Credentials>,
    ) -> Result<Self, RegistryError> {
        let host = reference.api_host();
        let scheme = if insecure_http || is_loopback(host) {
            "http"
        } else {
            "https"
        };
        let base = Url::parse(&format!("{scheme}://{host}/")).map_err(|e| RegistryError::Host {
            host: escape(host).into_owned(),
            detail: e.to_string(),
        })?;
        // rustls without a default provider: ring, installed once per process.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .user_agent(concat!("opm/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() >= MAX_REDIRECTS {
                    attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
                } else if !scheme_allowed(attempt.url(), insecure_http) {
                    attempt.error(
                        "a redirect to plain HTTP on a host that is not on loopback, without \
                         --insecure-http",
                    )
                } else {
                    attempt.follow()
                }
            }))
            .build()
            .map_err(RegistryError::Setup)?;
        Ok(Self {
            http,
            base,
            repository: reference.repository().to_owned(),
            insecure_http,
            credentials,
            authorization: None,
        })
    }

    /// `/v2/<repository>/<rest>` on the registry.
    fn url(&self, rest: &str) -> Url {
        let mut url = self.base.clone();
        url.set_path(&format!("/v2/{}/{rest}", self.repository));
        url
    }

    /// Sends `request`, answering one `401` challenge; returns whatever status comes.
    async fn send(&mut self, request: Request<'_>) -> Result<Response, RegistryError> {
        let mut answered = false;
        loop {
            let mut builder = self
                .http
                .request(request.method.clone(), request.url.clone())
                .timeout(request.deadline)
                .headers(request.headers.clone());
            if let Some(body) = &request.body {
                builder = builder.body(body.clone());
            }
            if let Some(authorization) = &self.authorization
                && request.url.origin() == self.base.origin()
            {
                builder = builder.header(AUTHORIZATION, authorization.clone());
            }
            let response = builder
                .send()
                .await
                .map_err(|source| RegistryError::Network {
                    what: request.what.to_owned(),
                    method: request.method.clone(),
                    url: request.url.to_string(),
                    source,
                })?;
            if response.status() != StatusCode::UNAUTHORIZED || answered {
                return Ok(response);
            }
            answered = true;
            let challenges: Vec<Challenge> = response
                .headers()
                .get_all(WWW_AUTHENTICATE)
                .iter()
                .filter_map(|value| value.to_str().ok())
                .flat_map(parse_challenges)
                .collect();
            drop(response);
            self.answer(&challenges, &request).await?;
        }
    }

    /// Sends `request` and returns its response if its status is a success, else the error.
    async fn success(&mut self, request: Request<'_>) -> Result<Response, RegistryError> {
        let what = request.what.to_owned();
        let method = request.method.clone();
        let response = self.send(request).await?;
        if response.status().is_success() {
            Ok(response)
        } else {
            let hint = self.hint(response.status());
            Err(status_error(response, what, method, hint).await)
        }
    }

    /// What to do about an error `status`.
    fn hint(&self, status: StatusCode) -> &'static str {
        match (status, &self.credentials) {
            (StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN, None) => {
                " (opm sent no credentials: none for this registry in the Docker config; \
                 `docker login` writes them)"
            }
            (StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN, Some(_)) => {
                " (opm sent the credentials the Docker config holds for this registry)"
            }
            _ => "",
        }
    }

    /// Answers the `challenges` of a `401` to `request`: a Bearer token, else Basic
    /// credentials.
    async fn answer(
        &mut self,
        challenges: &[Challenge],
        request: &Request<'_>,
    ) -> Result<(), RegistryError> {
        let value = if let Some(bearer) = challenges.iter().find(|c| c.scheme == "bearer") {
            let token = self.token(bearer, request).await?;
            format!("Bearer {token}")
        } else if challenges.iter().any(|c| c.scheme == "basic") {
            match &self.credentials {
                Some(credentials) => credentials.basic(),
                None => {
                    return Err(RegistryError::Unauthorized {
                        url: request.url.to_string(),
                        wanted: "a user name and password, and the Docker config holds none \
                                 for this registry (`docker login` writes them)"
                            .to_owned(),
                    });
                }
            }
        } else {
            return Err(RegistryError::Unauthorized {
                url: request.url.to_string(),
                wanted: "authentication, with no Bearer or Basic challenge opm can answer"
                    .to_owned(),
            });
        };
        let mut value = HeaderValue::from_str(&value).map_err(|_| RegistryError::Invalid {
            what: "the authorization".to_owned(),
            url: request.url.to_string(),
            detail: "it is not a valid header value".to_owned(),
        })?;
        value.set_sensitive(true);
        self.authorization = Some(value);
        Ok(())
    }

    /// A token from the realm of the Bearer `challenge` to `request`.
    async fn token(
        &mut self,
        challenge: &Challenge,
        request: &Request<'_>,
    ) -> Result<String, RegistryError> {
        let invalid = |detail: &str| RegistryError::Invalid {
            what: "the Bearer challenge".to_owned(),
            url: request.url.to_string(),
            detail: detail.to_owned(),
        };
        let realm = challenge
            .params
            .get("realm")
            .ok_or_else(|| invalid("it names no realm"))?;
        let mut realm =
            Url::parse(realm).map_err(|e| invalid(&format!("its realm is not a URL: {e}")))?;
        if !matches!(realm.scheme(), "http" | "https") {
            return Err(invalid("its realm is not an http(s) URL"));
        }
        if !scheme_allowed(&realm, self.insecure_http) {
            return Err(RegistryError::PlainHttp {
                what: "the token realm".to_owned(),
                url: realm.to_string(),
            });
        }
        let action = if matches!(request.method, Method::GET | Method::HEAD) {
            "pull"
        } else {
            "pull,push"
        };
        let scope = challenge
            .params
            .get("scope")
            .cloned()
            .unwrap_or_else(|| format!("repository:{}:{action}", self.repository));
        {
            let mut query = realm.query_pairs_mut();
            if let Some(service) = challenge.params.get("service") {
                query.append_pair("service", service);
            }
            query.append_pair("scope", &scope);
        }
        let mut builder = self
            .http
            .get(realm.clone())
            .timeout(DOCUMENT_DEADLINE)
            .header(ACCEPT, "application/json");
        if let Some(credentials) = &self.credentials {
            builder = builder.basic_auth(&credentials.user, Some(&credentials.password));
        }
        let what = "the token";
        let response = builder
            .send()
            .await
            .map_err(|source| RegistryError::Network {
                what: what.to_owned(),
                method: Method::GET,
                url: realm.to_string(),
                source,
            })?;
        if !response.status().is_success() {
            let hint = self.hint(response.status());
            return Err(status_error(response, what.to_owned(), Method::GET, hint).await);
        }
        let bytes = read_bounded(response, what, MAX_TOKEN_BYTES).await?;
        documents::parse_token(&bytes).map_err(|e| RegistryError::Invalid {
            what: what.to_owned(),
            url: realm.to_string(),
            detail: e.to_string(),
        })
    }

    /// A `GET`/`HEAD` request for `what` at `url` with `accept`, within [`DOCUMENT_DEADLINE`].
    fn document<'a>(what: &'a str, method: Method, url: Url, accept: &'static str) -> Request<'a> {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static(accept));
        Request {
            what,
            method,
            url,
            headers,
            body: None,
            deadline: DOCUMENT_DEADLINE,
        }
    }

    /// The digest `tag` names: the `Docker-Content-Digest` of a `HEAD`, else the digest of the
    /// manifest a `GET` returns (then returned too, already checked against it).
    pub async fn resolve(&mut self, tag: &str) -> Result<(String, Option<Vec<u8>>), RegistryError> {
        let url = self.url(&format!("manifests/{tag}"));
        let head = self
            .send(Self::document(
                "the manifest's digest",
                Method::HEAD,
                url,
                MANIFESTS,
            ))
            .await?;
        if head.status().is_success()
            && let Some(digest) = head
                .headers()
                .get("docker-content-digest")
                .and_then(|v| v.to_str().ok())
                .filter(|v| is_digest(v))
        {
            return Ok((digest.to_owned(), None));
        }
        drop(head);
        let bytes = self.manifest(tag).await?;
        Ok((documents::sha256_digest(&bytes), Some(bytes)))
    }

    /// The manifest or index `reference` (a tag or a digest) names, at most
    /// [`MAX_MANIFEST_BYTES`].
    pub async fn manifest(&mut self, reference: &str) -> Result<Vec<u8>, RegistryError> {
        let what = "the manifest";
        let url = self.url(&format!("manifests/{reference}"));
        let response = self
            .success(Self::document(what, Method::GET, url, MANIFESTS))
            .await?;
        read_bounded(response, what, MAX_MANIFEST_BYTES).await
    }

    /// The repository's tags, from a tag list of at most [`MAX_TAG_LIST_BYTES`].
    pub async fn tags(&mut self) -> Result<Vec<String>, RegistryError> {
        let what = "the tag list";
        let url = self.url("tags/list");
        let response = self
            .success(Self::document(what, Method::GET, url, "application/json"))
            .await?;
        let url = response.url().to_string();
        let bytes = read_bounded(response, what, MAX_TAG_LIST_BYTES).await?;
        documents::parse_tag_list(&bytes).map_err(|e| RegistryError::Invalid {
            what: what.to_owned(),
            url,
            detail: e.to_string(),
        })
    }

    /// The blob `digest` of `size` bytes, checked against both.
    pub async fn blob(
        &mut self,
        what: &str,
        digest: &str,
        size: u64,
    ) -> Result<Vec<u8>, RegistryError> {
        let url = self.url(&format!("blobs/{digest}"));
        let mut request = Self::document(what, Method::GET, url, "*/*");
        request.deadline = BLOB_DEADLINE;
        let response = self.success(request).await?;
        let url = response.url().to_string();
        let bytes = read_bounded(response, what, size).await?;
        if bytes.len() as u64 != size {
            return Err(RegistryError::Invalid {
                what: what.to_owned(),
                url,
                detail: format!(
                    "{} bytes came, not the {size} its descriptor declares",
                    bytes.len()
                ),
            });
        }
        check_digest(what, digest, &bytes)?;
        Ok(bytes)
    }

    /// Uploads `bytes` as a blob unless the registry has it: `POST` for an upload location, then
    /// one `PUT` of everything. Returns its digest.
    pub async fn push_blob(&mut self, what: &str, bytes: Vec<u8>) -> Result<String, RegistryError> {
        let digest = documents::sha256_digest(&bytes);
        let url = self.url(&format!("blobs/{digest}"));
        let head = self
            .send(Self::document(what, Method::HEAD, url, "*/*"))
            .await?;
        if head.status().is_success() {
            return Ok(digest);
        }
        drop(head);
        let mut start = Self::document(what, Method::POST, self.url("blobs/uploads/"), "*/*");
        start.body = Some(Bytes::new());
        let started = self.success(start).await?;
        let location = started
            .headers()
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| started.url().join(v).ok())
            .ok_or_else(|| RegistryError::Invalid {
                what: what.to_owned(),
                url: started.url().to_string(),
                detail: "the upload's answer has no Location to upload to".to_owned(),
            })?;
        drop(started);
        if !scheme_allowed(&location, self.insecure_http) {
            return Err(RegistryError::PlainHttp {
                what: format!("{what}'s upload location"),
                url: location.to_string(),
            });
        }
        let mut upload = location;
        upload.query_pairs_mut().append_pair("digest", &digest);
        let mut headers = HeaderMap::new();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        self.success(Request {
            what,
            method: Method::PUT,
            url: upload,
            headers,
            body: Some(Bytes::from(bytes)),
            deadline: BLOB_DEADLINE,
        })
        .await?;
        Ok(digest)
    }

    /// Stores the image manifest `bytes` under `tag`.
    pub async fn push_manifest(&mut self, tag: &str, bytes: Vec<u8>) -> Result<(), RegistryError> {
        self.push_document(tag, MANIFEST_MEDIA_TYPE, bytes).await
    }

    /// Stores the manifest or index `bytes` of `media_type` under `reference`, a tag or its own
    /// digest.
    pub async fn push_document(
        &mut self,
        reference: &str,
        media_type: &'static str,
        bytes: Vec<u8>,
    ) -> Result<(), RegistryError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(media_type));
        self.success(Request {
            what: "the manifest",
            method: Method::PUT,
            url: self.url(&format!("manifests/{reference}")),
            headers,
            body: Some(Bytes::from(bytes)),
            deadline: DOCUMENT_DEADLINE,
        })
        .await?;
        Ok(())
    }

    /// The manifest `reference` names, or `None` when the registry has none (`404`).
    pub async fn manifest_if_any(
        &mut self,
        reference: &str,
    ) -> Result<Option<Vec<u8>>, RegistryError> {
        let what = "the manifest";
        let url = self.url(&format!("manifests/{reference}"));
        self.found(
            Self::document(what, Method::GET, url, MANIFESTS),
            &[StatusCode::NOT_FOUND],
        )
        .await
    }

    /// The referrers API's index of the manifests whose subject is `digest`, or `None` when the
    /// registry does not offer the API: `404`, as OCI distribution 1.1 says to tell it by, and
    /// the `400`, `405` and `501` of registries older than the API that route the path
    /// elsewhere.
    pub async fn referrers(&mut self, digest: &str) -> Result<Option<Vec<u8>>, RegistryError> {
        let what = "the referrers index";
        let url = self.url(&format!("referrers/{digest}"));
        self.found(
            Self::document(what, Method::GET, url, INDEX_MEDIA_TYPE),
            &[
                StatusCode::NOT_FOUND,
                StatusCode::BAD_REQUEST,
                StatusCode::METHOD_NOT_ALLOWED,
                StatusCode::NOT_IMPLEMENTED,
            ],
        )
        .await
    }

    /// `request`'s body, at most [`MAX_MANIFEST_BYTES`], or `None` when the registry answers
    /// one of `absent`.
    async fn found(
        &mut self,
        request: Request<'_>,
        absent: &[StatusCode],
    ) -> Result<Option<Vec<u8>>, RegistryError> {
        let what = request.what.to_owned();
        let method = request.method.clone();
        let response = self.send(request).await?;
        if absent.contains(&response.status()) {
            return Ok(None);
        }
        if !response.status().is_success() {
            let hint = self.hint(response.status());
            return Err(status_error(response, what, method, hint).await);
        }
        Ok(Some(
            read_bounded(response, &what, MAX_MANIFEST_BYTES).await?,
        ))
    }
}

/// What opm accepts for a manifest: an image manifest, or an index pointing to one.
const MANIFESTS: &str = "application/vnd.oci.image.manifest.v1+json, \
                         application/vnd.oci.image.index.v1+json";

/// Whether opm may send a request to `url`: HTTPS, or HTTP to loopback or with
/// `insecure_http`.
fn scheme_allowed(url: &Url, insecure_http: bool) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => insecure_http || url.host_str().is_some_and(is_loopback),
        _ => false,
    }
}

/// Checks that `bytes` hash to `digest`.
pub fn check_digest(what: &str, digest: &str, bytes: &[u8]) -> Result<(), RegistryError> {
    let actual = documents::digest_like(digest, bytes);
    if actual.as_deref() == Some(digest) {
        return Ok(());
    }
    Err(RegistryError::Digest {
        what: what.to_owned(),
        expected: escape(digest).into_owned(),
        actual: actual.unwrap_or_else(|| "of an algorithm opm does not know".to_owned()),
    })
}

/// The body of `response`, read chunk by chunk and refused once it passes `limit` bytes (or
/// declares more), so a body without end costs at most `limit` bytes and one chunk.
pub async fn read_bounded(
    mut response: Response,
    what: &str,
    limit: u64,
) -> Result<Vec<u8>, RegistryError> {
    let url = response.url().to_string();
    if let Some(declared) = response.content_length()
        && declared > limit
    {
        return Err(RegistryError::Declared {
            what: what.to_owned(),
            url,
            declared,
            limit,
        });
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|source| RegistryError::Network {
            what: what.to_owned(),
            method: Method::GET,
            url: url.clone(),
            source,
        })?
    {
        if bytes.len() as u64 + chunk.len() as u64 > limit {
            return Err(RegistryError::TooLong {
                what: what.to_owned(),
                url,
                limit,
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// The error for a `response` with an error status: its status and the start of its body (at
/// most [`ERROR_BODY_SHOWN_BYTES`] read), the OCI error codes and messages when it is an OCI
/// error document, escaped.
pub async fn status_error(
    mut response: Response,
    what: String,
    method: Method,
    hint: &'static str,
) -> RegistryError {
    let url = response.url().to_string();
    let status = response.status();
    let mut bytes = Vec::new();
    let mut more = response
        .content_length()
        .is_some_and(|length| length > ERROR_BODY_SHOWN_BYTES as u64);
    while bytes.len() < ERROR_BODY_SHOWN_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = ERROR_BODY_SHOWN_BYTES - bytes.len();
                if chunk.len() > room {
                    more = true;
                }
                bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Ok(None) | Err(_) => break,
        }
    }
    if bytes.len() == ERROR_BODY_SHOWN_BYTES && !more {
        // One more chunk, at most, tells whether the body goes on.
        more = matches!(response.chunk().await, Ok(Some(chunk)) if !chunk.is_empty());
    }
    let body = error_text(&bytes);
    let body = if body.is_empty() {
        String::new()
    } else if more {
        format!(": {body} … (the first {ERROR_BODY_SHOWN_BYTES} bytes of a longer body)")
    } else {
        format!(": {body}")
    };
    RegistryError::Status {
        what,
        method,
        url,
        status,
        body,
        hint,
    }
}

/// An error body as text to show, escaped: `CODE: message` for each error of an OCI error
/// document, else the body itself.
pub fn error_text(bytes: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Errors {
        errors: Vec<OneError>,
    }
    #[derive(serde::Deserialize)]
    struct OneError {
        #[serde(default)]
        code: String,
        #[serde(default)]
        message: String,
    }
    let text = match serde_json::from_slice::<Errors>(bytes) {
        Ok(errors) if !errors.errors.is_empty() => errors
            .errors
            .iter()
            .map(|e| format!("{}: {}", e.code, e.message))
            .collect::<Vec<_>>()
            .join("; "),
        _ => String::from_utf8_lossy(bytes).trim().to_owned(),
    };
    escape(&text).into_owned()
}
