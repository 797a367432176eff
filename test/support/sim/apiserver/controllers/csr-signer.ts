// SIMULATION (test double). csrsigning: signs approved, not failed CSRs of the kubernetes.io
// signers with the cluster CA (--cluster-signing-cert-file/--cluster-signing-key-file) into
// status.certificate; a request its signer does not accept gets a Failed condition.
// k8s: pkg/controller/certificates/signer/signer.go (handle, duration: spec.expirationSeconds
// honoured below --cluster-signing-duration and never under 10 minutes), authority/*.go.
import { str } from "../json.js";
import { readFileSync } from "node:fs";
import { rfc3339, type StoredObject } from "../store.js";
import { loadCA, parseCSR, signCSR, type LoadedCA } from "../x509util.js";
import type { ControllerContext, StopFn } from "./context.js";
import {
  APISERVER_CLIENT_SIGNER,
  hasCertificate,
  hasTrueCondition,
  KUBELET_CLIENT_SIGNER,
  KUBELET_SERVING_SIGNER,
  spec,
  validateAPIServerClientUsages,
  validateKubeletClientCSR,
  validateKubeletServingCSR,
} from "./csr-checks.js";
import { WorkQueue } from "./queue.js";

export interface SignerOptions {
  certFile: string;
  keyFile: string;
  /** Milliseconds. */
  durationMs: number;
}

export function startCSRSigner(ctx: ControllerContext, opts: SignerOptions): StopFn {
  const { store, log } = ctx;
  let certPem: string;
  let keyPem: string;
  try {
    certPem = readFileSync(opts.certFile, "utf8");
    keyPem = readFileSync(opts.keyFile, "utf8");
  } catch (e) {
    throw new Error(
      `simulated kube-controller-manager: cannot read the cluster signing files: ${(e as Error).message}`,
      { cause: e },
    );
  }
  let ca: Promise<LoadedCA> | undefined;
  const queue = new WorkQueue(handle, (k, e) => log(`csrsigning: ${k}: ${(e as Error).message}`));

  function ttlFor(expirationSeconds: unknown): number {
    if (typeof expirationSeconds !== "number") return opts.durationMs;
    const requested = expirationSeconds * 1000;
    if (requested > opts.durationMs) return opts.durationMs;
    return Math.max(requested, 10 * 60_000);
  }

  async function handle(name: string): Promise<void> {
    const csr = store.get({
      apiVersion: "certificates.k8s.io/v1",
      kind: "CertificateSigningRequest",
      name,
    });
    if (!csr || hasCertificate(csr)) return;
    if (!hasTrueCondition(csr, "Approved") || hasTrueCondition(csr, "Failed")) return;
    const s = spec(csr);
    const signerName = str(s.signerName);
    const usages = (s.usages ?? []) as string[];
    const req = parseCSR(Buffer.from(str(s.request), "base64").toString("utf8"));
    let problem: string | undefined;
    if (signerName === KUBELET_CLIENT_SIGNER) problem = validateKubeletClientCSR(req, usages);
    else if (signerName === KUBELET_SERVING_SIGNER)
      problem = validateKubeletServingCSR(req, usages);
    else if (signerName === APISERVER_CLIENT_SIGNER)
      problem = validateAPIServerClientUsages(usages);
    else return; // not ours
    const next: StoredObject = structuredClone(csr);
    const status = (next.status ?? {}) as { conditions?: unknown[]; certificate?: string };
    if (problem) {
      status.conditions = [
        ...(status.conditions ?? []),
        {
          type: "Failed",
          status: "True",
          reason: "SignerValidationFailure",
          message: problem,
          lastUpdateTime: rfc3339(store.now()),
        },
      ];
      next.status = status;
      store.update(next, { subresource: "status" });
      log(`csrsigning: ${name} failed: ${problem}`);
      return;
    }
    ca ??= loadCA(certPem, keyPem);
    const pem = await signCSR({
      ca: await ca,
      request: req,
      usages,
      ttlMs: ttlFor(s.expirationSeconds),
      now: store.now(),
    });
    // The CSR may have changed while signing; sign what is stored now only if still unsigned.
    const latest = store.get({
      apiVersion: "certificates.k8s.io/v1",
      kind: "CertificateSigningRequest",
      name,
    });
    if (!latest || hasCertificate(latest) || latest.metadata.uid !== csr.metadata.uid) return;
    const latestStatus = (latest.status ?? {}) as { certificate?: string };
    latestStatus.certificate = Buffer.from(pem).toString("base64");
    latest.status = latestStatus;
    store.update(latest, { subresource: "status" });
    log(`csrsigning: signed ${name}`);
  }

  const unsubscribe = store.subscribe((ev) => {
    if (ev.type !== "DELETED" && ev.resource.kind === "CertificateSigningRequest")
      queue.add(ev.object.metadata.name);
  });
  for (const c of store.list("certificates.k8s.io/v1", "CertificateSigningRequest"))
    queue.add(c.metadata.name);
  return () => {
    unsubscribe();
    queue.stop();
  };
}
