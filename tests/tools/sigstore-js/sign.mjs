// node sign.mjs ARTIFACT PRIVATE.pem OUT.json [HINT]
//
// Signs ARTIFACT with sigstore-js and a local key (an ECDSA P-256 key, PKCS#8 PEM), offline: no
// Fulcio certificate, no Rekor entry, no timestamp. Writes a v0.3 bundle holding a
// messageSignature (ECDSA over SHA-256 of the artifact, DER-encoded) and the key's hint:
// HINT, or else the base64 of the SHA-256 of the public key's SPKI DER (as cosign computes it).
import { createHash, createPublicKey, sign } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { BUNDLE_V03_MEDIA_TYPE, bundleToJSON, toMessageSignatureBundle } from '@sigstore/bundle';
import { MessageSignatureBundleBuilder } from '@sigstore/sign';

const [artifactPath, keyPath, outPath, hintArg] = process.argv.slice(2);
if (!outPath) {
  console.error('usage: node sign.mjs ARTIFACT PRIVATE.pem OUT.json [HINT]');
  process.exit(2);
}

const privateKey = readFileSync(keyPath, 'ascii');
const publicKey = createPublicKey(privateKey);
const hint = hintArg ?? createHash('sha256')
  .update(publicKey.export({ type: 'spki', format: 'der' }))
  .digest('base64');

// @sigstore/sign's Signer: signs the bytes the bundle builder hands it (for a message signature,
// the artifact itself) and names the key that verifies the signature.
const signer = {
  async sign(data) {
    return {
      signature: sign('sha256', data, privateKey),
      key: {
        $case: 'publicKey',
        publicKey: publicKey.export({ type: 'spki', format: 'pem' }),
        hint,
      },
    };
  },
};

// No witnesses: nothing is sent to a transparency log or a timestamp authority.
const built = await new MessageSignatureBundleBuilder({ signer, witnesses: [] })
  .create({ data: readFileSync(artifactPath) });

// The builder labels every message-signature bundle v0.2 (it always asks for a certificate
// chain, unused with a public key). @sigstore/bundle builds the same content as v0.3.
const { messageDigest, signature } = built.content.messageSignature;
const bundle = toMessageSignatureBundle({ digest: messageDigest.digest, signature, keyHint: hint });
if (bundle.mediaType !== BUNDLE_V03_MEDIA_TYPE) {
  throw new Error(`expected a ${BUNDLE_V03_MEDIA_TYPE} bundle, got ${bundle.mediaType}`);
}
writeFileSync(outPath, `${JSON.stringify(bundleToJSON(bundle), null, 2)}\n`);
