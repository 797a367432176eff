import type { KeyObject } from "node:crypto";
import { ADMIN_KUBECONFIG, SUPER_ADMIN_KUBECONFIG } from "../../config/paths.js";
import type { InitConfig } from "../../config/types.js";
import type { Release } from "../../config/release.js";
import { renderKubeConfig } from "../../kubeconfig/build.js";
import { CONTROL_PLANE_COMPONENTS } from "../../manifests/control-plane.js";
import { currentEntries, decodeData, parseKubeConfig } from "../../kubeconfig/parse.js";
import { certificateValidity } from "../../pki/certlist.js";
import {
  EXT_KEY_USAGE_OIDS,
  newSignedCert,
  parseCertificatesPEM,
  type Certificate,
  type ExtKeyUsage,
} from "../../pki/certs.js";
import type { KeySource } from "../../pki/key-source.js";
import { parsePrivateKeyPEM, privateKeyToPEM } from "../../pki/keys.js";
import {
  CA_BASE_NAME,
  CERT_FILE_MODE,
  ETCD_CA_BASE_NAME,
  FRONT_PROXY_CA_BASE_NAME,
  KEY_FILE_MODE,
  KUBECONFIG_FILE_MODE,
  certFile,
  keyFile,
  kubeconfigFile,
} from "../../pki/paths.js";
import { readFileIfExists, writeFiles, type FileWrite, type Host } from "../../remote/host.js";
import type { StaticPodComponent } from "./paths.js";

// Certificate renewal during an upgrade (kubeadm: phases/certs/renewal Manager.RenewUsingLocalCA
// and phases/upgrade/staticpods.go renewCertsByComponent): a certificate is re-issued by its
// local CA with a new key, keeping its subject, SANs and usages (certToConfig), dated from now
// (back-dated by CertificateBackdate) for certificateValidityPeriod. A kubeconfig file gets a new
// embedded client certificate the same way. With an external CA (its key absent) nothing is
// renewed: kubeadm only says so.

/** What renewCertsByComponent renews for each component, by kubeadm's renewal handler name. */
export function certificatesOf(component: StaticPodComponent, cfg: InitConfig): string[] {
  const localEtcd = !cfg.cluster.etcd.external;
  switch (component) {
    case "etcd":
      return localEtcd ? ["etcd-server", "etcd-peer", "etcd-healthcheck-client"] : [];
    case "kube-apiserver":
      return [
        "apiserver",
        "apiserver-kubelet-client",
        "front-proxy-client",
        ...(localEtcd ? ["apiserver-etcd-client"] : []),
      ];
    case "kube-controller-manager":
      return ["controller-manager.conf"];
    case "kube-scheduler":
      return ["scheduler.conf"];
  }
}

/** Renewal handlers: the certificate's file base name and its CA's. */
const CERT_HANDLERS: Record<string, { baseName: string; caBaseName: string }> = {
  apiserver: { baseName: "apiserver", caBaseName: CA_BASE_NAME },
  "apiserver-kubelet-client": { baseName: "apiserver-kubelet-client", caBaseName: CA_BASE_NAME },
  "front-proxy-client": { baseName: "front-proxy-client", caBaseName: FRONT_PROXY_CA_BASE_NAME },
  "apiserver-etcd-client": { baseName: "apiserver-etcd-client", caBaseName: ETCD_CA_BASE_NAME },
  "etcd-server": { baseName: "etcd/server", caBaseName: ETCD_CA_BASE_NAME },
  "etcd-peer": { baseName: "etcd/peer", caBaseName: ETCD_CA_BASE_NAME },
  "etcd-healthcheck-client": { baseName: "etcd/healthcheck-client", caBaseName: ETCD_CA_BASE_NAME },
};

export interface RenewalContext {
  host: Host;
  cfg: InitConfig;
  release: Release;
  keys: KeySource;
  now: Date;
}

function usagesOf(cert: Certificate): ExtKeyUsage[] {
  const oids = cert.extKeyUsages ?? [];
  return (Object.keys(EXT_KEY_USAGE_OIDS) as ExtKeyUsage[]).filter((u) =>
    oids.includes(EXT_KEY_USAGE_OIDS[u]),
  );
}

type LocalCA = { cert: Certificate; key: KeyObject } | undefined;

/** Each CA read once per renewal context: nine certificates share three CAs. */
const loadedCAs = new WeakMap<RenewalContext, Map<string, Promise<LocalCA>>>();

function loadLocalCA(ctx: RenewalContext, caBaseName: string): Promise<LocalCA> {
  let cas = loadedCAs.get(ctx);
  if (!cas) {
    cas = new Map<string, Promise<LocalCA>>();
    loadedCAs.set(ctx, cas);
  }
  let ca = cas.get(caBaseName);
  if (!ca) {
    ca = readLocalCA(ctx, caBaseName);
    // A failed read is not kept: the next certificate tries again.
    const known = cas;
    ca.catch(() => known.delete(caBaseName));
    cas.set(caBaseName, ca);
  }
  return ca;
}

async function readLocalCA(ctx: RenewalContext, caBaseName: string): Promise<LocalCA> {
  const dir = ctx.cfg.cluster.certificatesDir;
  const keyPath = keyFile(dir, caBaseName);
  const [key, certPEM] = await Promise.all([
    readFileIfExists(ctx.host, keyPath),
    ctx.host.readFile(certFile(dir, caBaseName)),
  ]);
  if (key === undefined) return undefined; // external CA: kubeforge cannot sign
  const cert = parseCertificatesPEM(certPEM, certFile(dir, caBaseName))[0]!;
  return { cert, key: parsePrivateKeyPEM(key, keyPath) };
}

/** A certificate like `old`, re-issued now by `ca` for a new key. */
async function reissue(
  ctx: RenewalContext,
  old: Certificate,
  ca: { cert: Certificate; key: KeyObject },
) {
  const keys = await ctx.keys.take(ctx.cfg.cluster.encryptionAlgorithm);
  const validity = certificateValidity(ctx.cfg, "leaf", ctx.now);
  const cert = await newSignedCert(
    {
      commonName: old.commonName,
      organization: old.organizations,
      altNames: { dnsNames: old.dnsNames, ips: old.ipAddresses },
      extKeyUsages: usagesOf(old),
      notBefore: validity.notBefore,
      notAfter: validity.notAfter,
    },
    keys.publicKey,
    ca,
  );
  return { cert, key: keys.privateKey };
}

/** A file read beside its CA: with an external CA kubeadm never reads it, so nor does its error count. */
const readOrError = (ctx: RenewalContext, path: string): Promise<Buffer | Error> =>
  ctx.host.readFile(path).catch((e: unknown) => e as Error);

/** A renewal read and signed, not yet written: the files in kubeadm's write order. */
type PreparedRenewal = FileWrite[] | "external CA";

async function prepareCertificateFile(ctx: RenewalContext, name: string): Promise<PreparedRenewal> {
  const handler = CERT_HANDLERS[name]!;
  const dir = ctx.cfg.cluster.certificatesDir;
  const certPath = certFile(dir, handler.baseName);
  const [ca, oldPEM] = await Promise.all([
    loadLocalCA(ctx, handler.caBaseName),
    readOrError(ctx, certPath),
  ]);
  if (!ca) return "external CA";
  if (oldPEM instanceof Error) throw oldPEM;
  const { cert, key } = await reissue(ctx, parseCertificatesPEM(oldPEM, certPath)[0]!, ca);
  // Key first, as kubeadm's WriteCertAndKey.
  return [
    { path: keyFile(dir, handler.baseName), data: privateKeyToPEM(key), mode: KEY_FILE_MODE },
    { path: certPath, data: cert.pem, mode: CERT_FILE_MODE },
  ];
}

async function prepareKubeConfigFile(
  ctx: RenewalContext,
  fileName: string,
): Promise<PreparedRenewal> {
  const path = kubeconfigFile(fileName);
  const [ca, text] = await Promise.all([loadLocalCA(ctx, CA_BASE_NAME), readOrError(ctx, path)]);
  if (!ca) return "external CA";
  if (text instanceof Error) throw text;
  const config = parseKubeConfig(text, path);
  const { user, userName } = currentEntries(config, path);
  const pem = decodeData(user?.["client-certificate-data"]);
  if (!pem) throw new Error(`${path} has no embedded client certificate to renew`);
  const { cert, key } = await reissue(ctx, parseCertificatesPEM(pem, path)[0]!, ca);
  const entry = config.users.find((u) => u.name === userName)!;
  entry.user = {
    ...entry.user,
    "client-certificate-data": Buffer.from(cert.pem).toString("base64"),
    "client-key-data": Buffer.from(privateKeyToPEM(key)).toString("base64"),
  };
  const data = renderKubeConfig(config, {
    preferences: ctx.release.behaviour.kubeconfigPreferences,
  });
  return [{ path, data, mode: KUBECONFIG_FILE_MODE }];
}

const prepare = (ctx: RenewalContext, name: string): Promise<PreparedRenewal> =>
  name.endsWith(".conf") ? prepareKubeConfigFile(ctx, name) : prepareCertificateFile(ctx, name);

/** Renewals prepared ahead (prepareRenewals), each taken once at its turn. */
const preparedAhead = new WeakMap<RenewalContext, Map<string, Promise<PreparedRenewal>>>();

/**
 * Starts reading and signing the named renewals now, writing nothing: a control plane's
 * components are upgraded one after another, and each then only writes its files. The files a
 * renewal reads are not written before its turn (each component renews its own).
 */
export function prepareRenewals(ctx: RenewalContext, names: readonly string[]): void {
  const ahead = preparedAhead.get(ctx) ?? new Map<string, Promise<PreparedRenewal>>();
  preparedAhead.set(ctx, ahead);
  for (const name of names) {
    if (ahead.has(name)) continue;
    const p = prepare(ctx, name);
    p.catch(() => {}); // read again at its turn
    ahead.set(name, p);
  }
}

/**
 * Starts the renewals of a control plane's upgrade ahead of their turns (prepareRenewals). Key
 * generation is the heaviest work of the CPU here, so it goes where the CPU is otherwise idle:
 * etcd's keys, needed before its restart, at once when etcd has a turn; the others when the
 * returned function is first called — once etcd's restart began, a wait of seconds — or at once
 * when etcd has no turn. Keys nobody takes are dropped.
 */
export function renewAhead(ctx: RenewalContext, etcdTurn: boolean): () => void {
  const start = (names: string[]) => {
    ctx.keys.prefetch(ctx.cfg.cluster.encryptionAlgorithm, names.length);
    prepareRenewals(ctx, names);
  };
  // super-admin.conf too: where the file does not exist, its preparation fails, takes no key
  // and is never taken (kubeadm renews it only where it exists).
  const others = () =>
    start([
      ...CONTROL_PLANE_COMPONENTS.flatMap((c) => certificatesOf(c, ctx.cfg)),
      ADMIN_KUBECONFIG,
      SUPER_ADMIN_KUBECONFIG,
    ]);
  if (!etcdTurn) {
    others();
    return () => {};
  }
  start(certificatesOf("etcd", ctx.cfg));
  let started = false;
  return () => {
    if (started) return;
    started = true;
    others();
  };
}

async function takePrepared(ctx: RenewalContext, name: string): Promise<PreparedRenewal> {
  const ahead = preparedAhead.get(ctx)?.get(name);
  preparedAhead.get(ctx)?.delete(name);
  return (await ahead?.catch(() => undefined)) ?? prepare(ctx, name);
}

/**
 * kubeadm's RenewUsingLocalCA: true when renewed, false when the CA is external (nothing
 * signed). `name` is a renewal handler name ("apiserver", "etcd-peer") or a kubeconfig file
 * name ("admin.conf").
 */
export async function renewUsingLocalCA(ctx: RenewalContext, name: string): Promise<boolean> {
  const renewal = await takePrepared(ctx, name);
  if (renewal === "external CA") return false;
  // kubeadm's order (the key before its certificate), in one command on the host.
  await writeFiles(ctx.host, renewal);
  return true;
}

/**
 * renewCertsByComponent, with kubeadm's lines in its order. The component's certificates are
 * independent files: every one that could be read and signed is written at once, in one command
 * on the host (kubeadm renews one after another), and the first failure in kubeadm's order is
 * the one thrown.
 */
export async function renewCertsByComponent(
  ctx: RenewalContext,
  component: StaticPodComponent,
  log: (line: string) => void,
): Promise<void> {
  const names = certificatesOf(component, ctx.cfg);
  const prepared = await Promise.allSettled(names.map((name) => takePrepared(ctx, name)));
  const files = prepared.flatMap((p) =>
    p.status === "fulfilled" && p.value !== "external CA" ? p.value : [],
  );
  const written = await writeFiles(ctx.host, files).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  for (const [i, name] of names.entries()) {
    const result = prepared[i]!;
    log(`[upgrade/staticpods] Renewing ${name} certificate`);
    if (result.status === "rejected") throw result.reason;
    if (result.value === "external CA") {
      log(`[upgrade/staticpods] External CA detected, ${name} certificate can't be renewed`);
    } else if (written !== undefined) {
      throw written;
    }
  }
}
