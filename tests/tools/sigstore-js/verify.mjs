// node verify.mjs ARTIFACT BUNDLE.json PUBLIC.pem [HINT]
//
// Verifies a Sigstore bundle signed with a plain key pair (verificationMaterial.publicKey) over
// ARTIFACT with sigstore-js, offline: the key in PUBLIC.pem is the only thing trusted, and no
// transparency-log entry, signed timestamp or SCT is asked for (any the bundle carries are still
// checked, and fail here: the trust material holds no log or authority to check them against).
// Prints `verified` and exits 0, or prints the error and exits 1.
//
// The bundle's key hint is not authenticated: without HINT any hint is accepted (as with
// `cosign verify-blob --key`); with HINT the key is registered under that hint alone, and a
// bundle naming another one fails with "key not found".
//
// @sigstore/verify checks the signature, but not what binds it to ARTIFACT beyond that:
// - messageSignature: it verifies the signature over the artifact's bytes, but never compares
//   the bundle's messageDigest with the artifact's digest (it only does for a log entry's body);
// - dsseEnvelope: it verifies the envelope's signature over its payload, and never looks at the
//   artifact.
// Both are checked here, as sigstore-go and cosign do: the messageDigest must be the artifact's
// SHA-256, and a DSSE payload must be an in-toto statement with a subject of that SHA-256.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { bundleFromJSON } from '@sigstore/bundle';
import { crypto } from '@sigstore/core';
import { Verifier, toSignedEntity, toTrustMaterial } from '@sigstore/verify';

const [artifactPath, bundlePath, keyPath, hint] = process.argv.slice(2);
if (!keyPath) {
  console.error('usage: node verify.mjs ARTIFACT BUNDLE.json PUBLIC.pem [HINT]');
  process.exit(2);
}

try {
  const artifact = readFileSync(artifactPath);
  const json = JSON.parse(readFileSync(bundlePath, 'utf8'));
  // bundleFromJSON validates the bundle's shape (media type, content, verification material).
  const bundle = bundleFromJSON(json);
  if (bundle.verificationMaterial.content?.$case !== 'publicKey') {
    throw new Error('the bundle is not signed with a public key (verificationMaterial.publicKey)');
  }

  // A trusted root with no CA, TSA, Rekor or CT log: only the key below can verify anything.
  const root = { certificateAuthorities: [], timestampAuthorities: [], tlogs: [], ctlogs: [] };
  const key = crypto.createPublicKey(readFileSync(keyPath, 'ascii'));
  const keys = hint === undefined
    ? () => ({ publicKey: key, validFor: () => true })
    : { [hint]: { rawBytes: key.export({ type: 'spki', format: 'der' }) } };
  const verifier = new Verifier(toTrustMaterial(root, keys), {
    tlogThreshold: 0,
    ctlogThreshold: 0,
    timestampThreshold: 0,
  });
  verifier.verify(toSignedEntity(bundle, artifact));

  // What binds the signature to the artifact (see the header comment).
  const digest = createHash('sha256').update(artifact).digest();
  const { content } = bundle;
  if (content.$case === 'messageSignature') {
    const signed = content.messageSignature.messageDigest.digest;
    if (json.messageSignature.messageDigest.algorithm !== 'SHA2_256' || !digest.equals(signed)) {
      throw new Error("the bundle's messageDigest is not the artifact's SHA-256");
    }
  } else {
    const { payloadType, payload } = content.dsseEnvelope;
    if (payloadType !== 'application/vnd.in-toto+json') {
      throw new Error(`the DSSE payload is ${payloadType}, not an in-toto statement`);
    }
    const statement = JSON.parse(payload.toString('utf8'));
    const hex = digest.toString('hex');
    if (!statement.subject?.some((subject) => subject.digest?.sha256 === hex)) {
      throw new Error("no subject of the in-toto statement has the artifact's SHA-256");
    }
  }
  console.log('verified');
} catch (error) {
  console.error(`verification failed: ${error.message}`);
  process.exit(1);
}
