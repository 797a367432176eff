import {
  CERTIFICATES,
  certSpec,
  certificateValidity,
  certificatesFor,
  isEtcdCertificate,
  usesExternalEtcd,
  type CertDefinition,
} from "../../pki/certlist.js";
import {
  checkKeylessCAs,
  ensureCA,
  ensureServiceAccountKey,
  ensureSignedCertificate,
  isExternalCA,
  plannedCertificateKeys,
  type PkiWriter,
} from "../../node/pki-store.js";
import { CA_BASE_NAME } from "../../pki/paths.js";
import type { Phase, PhaseContext } from "../../workflow/phase.js";
import type { InitData } from "./data.js";

// `kubeadm init phase certs` (kubeadm: cmd/phases/init/certs.go): one sub-phase per
// certificate in GetDefaultCertList order, then `sa`. Each sub-phase runs alone (it reads its
// CA from disk) and is idempotent; the parent only announces the folder and starts
// generating the keys its children will take, so they are made in parallel.

function writer(data: InitData, ctx: PhaseContext): PkiWriter {
  return {
    host: data.host,
    certDir: data.cfg.cluster.certificatesDir,
    log: ctx.log,
    keys: data.keys,
    algorithm: data.cfg.cluster.encryptionAlgorithm,
    now: data.now(),
  };
}

function certSubPhase(def: CertDefinition): Phase<InitData> {
  return {
    name: def.name,
    short: `Generate the ${def.longName}`,
    // kubeadm prints "External etcd mode: Skipping ..." and creates no etcd certificates.
    ...(isEtcdCertificate(def) ? { runIf: (data: InitData) => !usesExternalEtcd(data.cfg) } : {}),
    run: async (data, ctx) => {
      const w = writer(data, ctx);
      const spec = certSpec(def.name, data.cfg, data.release, (m) => ctx.log.warn(m));
      const validity = certificateValidity(data.cfg, def.caName ? "leaf" : "ca", w.now);
      if (def.caName) await ensureSignedCertificate(w, spec, validity);
      else await ensureCA(w, spec, validity);
    },
  };
}

const saPhase: Phase<InitData> = {
  name: "sa",
  short: "Generate a private key for signing service account tokens along with its public key",
  run: async (data, ctx) => {
    const w = writer(data, ctx);
    await ensureServiceAccountKey(w, await isExternalCA(w.host, w.certDir, CA_BASE_NAME));
  },
};

export const certsPhase: Phase<InitData> = {
  name: "certs",
  short: "Certificate generation",
  run: async (data, ctx) => {
    const w = writer(data, ctx);
    ctx.log.info(`Using certificateDir folder "${w.certDir}"`);
    const certs = certificatesFor(data.cfg);
    // As kubeadm at the start of init: a CA without its key needs all its certificates given.
    await checkKeylessCAs(w, certs);
    const count = await plannedCertificateKeys(w, certs);
    if (count > 0) data.keys.prefetch(w.algorithm, count);
  },
  phases: [...CERTIFICATES.map(certSubPhase), saPhase],
};
