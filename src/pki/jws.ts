import { createHmac, timingSafeEqual } from "node:crypto";

// The detached JWS the BootstrapSigner puts on kube-public/cluster-info and joining nodes
// check (k8s.io/cluster-bootstrap token/jws/jws.go, ComputeDetachedSignature and
// DetachedTokenIsValid): RFC 7515 compact serialization with the payload detached (Appendix F),
// protected header exactly {"alg":"HS256","kid":"<token id>"}, HMAC-SHA256 keyed with the
// token secret. cluster-bootstrap zero-pads a secret shorter than 32 bytes (go-jose wants
// HS256 keys that long); HMAC zero-pads every key shorter than its 64-byte block anyway, so
// the MAC is the same and no padding is done here.

function base64url(data: string | Uint8Array): string {
  return Buffer.from(data).toString("base64url");
}

/**
 * "<b64url(header)>..<b64url(HMAC-SHA256(secret, b64url(header) + "." + b64url(content)))>".
 * `content` is taken as its UTF-8 bytes (the cluster-info kubeconfig string).
 */
export function computeDetachedSignature(
  content: string,
  tokenID: string,
  tokenSecret: string,
): string {
  // go-jose writes the header with Go's encoding/json, whose escaping of <, > and & never
  // applies to a bootstrap token id ([a-z0-9]{6}).
  const header = base64url(JSON.stringify({ alg: "HS256", kid: tokenID }));
  const signingInput = `${header}.${base64url(content)}`;
  const mac = createHmac("sha256", Buffer.from(tokenSecret, "utf8")).update(signingInput).digest();
  return `${header}..${base64url(mac)}`;
}

/**
 * Whether `detachedToken` is the signature of `content` with this token: the whole string is
 * recomputed and compared (cluster-bootstrap is not header-aware), here in constant time.
 */
export function detachedTokenIsValid(
  detachedToken: string,
  content: string,
  tokenID: string,
  tokenSecret: string,
): boolean {
  const expected = Buffer.from(computeDetachedSignature(content, tokenID, tokenSecret), "utf8");
  const presented = Buffer.from(detachedToken, "utf8");
  // Only the length can leak, and the length of a valid signature is public.
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}
