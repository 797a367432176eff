import { createPrivateKey } from "node:crypto";
import { join } from "node:path";
import { SimApiClient, type Credentials } from "./api-client.js";
import { CertificateFileStore, type StoredPair } from "./cert-store.js";
import { digestedCsrName, requestCertificate, waitForCertificate } from "./csr.js";
import type { HostFiles } from "./host-files.js";
import {
  bootstrappedKubeconfig,
  clientCredentials,
  loadClientConfig,
  type ClientConfig,
} from "./kubeconfig.js";
import { generateEcKey, nodeClientCSR, parsePair } from "./pki.js";
import { sleep, type KubeletTiming } from "./timing.js";

// SIMULATION (test double). How the kubelet gets the client certificate it talks to the API
// with (cmd/kubelet/app/server.go buildKubeletClientConfig):
// - rotateCertificates true (kubeadm forces it): bootstrap.LoadClientConfig picks the configs,
//   then a client-go certificate manager keeps kubelet-client-current.pem fresh, bootstrapping
//   it in the background from bootstrap-kubelet.conf, or rotating out kubeadm's embedded
//   certificate at once;
// - rotateCertificates false: bootstrap.LoadClientCert blocks until a certificate is issued,
//   then the kubelet uses kubelet.conf as it is.

export type Log = (line: string) => void;

/** Where the kubelet's API credentials come from at any moment. */
export interface KubeletCredentials {
  /** The client for the kubelet's own API calls; undefined while it has no usable credentials. */
  client(): Promise<SimApiClient | undefined>;
  stop(): void;
}

function certExpired(pair: StoredPair, now = new Date()): boolean {
  return now > pair.leaf.notAfter;
}

function credentialsOf(cfg: ClientConfig, pair?: { cert: Buffer; key: Buffer }): Credentials {
  return {
    ...(pair ? { cert: pair.cert, key: pair.key } : {}),
    ...(cfg.token ? { token: cfg.token } : {}),
  };
}

function describe(cfg: ClientConfig, pair?: StoredPair): string {
  if (pair) return `${pair.leaf.commonName} (${cfg.source})`;
  return cfg.token ? `bootstrap token (${cfg.source})` : cfg.source;
}

/**
 * bootstrap.go isClientConfigStillValid: the kubeconfig exists, its client certificate can be
 * loaded (files it names must exist) and no certificate in it has expired.
 */
export async function isClientConfigStillValid(files: HostFiles, path: string): Promise<boolean> {
  let cfg: ClientConfig | undefined;
  try {
    cfg = await loadClientConfig(files, path);
  } catch {
    return false;
  }
  if (!cfg) return false;
  const creds = await clientCredentials(files, cfg);
  if (!creds) return false;
  const pair = parsePair(creds.cert.toString() + creds.key.toString());
  return pair !== undefined && !certExpired(pair);
}

async function mustLoad(files: HostFiles, path: string, what: string): Promise<ClientConfig> {
  const cfg = await loadClientConfig(files, path).catch((e: Error) => {
    throw new Error(`unable to load ${what}: ${e.message}`, { cause: e });
  });
  if (!cfg) throw new Error(`unable to load ${what}: stat ${path}: no such file or directory`);
  return cfg;
}

export interface ClientCertOptions {
  files: HostFiles;
  kubeconfig: string;
  bootstrapKubeconfig: string;
  certDir: string;
  nodeName: string;
  timing: KubeletTiming;
  log: Log;
}

/**
 * rotateCertificates=true. bootstrap.LoadClientConfig: a valid kubelet.conf is used for both
 * requesting certificates and the kubelet's own calls; otherwise bootstrap-kubelet.conf requests
 * them and kubelet.conf is (re)written at once, pointing at kubelet-client-current.pem, which
 * does not exist until the first certificate is issued. A missing bootstrap file then fails the
 * start ("unable to load bootstrap kubeconfig"), the crash loop of a node waiting for
 * `kubeadm join`.
 */
export async function startRotatingCredentials(o: ClientCertOptions): Promise<KubeletCredentials> {
  const store0 = new CertificateFileStore(o.files, o.certDir);
  let certConfig: ClientConfig;
  let clientConfig: ClientConfig;
  if (await isClientConfigStillValid(o.files, o.kubeconfig)) {
    o.log(
      `Current kubeconfig file contents are still valid, no bootstrap necessary (${o.kubeconfig})`,
    );
    certConfig = clientConfig = await mustLoad(o.files, o.kubeconfig, "kubeconfig");
  } else {
    const bootstrap = await mustLoad(o.files, o.bootstrapKubeconfig, "bootstrap kubeconfig");
    const pemPath = store0.currentPath();
    await o.files.write(o.kubeconfig, bootstrappedKubeconfig(bootstrap, pemPath), 0o600);
    o.log(
      `Use the bootstrap credentials to request a cert, and set kubeconfig to point to the certificate dir (${o.kubeconfig})`,
    );
    certConfig = bootstrap;
    clientConfig = (await loadClientConfig(o.files, o.kubeconfig))!;
  }
  // buildClientCertificateManager: the store also reads the kubeconfig's own cert/key files;
  // embedded data in kubelet.conf becomes the bootstrap pair "rotated out immediately"
  // (kubeadm's init-time kubelet.conf).
  const store = new CertificateFileStore(
    o.files,
    o.certDir,
    "kubelet-client",
    clientConfig.certFile,
    clientConfig.keyFile,
  );
  const manager = await CertificateManager.create({
    ...o,
    store,
    bootstrapPair:
      clientConfig.certData && clientConfig.keyData
        ? { certPem: clientConfig.certData.toString(), keyPem: clientConfig.keyData.toString() }
        : undefined,
    // newClientsetFn: the current certificate when there is one, else the bootstrap config.
    clientFor: (current) =>
      current
        ? new SimApiClient(clientConfig, pairCredentials(current), describe(clientConfig, current))
        : new SimApiClient(certConfig, credentialsOfLoaded(certConfig), describe(certConfig)),
    loadCertConfigCredentials: () => clientCredentials(o.files, certConfig),
  });
  manager.start();
  return {
    client: () => {
      // The rotating transport uses the manager's current certificate with kubelet.conf's server.
      const current = manager.current();
      return Promise.resolve(
        current
          ? new SimApiClient(
              clientConfig,
              pairCredentials(current),
              describe(clientConfig, current),
            )
          : undefined,
      );
    },
    stop: () => manager.stop(),
  };
}

const pairCredentials = (p: StoredPair): Credentials => ({
  cert: Buffer.from(p.certPem),
  key: Buffer.from(p.keyPem),
});

// Embedded cert/key data or a token; file-based bootstrap credentials are loaded per request.
const credentialsOfLoaded = (cfg: ClientConfig): Credentials =>
  credentialsOf(
    cfg,
    cfg.certData && cfg.keyData ? { cert: cfg.certData, key: cfg.keyData } : undefined,
  );

export interface CertificateManagerOptions extends ClientCertOptions {
  store: CertificateFileStore;
  bootstrapPair?: { certPem: string; keyPem: string };
  clientFor: (current: StoredPair | undefined) => SimApiClient;
  loadCertConfigCredentials: () => Promise<{ cert: Buffer; key: Buffer } | undefined>;
}

/** DefaultKubeletClientGetUsages for an ECDSA key (no key encipherment, which is RSA only). */
export const ROTATION_USAGES = ["digital signature", "client auth"];

/**
 * k8s.io/client-go/util/certificate/certificate_manager.go for the kubelet client certificate
 * (template CN=system:node:<name>, O=system:nodes; signer kube-apiserver-client-kubelet).
 */
export class CertificateManager {
  private cert: StoredPair | undefined;
  private forceRotation: boolean;
  private readonly abort = new AbortController();

  private constructor(
    private readonly o: CertificateManagerOptions,
    initial: StoredPair | undefined,
    force: boolean,
  ) {
    this.cert = initial;
    this.forceRotation = force;
  }

  /**
   * NewManager → getCurrentCertificateOrBootstrap: an unexpired stored pair is used as is;
   * otherwise the bootstrap pair (kubeconfig data) is written to the store — this is how
   * kubelet-client-current.pem appears on a kubeadm control plane right after the kubelet
   * starts — and rotation is forced.
   */
  static async create(o: CertificateManagerOptions): Promise<CertificateManager> {
    const stored = await o.store.current();
    if (stored && !certExpired(stored)) return new CertificateManager(o, stored, false);
    if (!o.bootstrapPair) return new CertificateManager(o, undefined, true);
    let pair: StoredPair | undefined;
    try {
      pair = await o.store.update(o.bootstrapPair.certPem, o.bootstrapPair.keyPem);
    } catch (e) {
      o.log(
        `Unable to set the cert/key pair to the bootstrap certificate: ${(e as Error).message}`,
      );
      pair = parsePair(o.bootstrapPair.certPem + o.bootstrapPair.keyPem);
    }
    return new CertificateManager(o, pair, true);
  }

  /** Current: undefined before the first certificate, or once it has expired. */
  current(): StoredPair | undefined {
    return this.cert && !certExpired(this.cert) ? this.cert : undefined;
  }

  stop(): void {
    this.abort.abort();
  }

  start(): void {
    this.o.log("kubernetes.io/kube-apiserver-client-kubelet: Certificate rotation is enabled");
    void this.loop().catch((e: Error) => this.o.log(`certificate manager stopped: ${e.message}`));
  }

  private get signal() {
    return this.abort.signal;
  }

  /** Start's wait.Until loop: sleep until the deadline, then rotate with backoff. */
  private async loop(): Promise<void> {
    const t = this.o.timing;
    while (!this.signal.aborted) {
      const wait = this.nextRotationDeadline().getTime() - Date.now();
      if (wait > 0) {
        this.o.log(
          `kubernetes.io/kube-apiserver-client-kubelet: Waiting ${Math.round(wait / 1000)}s for next certificate rotation`,
        );
        await sleep(wait, this.signal);
        if (this.signal.aborted) return;
      }
      // wait.ExponentialBackoff{2s, ×2, jitter 0.1, 5 steps}, then PollInfinite(32s).
      let delay = t.certBackoffInitialMs;
      let rotated = false;
      for (let step = 0; step < t.certBackoffSteps && !this.signal.aborted; step++) {
        if ((rotated = await this.rotateCerts())) break;
        if (step < t.certBackoffSteps - 1) {
          await sleep(delay * (1 + Math.random() * 0.1), this.signal);
          delay *= 2;
        }
      }
      if (!rotated && !this.signal.aborted) {
        this.o.log(
          "kubernetes.io/kube-apiserver-client-kubelet: Reached backoff limit, still unable to rotate certs",
        );
        while (!this.signal.aborted) {
          await sleep(t.certPollMs, this.signal);
          if (this.signal.aborted || (await this.rotateCerts())) break;
        }
      }
      await sleep(1000, this.signal); // wait.Until period
    }
  }

  /**
   * nextRotationDeadline: now when forced or when the certificate does not match the template
   * (CN, organizations); else NotBefore + 70–90 % of the lifetime (jitteryDuration).
   */
  private nextRotationDeadline(): Date {
    if (this.forceRotation) {
      this.forceRotation = false;
      return new Date();
    }
    const cert = this.cert;
    if (!cert || !this.satisfiesTemplate(cert)) return new Date();
    const total = cert.leaf.notAfter.getTime() - cert.leaf.notBefore.getTime();
    const fraction = 0.7 + Math.random() * 0.2;
    return new Date(cert.leaf.notBefore.getTime() + total * fraction);
  }

  private satisfiesTemplate(cert: StoredPair): boolean {
    return (
      cert.leaf.commonName === `system:node:${this.o.nodeName}` &&
      cert.leaf.organizations.includes("system:nodes")
    );
  }

  /** rotateCerts: new key, CSR with generateName csr-, wait, store. Failures return false. */
  private async rotateCerts(): Promise<boolean> {
    const o = this.o;
    o.log("kubernetes.io/kube-apiserver-client-kubelet: Rotating certificates");
    try {
      const key = await generateEcKey();
      const csrPem = await nodeClientCSR(key.key, o.nodeName);
      const current = this.current();
      let client = o.clientFor(current);
      if (!current) {
        // A bootstrap config that names cert files is read at request time.
        const fileCreds = await o.loadCertConfigCredentials();
        if (fileCreds) client = withCredentials(client, fileCreds);
      }
      const csr = await requestCertificate(client, { csrPem, usages: ROTATION_USAGES });
      o.log(
        `kubernetes.io/kube-apiserver-client-kubelet: CSR ${csr.name} created as ${client.description}; waiting for it to be signed`,
      );
      const certPem = await waitForCertificate(client, csr, {
        pollMs: o.timing.csrPollMs,
        timeoutMs: o.timing.certificateWaitMs,
        signal: this.signal,
      });
      this.cert = await o.store.update(certPem, key.pem);
      o.log(
        `kubernetes.io/kube-apiserver-client-kubelet: certificate from CSR ${csr.name} stored in ${o.store.currentPath()}`,
      );
      return true;
    } catch (e) {
      if (!this.signal.aborted) {
        o.log(
          `kubernetes.io/kube-apiserver-client-kubelet: Failed while requesting a signed certificate from the control plane: ${(e as Error).message}`,
        );
      }
      return false;
    }
  }
}

function withCredentials(client: SimApiClient, creds: { cert: Buffer; key: Buffer }): SimApiClient {
  return client.withCredentials({ cert: creds.cert, key: creds.key });
}

/**
 * rotateCertificates=false. bootstrap.LoadClientCert: a valid kubelet.conf short-circuits;
 * otherwise the key is reused from the store or kubelet-client.key.tmp (created first, so a
 * failed attempt reuses it), the API's /healthz is awaited for up to a minute, a CSR named by
 * digestedName (usages: digital signature, key encipherment, client auth) is created with the
 * bootstrap credentials and awaited for up to an hour, the pair is stored, the temporary key
 * removed and kubelet.conf written. The kubelet does not go on until this returns.
 */
export async function loadClientCert(
  o: ClientCertOptions & { signal?: AbortSignal },
): Promise<KubeletCredentials> {
  if (!(await isClientConfigStillValid(o.files, o.kubeconfig))) {
    o.log("Using bootstrap kubeconfig to generate TLS client cert, key and kubeconfig file");
    const bootstrap = await mustLoad(o.files, o.bootstrapKubeconfig, "bootstrap kubeconfig");
    const bootstrapFileCreds = await clientCredentials(o.files, bootstrap);
    const client = new SimApiClient(
      bootstrap,
      credentialsOf(bootstrap, bootstrapFileCreds),
      describe(bootstrap),
    );
    const store = new CertificateFileStore(o.files, o.certDir);
    const tmpKeyPath = join(o.certDir, "kubelet-client.key.tmp");
    let keyPem = (await store.current())?.keyPem;
    if (!keyPem) {
      keyPem = await o.files.readText(tmpKeyPath);
      if (!keyPem || !/PRIVATE KEY/.test(keyPem)) {
        keyPem = (await generateEcKey()).pem;
        await o.files.write(tmpKeyPath, keyPem, 0o600);
      }
    }
    const key = createPrivateKey(keyPem);
    await waitForServer(client, 60_000, o.log, o.signal);
    const usages = ["digital signature", "key encipherment", "client auth"];
    const cn = `system:node:${o.nodeName}`;
    const csr = await requestCertificate(client, {
      name: digestedCsrName(key, cn, ["system:nodes"], usages),
      csrPem: await nodeClientCSR(key, o.nodeName),
      usages,
    });
    o.log(`Waiting for client certificate to be issued (CSR ${csr.name})`);
    const certPem = await waitForCertificate(client, csr, {
      pollMs: o.timing.csrPollMs,
      timeoutMs: 3600_000,
      ...(o.signal ? { signal: o.signal } : {}),
    });
    await store.update(certPem, keyPem);
    await o.files.remove(tmpKeyPath);
    await o.files.write(
      o.kubeconfig,
      bootstrappedKubeconfig(bootstrap, store.currentPath()),
      0o600,
    );
  } else {
    o.log(`Kubeconfig exists and is valid, skipping bootstrap (${o.kubeconfig})`);
  }
  const cfg = await mustLoad(o.files, o.kubeconfig, "kubeconfig");
  return {
    client: async () => {
      const creds = await clientCredentials(o.files, cfg);
      return new SimApiClient(cfg, credentialsOf(cfg, creds), cfg.source);
    },
    stop: () => {},
  };
}

/** bootstrap.go waitForServer: GET /healthz about every 2 s until it answers, or the deadline. */
async function waitForServer(
  client: SimApiClient,
  deadlineMs: number,
  log: Log,
  signal?: AbortSignal,
) {
  const end = Date.now() + deadlineMs;
  while (Date.now() < end && !signal?.aborted) {
    try {
      const res = await client.request("GET", "/healthz");
      if (res.status === 200) return;
    } catch (e) {
      log(`Failed to connect to apiserver: ${(e as Error).message}`);
    }
    await sleep(2000, signal);
  }
  log("Error waiting for apiserver to come up: timed out waiting to connect to apiserver");
}
