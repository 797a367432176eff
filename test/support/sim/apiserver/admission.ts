// SIMULATION (test double). The admission plugins whose refusals kubeadm's and kubelets' requests
// can meet, run after authorization on writes.
// k8s: plugin/pkg/admission/noderestriction/admission.go (a node writes only its own Node, its
// own mirror pods and lease, and may not change its taints), plugin/pkg/admission/certificates/
// approval/admission.go ("approve" on signers/<signerName>), plugin/pkg/admission/certificates/
// signing/admission.go ("sign"), plugin/pkg/admission/certificates/subjectrestriction/
// admission.go (no system:masters through kubernetes.io/kube-apiserver-client),
// pkg/apis/certificates/helpers.go IsAuthorizedForSignerName (exact name or "<domain>/*").
import { str } from "./json.js";
import { nodeIdentity, type Attributes, type Authorizer } from "./authz.js";
import { forbidden, type StatusError } from "./status.js";
import type { Json, ObjectStore, StoredObject } from "./store.js";
import { parseCSR } from "./x509util.js";

export interface AdmissionRequest {
  attrs: Attributes;
  /** The object as sent (create/update) or the patched result (patch); absent for delete. */
  object?: Json;
  /** The stored object, for update/patch/delete. */
  old?: StoredObject;
}

function deny(a: Attributes, name: string, message: string): StatusError {
  return forbidden(a.apiGroup, a.resource, name, message);
}

function isAuthorizedForSigner(
  authorize: Authorizer,
  a: Attributes,
  signerName: string,
  verb: string,
): boolean {
  const base: Attributes = {
    user: a.user,
    verb,
    isResourceRequest: true,
    path: "",
    apiGroup: "certificates.k8s.io",
    apiVersion: "*",
    resource: "signers",
    subresource: "",
    namespace: "",
    name: signerName,
  };
  if (authorize(base).decision === "Allow") return true;
  const domain = signerName.split("/")[0];
  return authorize({ ...base, name: `${domain}/*` }).decision === "Allow";
}

export function admit(
  req: AdmissionRequest,
  opts: { store: ObjectStore; authorize: Authorizer; plugins: Set<string> },
): void {
  const { attrs: a } = req;
  if (!["create", "update", "patch", "delete"].includes(a.verb) || !a.isResourceRequest) return;
  const name = a.name || str(((req.object?.metadata ?? {}) as Json).name);

  // ---- NodeRestriction -----------------------------------------------------------------
  const nodeName = nodeIdentity(a.user);
  if (opts.plugins.has("NodeRestriction") && nodeName !== undefined && a.apiGroup === "") {
    if (a.resource === "nodes") {
      if (name !== nodeName)
        throw deny(a, name, `node "${nodeName}" is not allowed to modify node "${name}"`);
      if (
        (a.verb === "update" || a.verb === "patch") &&
        req.old &&
        req.object &&
        a.subresource === ""
      ) {
        const before = JSON.stringify(((req.old.spec ?? {}) as Json).taints ?? []);
        const after = JSON.stringify(((req.object.spec ?? {}) as Json).taints ?? []);
        if (before !== after)
          throw deny(a, name, `node "${nodeName}" is not allowed to modify taints`);
      }
    }
    if (a.resource === "pods") {
      if (a.verb === "create" && a.subresource === "") {
        const pod = req.object ?? {};
        const meta = (pod.metadata ?? {}) as Json;
        const annotations = (meta.annotations ?? {}) as Record<string, string>;
        if (!("kubernetes.io/config.mirror" in annotations)) {
          throw deny(
            a,
            name,
            `pod does not have "kubernetes.io/config.mirror" annotation, node "${nodeName}" can only create mirror pods`,
          );
        }
        if (((pod.spec ?? {}) as Json).nodeName !== nodeName) {
          throw deny(
            a,
            name,
            `node "${nodeName}" can only create pods with spec.nodeName set to itself`,
          );
        }
        const owners = (meta.ownerReferences ?? []) as Json[];
        if (owners.length > 1)
          throw deny(
            a,
            name,
            `node "${nodeName}" can only create pods with a single owner reference set to itself`,
          );
        const o = owners[0];
        if (o && (o.apiVersion !== "v1" || o.kind !== "Node" || o.name !== nodeName)) {
          throw deny(
            a,
            name,
            `node "${nodeName}" can only create pods with an owner reference set to itself`,
          );
        }
      } else if (req.old && ((req.old.spec ?? {}) as Json).nodeName !== nodeName) {
        const what = a.verb === "delete" ? "delete pods" : "update pod status for pods";
        throw deny(a, name, `node "${nodeName}" can only ${what} with spec.nodeName set to itself`);
      }
    }
  }
  if (
    opts.plugins.has("NodeRestriction") &&
    nodeName !== undefined &&
    a.resource === "leases" &&
    a.apiGroup === "coordination.k8s.io"
  ) {
    if (name !== nodeName)
      throw deny(a, name, "can only access node lease with the same name as the requesting node");
  }

  // ---- certificates.k8s.io --------------------------------------------------------------
  if (a.apiGroup === "certificates.k8s.io" && a.resource === "certificatesigningrequests") {
    const spec = ((req.old ?? req.object)?.spec ?? {}) as Json;
    const signerName = str(spec.signerName);
    if (a.verb === "create" && req.object) {
      const reqSpec = (req.object.spec ?? {}) as Json;
      if (
        reqSpec.signerName === "kubernetes.io/kube-apiserver-client" &&
        typeof reqSpec.request === "string"
      ) {
        try {
          const csr = parseCSR(Buffer.from(reqSpec.request, "base64").toString("utf8"));
          if (csr.organizations.includes("system:masters")) {
            throw deny(
              a,
              name,
              `use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed`,
            );
          }
        } catch (e) {
          if ((e as StatusError).status) throw e;
        }
      }
    }
    if ((a.verb === "update" || a.verb === "patch") && a.subresource === "approval") {
      if (!isAuthorizedForSigner(opts.authorize, a, signerName, "approve")) {
        throw deny(
          a,
          name,
          `user not permitted to approve requests with signerName "${signerName}"`,
        );
      }
    }
    if (
      (a.verb === "update" || a.verb === "patch") &&
      a.subresource === "status" &&
      req.old &&
      req.object
    ) {
      const before = ((req.old.status ?? {}) as Json).certificate;
      const after = ((req.object.status ?? {}) as Json).certificate;
      if (before !== after && !isAuthorizedForSigner(opts.authorize, a, signerName, "sign")) {
        throw deny(a, name, `user not permitted to sign requests with signerName "${signerName}"`);
      }
    }
  }
}
