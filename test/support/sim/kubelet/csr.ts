import { createHash, createPublicKey, type KeyObject } from "node:crypto";
import { ApiStatusError, type SimApiClient } from "./api-client.js";
import { sleep } from "./timing.js";

// SIMULATION (test double). k8s.io/client-go/util/certificate/csr (RequestCertificate,
// WaitForCertificate) as the kubelet uses it, against certificates.k8s.io/v1.

export const KUBELET_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet";
const CSR_PATH = "/apis/certificates.k8s.io/v1/certificatesigningrequests";

export interface CsrRequest {
  /** Fixed name (bootstrap's digested name), or undefined for generateName "csr-". */
  name?: string;
  csrPem: string;
  usages: string[];
  signerName?: string;
  /** spec.expirationSeconds, when a lifetime is requested. */
  expirationSeconds?: number;
}

interface CsrObject {
  metadata?: { name?: string; uid?: string };
  spec?: { request?: string; signerName?: string };
  status?: {
    certificate?: string;
    conditions?: { type: string; reason?: string; message?: string }[];
  };
}

/**
 * csr.RequestCertificate: POST the CSR ("Username, UID, Groups will be injected by API
 * server"); with no name, metadata.generateName is "csr-". A fixed name that already exists is
 * reused when it carries the same request (ensureCompatible).
 */
export async function requestCertificate(
  client: SimApiClient,
  req: CsrRequest,
): Promise<{ name: string; uid: string }> {
  const body = {
    apiVersion: "certificates.k8s.io/v1",
    kind: "CertificateSigningRequest",
    metadata: req.name ? { name: req.name } : { generateName: "csr-" },
    spec: {
      request: Buffer.from(req.csrPem).toString("base64"),
      signerName: req.signerName ?? KUBELET_CLIENT_SIGNER,
      usages: req.usages,
      ...(req.expirationSeconds ? { expirationSeconds: req.expirationSeconds } : {}),
    },
  };
  try {
    const created = await client.call<CsrObject>("POST", CSR_PATH, body);
    return { name: created.metadata?.name ?? "", uid: created.metadata?.uid ?? "" };
  } catch (e) {
    if (!(e instanceof ApiStatusError && e.status === 409 && req.name)) throw e;
    const existing = await client.call<CsrObject>("GET", `${CSR_PATH}/${req.name}`);
    if (existing.spec?.request !== body.spec.request) {
      throw new Error(`retrieved csr is not compatible: csr ${req.name} holds another request`, {
        cause: e,
      });
    }
    return { name: req.name, uid: existing.metadata?.uid ?? "" };
  }
}

/**
 * csr.WaitForCertificate: until the CSR is Approved and carries status.certificate; Denied or
 * Failed ends the wait with an error, as does a different UID (the CSR was replaced). client-go
 * lists and watches the CSR by name; the simulation reads it back every `pollMs`.
 */
export async function waitForCertificate(
  client: SimApiClient,
  csr: { name: string; uid: string },
  opts: { pollMs: number; timeoutMs: number; signal?: AbortSignal },
): Promise<string> {
  const deadline = Date.now() + opts.timeoutMs;
  for (;;) {
    if (opts.signal?.aborted) throw new Error("stopped");
    let obj: CsrObject | undefined;
    try {
      obj = await client.call<CsrObject>("GET", `${CSR_PATH}/${csr.name}`);
    } catch (e) {
      if (e instanceof ApiStatusError && e.status === 404) {
        throw new Error(`csr "${csr.name}" was deleted`, { cause: e });
      }
      // Other errors are transient for a watch: keep waiting.
    }
    if (obj) {
      if (csr.uid && obj.metadata?.uid && obj.metadata.uid !== csr.uid) {
        throw new Error(`csr "${csr.name}" changed UIDs`);
      }
      let approved = false;
      for (const c of obj.status?.conditions ?? []) {
        if (c.type === "Denied") {
          throw new Error(
            `certificate signing request is denied, reason: ${c.reason ?? ""}, message: ${c.message ?? ""}`,
          );
        }
        if (c.type === "Failed") {
          throw new Error(
            `certificate signing request failed, reason: ${c.reason ?? ""}, message: ${c.message ?? ""}`,
          );
        }
        if (c.type === "Approved") approved = true;
      }
      if (approved && obj.status?.certificate) {
        return Buffer.from(obj.status.certificate, "base64").toString("utf8");
      }
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for csr "${csr.name}" to be issued`);
    await sleep(opts.pollMs, opts.signal);
  }
}

/**
 * pkg/kubelet/certificate/bootstrap/bootstrap.go digestedName: "node-csr-" + base64url(no
 * padding) of SHA-512/256 over each of base64url(PKIX public key), CN, every O and every usage,
 * each followed by "|". The same key and subject give the same name, so a restarted kubelet
 * finds its pending CSR.
 */
export function digestedCsrName(
  key: KeyObject,
  commonName: string,
  organizations: string[],
  usages: string[],
): string {
  const hash = createHash("sha512-256");
  const write = (data: Buffer) => {
    hash.update(data.toString("base64url"));
    hash.update("|");
  };
  write(createPublicKey(key).export({ type: "spki", format: "der" }));
  write(Buffer.from(commonName));
  for (const o of organizations) write(Buffer.from(o));
  for (const u of usages) write(Buffer.from(u));
  return `node-csr-${hash.digest().toString("base64url")}`;
}
