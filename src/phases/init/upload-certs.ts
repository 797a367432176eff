import { bootstrapTokenSecret, certsProxyToken } from "../../manifests/bootstrap-token.js";
import { kubeadmCertsRBAC } from "../../manifests/rbac.js";
import {
  KUBEADM_CERTS_SECRET,
  certsToTransfer,
  kubeadmCertsSecret,
} from "../../manifests/upload-certs.js";
import { createOrRetain, createOrUpdate } from "../../kube/idempotency.js";
import { generateBootstrapToken } from "../../pki/token.js";
import { readFileIfExists } from "../../remote/host.js";
import type { Phase } from "../../workflow/phase.js";
import { adminClient, apiCallOptions } from "./clients.js";
import type { InitData } from "./data.js";

// kubeadm's cmd/phases/init/uploadcerts.go over phases/copycerts: the shared CA keys, sa key and
// etcd CA, each sealed with the certificate key, in the kubeadm-certs Secret. A 2-hour token with
// no usages owns the Secret, so when the token cleaner deletes the token the garbage collector
// deletes the certificates.

export const uploadCertsPhase: Phase<InitData> = {
  name: "upload-certs",
  short: "Upload certificates to kubeadm-certs",
  run: async (data, ctx) => {
    const key = data.certificateKey;
    if (!data.uploadCerts || key === undefined) {
      ctx.log.info("[upload-certs] Skipping phase. Please see --upload-certs");
      return;
    }
    const client = await adminClient(data);
    const opts = apiCallOptions(data);
    ctx.log.info(
      `[upload-certs] Storing the certificates in Secret "${KUBEADM_CERTS_SECRET}" in the "kube-system" Namespace`,
    );
    // createShortLivedBootstrapToken: a new random token every upload. One that exists is this
    // run's own (a create whose answer was lost): its uid is the owner's.
    const proxy = bootstrapTokenSecret(certsProxyToken(generateBootstrapToken()), data.now());
    const owner = await createOrRetain(client, proxy, opts);
    const contents: Record<string, Buffer | undefined> = {};
    for (const file of certsToTransfer(data.cfg.cluster)) {
      contents[file.secretKey] = file.path
        ? await readFileIfExists(data.host, file.path)
        : undefined;
    }
    const secret = kubeadmCertsSecret(contents, key, {
      name: owner.metadata.name,
      uid: owner.metadata.uid ?? "",
    });
    await createOrUpdate(client, secret, opts);
    for (const obj of kubeadmCertsRBAC()) await createOrUpdate(client, obj, opts);
    if (!data.skipCertificateKeyPrint) {
      ctx.log.info(`[upload-certs] Using certificate key:\n${key}`);
    }
  },
};
