// SIMULATION (test double). Authentication, in kube-apiserver's order: x509 client certificates
// (verified by the TLS layer against --client-ca-file), then bearer tokens (bootstrap tokens
// only), then anonymous. A presented credential that fails is a 401, never anonymous.
// k8s: staging/src/k8s.io/apiserver/pkg/authentication/request/x509/x509.go (CommonNameUserConversion:
// user = CN, groups = O; an empty CN authenticates nobody), staging/src/k8s.io/apiserver/pkg/
// authentication/request/bearertoken/bearertoken.go ("Bearer <token>"; an unknown token is an
// error), plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go, pkg/kubeapiserver/
// authenticator/config.go (union; anonymous last through union.NewFailOnError),
// staging/src/k8s.io/apiserver/pkg/authentication/request/anonymous/anonymous.go,
// staging/src/k8s.io/apiserver/pkg/authentication/group/authenticated_group_adder.go.
import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import type { ObjectStore, StoredObject, UserInfo } from "./store.js";

export interface AuthnOptions {
  store: ObjectStore;
  enableBootstrapTokenAuth: boolean;
  anonymousAuth: boolean;
}

export type AuthnResult =
  { ok: true; user: UserInfo; method: "x509" | "token" | "anonymous" } | { ok: false; why: string };

export const ANONYMOUS: UserInfo = {
  username: "system:anonymous",
  groups: ["system:unauthenticated"],
};

// k8s: staging/src/k8s.io/cluster-bootstrap/token/api/types.go and util/tokens (token format,
// secret keys, the extra-groups pattern).
const TOKEN_RE = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
const EXTRA_GROUP_RE = /^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/;

function field(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

function secretData(secret: { data?: unknown } | StoredObject, key: string): string {
  const data = (secret.data ?? {}) as Record<string, string>;
  const v = data[key];
  return v === undefined ? "" : Buffer.from(v, "base64").toString("utf8");
}

/** Go's time.Parse(time.RFC3339, ...) closely enough for expiry checks. */
function parseRFC3339(v: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(v)) return undefined;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : t;
}

/** k8s: staging/src/k8s.io/cluster-bootstrap/util/secrets/secrets.go HasExpired (unparsable = expired) */
export function tokenSecretExpired(secret: { data?: unknown } | StoredObject, now: Date): boolean {
  const exp = secretData(secret, "expiration");
  if (exp === "") return false;
  const t = parseRFC3339(exp);
  return t === undefined || now.getTime() > t;
}

/** Authenticates a bootstrap token; undefined when it does not. k8s: token/bootstrap/bootstrap.go */
export function authenticateBootstrapToken(
  store: ObjectStore,
  token: string,
): UserInfo | undefined {
  const m = TOKEN_RE.exec(token);
  if (!m) return undefined;
  const [, id, secretPart] = m as unknown as [string, string, string];
  const secret = store.get({
    apiVersion: "v1",
    kind: "Secret",
    namespace: "kube-system",
    name: `bootstrap-token-${id}`,
  });
  if (!secret) return undefined;
  if (secret.metadata.deletionTimestamp) return undefined;
  if (secret.type !== "bootstrap.kubernetes.io/token" || !secret.data) return undefined;
  const stored = Buffer.from(secretData(secret, "token-secret"));
  const given = Buffer.from(secretPart);
  if (stored.length !== given.length || !timingSafeEqual(stored, given)) return undefined;
  if (secretData(secret, "token-id") !== id) return undefined;
  if (tokenSecretExpired(secret, store.now())) return undefined;
  if (secretData(secret, "usage-bootstrap-authentication") !== "true") return undefined;
  // k8s: cluster-bootstrap/util/secrets/secrets.go GetGroups — a sorted set
  const groups = new Set(["system:bootstrappers"]);
  const extra = secretData(secret, "auth-extra-groups");
  if (extra !== "") {
    for (const g of extra.split(",").map((s) => s.trim())) {
      if (!EXTRA_GROUP_RE.test(g)) return undefined;
      groups.add(g);
    }
  }
  return { username: `system:bootstrap:${id}`, groups: [...groups].sort() };
}

function withAuthenticated(user: UserInfo): UserInfo {
  if (user.groups.includes("system:authenticated")) return user;
  return { ...user, groups: [...user.groups, "system:authenticated"] };
}

export function authenticate(req: IncomingMessage, opts: AuthnOptions): AuthnResult {
  const errors: string[] = [];
  const socket = req.socket as TLSSocket;
  const peer =
    typeof socket.getPeerCertificate === "function" ? socket.getPeerCertificate(false) : undefined;
  if (peer && Object.keys(peer).length > 0) {
    if (!socket.authorized) {
      errors.push(`verifying certificate: ${String(socket.authorizationError)}`);
    } else {
      const cn = field(peer.subject?.CN)[0] ?? "";
      if (cn !== "") {
        return {
          ok: true,
          method: "x509",
          user: withAuthenticated({ username: cn, groups: field(peer.subject?.O) }),
        };
      }
    }
  }
  const auth = (req.headers.authorization ?? "").trim();
  if (auth !== "") {
    const parts = auth.split(" ");
    if (parts.length >= 2 && parts[0]!.toLowerCase() === "bearer" && parts[1] !== "") {
      const user = opts.enableBootstrapTokenAuth
        ? authenticateBootstrapToken(opts.store, parts[1]!)
        : undefined;
      if (user) return { ok: true, method: "token", user: withAuthenticated(user) };
      errors.push("invalid bearer token");
    }
  }
  if (errors.length > 0) return { ok: false, why: errors.join("; ") };
  if (opts.anonymousAuth) return { ok: true, method: "anonymous", user: ANONYMOUS };
  return { ok: false, why: "no credentials and anonymous authentication is disabled" };
}
