import { randomInt, timingSafeEqual } from "node:crypto";

// Bootstrap token format (k8s.io/cluster-bootstrap token/api and token/util).

export const BOOTSTRAP_TOKEN_PATTERN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
export const BOOTSTRAP_TOKEN_ID_PATTERN = /^[a-z0-9]{6}$/;
const TOKEN_CHARS = "0123456789abcdefghijklmnopqrstuvwxyz";

export interface BootstrapTokenString {
  id: string;
  secret: string;
}

/** Parses "<id>.<secret>", or undefined when it does not have kubeadm's format. */
export function parseBootstrapToken(token: string): BootstrapTokenString | undefined {
  const m = BOOTSTRAP_TOKEN_PATTERN.exec(token);
  return m ? { id: m[1]!, secret: m[2]! } : undefined;
}

function randomChars(n: number): string {
  let out = "";
  for (let i = 0; i < n; i++) out += TOKEN_CHARS[randomInt(TOKEN_CHARS.length)];
  return out;
}

/** A new random token "abcdef.0123456789abcdef", one uniform draw per character as kubeadm. */
export function generateBootstrapToken(): string {
  return `${randomChars(6)}.${randomChars(16)}`;
}

/** Compares a presented token with an expected one in constant time (IsValidBootstrapToken). */
export function bootstrapTokenMatches(presented: string, expected: BootstrapTokenString): boolean {
  const p = parseBootstrapToken(presented);
  if (!p || p.id !== expected.id) return false;
  return timingSafeEqual(Buffer.from(p.secret), Buffer.from(expected.secret));
}
