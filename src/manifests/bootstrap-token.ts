import { parseGoDurationNanos } from "../config/duration.js";
import type { BootstrapToken } from "../config/types.js";
import type { KubeObject } from "../types/kube-object.js";
import { parseBootstrapToken } from "../pki/token.js";

// The bootstrap token Secret kubeadm writes (kubeadm: apis/bootstraptoken/v1/utils.go
// BootstrapTokenToSecret / encodeTokenSecretData; key names from k8s.io/cluster-bootstrap
// token/api). `init` writes it through UpdateOrCreateTokens(client, false, tokens)
// (kubeadm: phases/bootstraptoken/node/token.go): an existing Secret of the same name is
// replaced wholesale by the one built here (a PUT, expiration recomputed from now), never merged.

export const BOOTSTRAP_TOKEN_SECRET_TYPE = "bootstrap.kubernetes.io/token";
export const BOOTSTRAP_TOKEN_SECRET_PREFIX = "bootstrap-token-";
export const BOOTSTRAP_TOKEN_ID_KEY = "token-id";
export const BOOTSTRAP_TOKEN_SECRET_KEY = "token-secret";
export const BOOTSTRAP_TOKEN_DESCRIPTION_KEY = "description";
export const BOOTSTRAP_TOKEN_EXPIRATION_KEY = "expiration";
export const BOOTSTRAP_TOKEN_USAGE_PREFIX = "usage-bootstrap-";
export const BOOTSTRAP_TOKEN_EXTRA_GROUPS_KEY = "auth-extra-groups";

/** The short-lived token that owns the kubeadm-certs Secret (kubeadm: copycerts.go). */
export const CERTS_PROXY_TOKEN_DESCRIPTION = "Proxy for managing TTL for the kubeadm-certs secret";
/** constants.DefaultCertTokenDuration (2h), in the Go duration form the config API carries. */
export const CERTS_PROXY_TOKEN_TTL = "2h0m0s";

const RFC3339 = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** bootstraputil.BootstrapTokenSecretName: "bootstrap-token-<id>". */
export function bootstrapTokenSecretName(tokenID: string): string {
  return `${BOOTSTRAP_TOKEN_SECRET_PREFIX}${tokenID}`;
}

/** Go's time.Format(time.RFC3339) of a UTC time: whole seconds, "Z". */
export function formatRFC3339(time: Date): string {
  return time.toISOString().replace(/\.\d{3}Z$/, "Z");
}

function parseRFC3339(text: string, field: string): Date {
  const m = RFC3339.exec(text);
  const date = m ? new Date(`${m[1]}${m[2]}`) : undefined;
  if (!date || Number.isNaN(date.getTime())) {
    throw new Error(
      `${field}: "${text}" is not an RFC 3339 time (example: "2030-01-01T00:00:00Z")`,
    );
  }
  return date;
}

function tokenParts(token: BootstrapToken, field: string): { id: string; secret: string } {
  const parts = token.token === undefined ? undefined : parseBootstrapToken(token.token);
  if (!parts) {
    // Never echo the value: it is a credential.
    throw new Error(
      `${field}.token: the bootstrap token is not of the form "[a-z0-9]{6}.[a-z0-9]{16}"`,
    );
  }
  return parts;
}

/**
 * The Secret's data as plain strings, before base64 (encodeTokenSecretData): id and secret,
 * the description when not empty, the expiration (Expires wins over TTL; a TTL of 0 or less
 * means none), one "usage-bootstrap-<usage>": "true" per usage, comma-joined extra groups.
 * `field` names the token in errors ("InitConfiguration.bootstrapTokens[0]").
 */
export function bootstrapTokenSecretData(
  token: BootstrapToken,
  now: Date,
  field = "bootstrapToken",
): Record<string, string> {
  const { id, secret } = tokenParts(token, field);
  const data: Record<string, string> = {
    [BOOTSTRAP_TOKEN_ID_KEY]: id,
    [BOOTSTRAP_TOKEN_SECRET_KEY]: secret,
  };
  if (token.description) data[BOOTSTRAP_TOKEN_DESCRIPTION_KEY] = token.description;
  if (token.expires !== undefined) {
    data[BOOTSTRAP_TOKEN_EXPIRATION_KEY] = formatRFC3339(
      parseRFC3339(token.expires, `${field}.expires`),
    );
  } else if (token.ttl !== undefined) {
    const nanos = parseGoDurationNanos(token.ttl, `${field}.ttl`);
    if (nanos > 0n) {
      const expires = new Date(now.getTime() + Number(nanos / 1_000_000n));
      data[BOOTSTRAP_TOKEN_EXPIRATION_KEY] = formatRFC3339(expires);
    }
  }
  for (const usage of token.usages ?? []) data[`${BOOTSTRAP_TOKEN_USAGE_PREFIX}${usage}`] = "true";
  if (token.groups && token.groups.length > 0) {
    data[BOOTSTRAP_TOKEN_EXTRA_GROUPS_KEY] = token.groups.join(",");
  }
  return data;
}

function base64Values(data: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "utf8").toString("base64")]),
  );
}

/**
 * Secret kube-system/bootstrap-token-<id> for one configured token (BootstrapTokenToSecret),
 * with `data` base64-encoded as the API takes it. `now` dates a TTL.
 */
export function bootstrapTokenSecret(
  token: BootstrapToken,
  now: Date,
  field = "bootstrapToken",
): KubeObject {
  const data = bootstrapTokenSecretData(token, now, field);
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: bootstrapTokenSecretName(data[BOOTSTRAP_TOKEN_ID_KEY]!),
      namespace: "kube-system",
    },
    type: BOOTSTRAP_TOKEN_SECRET_TYPE,
    data: base64Values(data),
  };
}

/**
 * The token that owns the kubeadm-certs Secret (copycerts.go createShortLivedBootstrapToken):
 * a fresh random token string, this description, a 2h TTL, no usages and no groups, so it can
 * neither authenticate nor sign; the token cleaner deleting it garbage-collects the certs.
 */
export function certsProxyToken(tokenString: string): BootstrapToken {
  return {
    token: tokenString,
    description: CERTS_PROXY_TOKEN_DESCRIPTION,
    ttl: CERTS_PROXY_TOKEN_TTL,
  };
}

/**
 * A token read back from its Secret (BootstrapTokenFromSecret): usages sorted, groups split,
 * `expires` as stored. Throws a sentence naming the Secret when it is not a valid token Secret.
 */
export function bootstrapTokenFromSecret(secret: KubeObject): BootstrapToken {
  const name = secret.metadata.name;
  const raw = (secret["data"] ?? {}) as Record<string, string>;
  const get = (key: string): string =>
    raw[key] === undefined ? "" : Buffer.from(raw[key], "base64").toString("utf8");
  const id = get(BOOTSTRAP_TOKEN_ID_KEY);
  if (!id) throw new Error(`bootstrap Token Secret has no token-id data: ${name}`);
  if (name !== bootstrapTokenSecretName(id)) {
    throw new Error(
      `bootstrap token name is not of the form '${BOOTSTRAP_TOKEN_SECRET_PREFIX}(token-id)'. Actual: "${name}". Expected: "${bootstrapTokenSecretName(id)}"`,
    );
  }
  const tokenSecret = get(BOOTSTRAP_TOKEN_SECRET_KEY);
  if (!tokenSecret) throw new Error(`bootstrap Token Secret has no token-secret data: ${name}`);
  const token = `${id}.${tokenSecret}`;
  if (!parseBootstrapToken(token)) {
    throw new Error(`bootstrap Token Secret ${name} is invalid and couldn't be parsed`);
  }
  const out: BootstrapToken = { token };
  const description = get(BOOTSTRAP_TOKEN_DESCRIPTION_KEY);
  if (description) out.description = description;
  const expiration = get(BOOTSTRAP_TOKEN_EXPIRATION_KEY);
  if (expiration) {
    parseRFC3339(expiration, `can't parse expiration time of bootstrap token "${name}"`);
    out.expires = expiration;
  }
  const usages = Object.keys(raw)
    .filter((k) => k.startsWith(BOOTSTRAP_TOKEN_USAGE_PREFIX) && get(k) === "true")
    .map((k) => k.slice(BOOTSTRAP_TOKEN_USAGE_PREFIX.length))
    .sort();
  if (usages.length > 0) out.usages = usages;
  const groups = get(BOOTSTRAP_TOKEN_EXTRA_GROUPS_KEY);
  if (groups) out.groups = groups.split(",");
  return out;
}
