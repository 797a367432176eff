// SIMULATION (test double). What a CSR must look like for each kubernetes.io signer.
// k8s: pkg/apis/certificates/helpers.go (ValidateKubeletClientCSR, ValidateKubeletServingCSR and
// their exact error texts), pkg/controller/certificates/signer/signer.go
// (validAPIServerClientUsages), pkg/controller/certificates/certificates_helper.go (conditions).
import type { Json, StoredObject } from "../store.js";
import type { ParsedCSR } from "../x509util.js";

export const KUBELET_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet";
export const APISERVER_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client";
export const KUBELET_SERVING_SIGNER = "kubernetes.io/kubelet-serving";

function sameSet(a: Set<string>, b: string[]): boolean {
  return a.size === b.length && b.every((x) => a.has(x));
}

function listed(required: string[]): string {
  return `[${[...required].sort().join(" ")}]`;
}

export function validateKubeletClientCSR(req: ParsedCSR, usages: string[]): string | undefined {
  if (req.organizations.length !== 1 || req.organizations[0] !== "system:nodes")
    return "subject organization is not system:nodes";
  if (req.dnsNames.length > 0) return "DNS subjectAltNames are not allowed";
  if (req.emailAddresses.length > 0) return "Email subjectAltNames are not allowed";
  if (req.ipAddresses.length > 0) return "IP subjectAltNames are not allowed";
  if (req.uris.length > 0) return "URI subjectAltNames are not allowed";
  if (!req.commonName.startsWith("system:node:"))
    return "subject common name does not begin with system:node:";
  const u = new Set(usages);
  const withRSA = ["digital signature", "key encipherment", "client auth"];
  if (!sameSet(u, withRSA) && !sameSet(u, ["digital signature", "client auth"]))
    return `usages did not match ${listed(withRSA)}`;
  return undefined;
}

export function validateKubeletServingCSR(req: ParsedCSR, usages: string[]): string | undefined {
  if (req.organizations.length !== 1 || req.organizations[0] !== "system:nodes")
    return "subject organization is not system:nodes";
  if (req.dnsNames.length === 0 && req.ipAddresses.length === 0)
    return "DNS or IP subjectAltName is required";
  if (req.emailAddresses.length > 0) return "Email subjectAltNames are not allowed";
  if (req.uris.length > 0) return "URI subjectAltNames are not allowed";
  const u = new Set(usages);
  const withRSA = ["digital signature", "key encipherment", "server auth"];
  if (!sameSet(u, withRSA) && !sameSet(u, ["digital signature", "server auth"]))
    return `usages did not match ${listed(withRSA)}`;
  if (!req.commonName.startsWith("system:node:"))
    return "subject common name does not begin with system:node:";
  return undefined;
}

export function validateAPIServerClientUsages(usages: string[]): string | undefined {
  let clientAuth = false;
  for (const u of usages) {
    if (u === "digital signature" || u === "key encipherment") continue;
    if (u === "client auth") clientAuth = true;
    else return `invalid usage for client certificate: ${u}`;
  }
  return clientAuth ? undefined : "missing required usage for client certificate: client auth";
}

export function conditions(csr: StoredObject): Json[] {
  return (((csr.status ?? {}) as Json).conditions ?? []) as Json[];
}

export function hasTrueCondition(csr: StoredObject, type: string): boolean {
  return conditions(csr).some(
    (c) => c.type === type && (c.status === undefined || c.status === "True"),
  );
}

export function hasCertificate(csr: StoredObject): boolean {
  return Boolean(((csr.status ?? {}) as Json).certificate);
}

export function spec(csr: StoredObject): Json {
  return (csr.spec ?? {}) as Json;
}
