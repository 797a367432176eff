// SIMULATION (test double). Reading bootstrap-token Secrets as the KCM controllers do.
// k8s: staging/src/k8s.io/cluster-bootstrap/util/secrets/secrets.go (GetData, ParseName,
// GetExpiration: an unparsable expiration counts as expired), pkg/controller/bootstrap/util.go
// validateSecretForSigning.
import type { StoredObject } from "../store.js";

export const TOKEN_SECRET_TYPE = "bootstrap.kubernetes.io/token";
const NAME_RE = /^bootstrap-token-([a-z0-9]{6})$/;

export function getData(secret: StoredObject, key: string): string {
  const v = ((secret.data ?? {}) as Record<string, string>)[key];
  return v === undefined ? "" : Buffer.from(v, "base64").toString("utf8");
}

/** Milliseconds until expiry (0 when none), or expired. */
export function expiration(secret: StoredObject, now: Date): { ttlMs: number; expired: boolean } {
  const exp = getData(secret, "expiration");
  if (exp === "") return { ttlMs: 0, expired: false };
  const ok = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(exp);
  const t = ok ? Date.parse(exp) : Number.NaN;
  if (Number.isNaN(t)) return { ttlMs: 0, expired: true };
  const ttl = t - now.getTime();
  return ttl <= 0 ? { ttlMs: 0, expired: true } : { ttlMs: ttl, expired: false };
}

export function tokenForSigning(
  secret: StoredObject,
  now: Date,
): { id: string; secret: string } | undefined {
  const m = NAME_RE.exec(secret.metadata.name);
  if (!m) return undefined;
  const id = getData(secret, "token-id");
  if (id === "" || id !== m[1]) return undefined;
  const tokenSecret = getData(secret, "token-secret");
  if (tokenSecret === "") return undefined;
  if (expiration(secret, now).expired) return undefined;
  if (getData(secret, "usage-bootstrap-signing") !== "true") return undefined;
  return { id, secret: tokenSecret };
}
