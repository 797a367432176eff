// SIMULATION (test double). csrapproving: approves kubelet client CSRs whose requester may
// `create` certificatesigningrequests/selfnodeclient (renewal by the same node: CN equals the
// requester) or certificatesigningrequests/nodeclient, asked through a SubjectAccessReview.
// k8s: pkg/controller/certificates/approver/sarapprove.go (recognizers in that order; condition
// Approved/True/AutoApproved with the exact messages; UpdateApproval).
import { str } from "../json.js";
import type { Attributes } from "../authz.js";
import type { StoredObject } from "../store.js";
import { parseCSR } from "../x509util.js";
import type { ControllerContext, StopFn } from "./context.js";
import {
  hasCertificate,
  hasTrueCondition,
  KUBELET_CLIENT_SIGNER,
  spec,
  validateKubeletClientCSR,
} from "./csr-checks.js";
import { WorkQueue } from "./queue.js";

const RECOGNIZERS = [
  {
    subresource: "selfnodeclient",
    self: true,
    message: "Auto approving self kubelet client certificate after SubjectAccessReview.",
  },
  {
    subresource: "nodeclient",
    self: false,
    message: "Auto approving kubelet client certificate after SubjectAccessReview.",
  },
];

export function startCSRApprover(ctx: ControllerContext): StopFn {
  const { store, log, authorize } = ctx;
  const queue = new WorkQueue(handle, (k, e) => log(`csrapproving: ${k}: ${(e as Error).message}`));

  function handle(name: string): void {
    const csr = store.get({
      apiVersion: "certificates.k8s.io/v1",
      kind: "CertificateSigningRequest",
      name,
    });
    if (!csr || hasCertificate(csr)) return;
    if (hasTrueCondition(csr, "Approved") || hasTrueCondition(csr, "Denied")) return;
    const s = spec(csr);
    let req;
    try {
      req = parseCSR(Buffer.from(str(s.request), "base64").toString("utf8"));
    } catch (e) {
      throw new Error(`unable to parse csr "${name}": ${(e as Error).message}`, { cause: e });
    }
    const usages = (s.usages ?? []) as string[];
    const isNodeClient =
      s.signerName === KUBELET_CLIENT_SIGNER && validateKubeletClientCSR(req, usages) === undefined;
    const tried: string[] = [];
    for (const r of RECOGNIZERS) {
      if (!isNodeClient) continue;
      if (r.self && s.username !== req.commonName) continue;
      tried.push(r.subresource);
      const attrs: Attributes = {
        user: {
          username: str(s.username),
          groups: (s.groups ?? []) as string[],
          ...(s.uid ? { uid: str(s.uid) } : {}),
        },
        verb: "create",
        isResourceRequest: true,
        path: "",
        apiGroup: "certificates.k8s.io",
        apiVersion: "*",
        resource: "certificatesigningrequests",
        subresource: r.subresource,
        namespace: "",
        name: "",
      };
      if (authorize(attrs).decision !== "Allow") continue;
      const next: StoredObject = structuredClone(csr);
      const status = (next.status ?? {}) as { conditions?: unknown[] };
      status.conditions = [
        ...(status.conditions ?? []),
        { type: "Approved", status: "True", reason: "AutoApproved", message: r.message },
      ];
      next.status = status;
      store.update(next, { subresource: "approval" });
      log(`csrapproving: approved ${name} (${r.subresource})`);
      return;
    }
    if (tried.length > 0)
      log(
        `csrapproving: recognized csr "${name}" as [${tried.join(" ")}] but subject access review was not approved`,
      );
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
