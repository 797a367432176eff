// SIMULATION (test double). The detached JWS the BootstrapSigner puts on cluster-info, written
// independently of kubeforge's own code: RFC 7515 compact serialization, payload detached
// (Appendix F), protected header exactly {"alg":"HS256","kid":"<tokenID>"}, HMAC-SHA256 keyed
// with the token secret. k8s: staging/src/k8s.io/cluster-bootstrap/token/jws/jws.go
// ComputeDetachedSignature (go-jose with the "kid" header; output "<header>..<signature>").
import { createHmac } from "node:crypto";

function b64url(data: Buffer | string): string {
  return Buffer.from(data).toString("base64url");
}

export function computeDetachedSignature(
  content: string,
  tokenID: string,
  tokenSecret: string,
): string {
  const header = b64url(JSON.stringify({ alg: "HS256", kid: tokenID }));
  const signingInput = `${header}.${b64url(content)}`;
  const mac = createHmac("sha256", Buffer.from(tokenSecret, "utf8")).update(signingInput).digest();
  return `${header}..${b64url(mac)}`;
}
