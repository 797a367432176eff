import { lstat, readFile, rename, rm, symlink } from "node:fs/promises";
import { join } from "node:path";
import { writeFileAtomic, type HostFiles } from "./host-files.js";
import { parsePair, type CertInfo } from "./pki.js";

// SIMULATION (test double). client-go's certificate file store
// (k8s.io/client-go/util/certificate/certificate_store.go), pair name prefix "kubelet-client":
// the current pair is <certDir>/kubelet-client-current.pem (cert then key in one file), a
// symlink to kubelet-client-<YYYY-MM-DD-HH-MM-SS>.pem (mode 0600), replaced through a
// "-updated" symlink and a rename. Before a current pem exists, the kubeconfig's own
// client-certificate/client-key files, then <certDir>/kubelet-client.crt/.key, are read.

export interface StoredPair {
  certPem: string;
  keyPem: string;
  leaf: CertInfo;
}

/** Go's time.Format("2006-01-02-15-04-05"), in local time as time.Now() is. */
export function pairTimestamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}-${p(d.getHours())}-${p(d.getMinutes())}-${p(d.getSeconds())}`;
}

export class CertificateFileStore {
  constructor(
    private readonly files: HostFiles,
    /** Host path of the cert dir (--cert-dir, /var/lib/kubelet/pki). */
    readonly certDir: string,
    private readonly pairNamePrefix = "kubelet-client",
    /** client-certificate / client-key files named by the kubeconfig, if any. */
    private readonly certFile?: string,
    private readonly keyFile?: string,
  ) {}

  /** Host path of the current pair: what kubelet.conf points at after bootstrap. */
  currentPath(): string {
    return join(this.certDir, `${this.pairNamePrefix}-current.pem`);
  }

  /** fileStore.Current: the pair in use, or undefined (NoCertKeyError). */
  async current(): Promise<StoredPair | undefined> {
    const pem = await this.files.readText(this.currentPath());
    if (pem !== undefined) {
      const pair = parsePair(pem);
      if (!pair)
        throw new Error(`could not convert data from "${this.currentPath()}" into cert/key pair`);
      return pair;
    }
    const candidates: [string | undefined, string | undefined][] = [
      [this.certFile, this.keyFile],
      [
        join(this.certDir, `${this.pairNamePrefix}.crt`),
        join(this.certDir, `${this.pairNamePrefix}.key`),
      ],
    ];
    for (const [c, k] of candidates) {
      if (!c || !k) continue;
      const cert = await this.files.readText(c);
      const key = await this.files.readText(k);
      if (cert !== undefined && key !== undefined) {
        const pair = parsePair(cert + key);
        if (pair) return pair;
      }
    }
    return undefined;
  }

  /**
   * fileStore.Update: writes kubelet-client-<timestamp>.pem (0600; the certificates, then the
   * key) and points kubelet-client-current.pem at it. The real store makes the symlink target
   * absolute; here it is the absolute path on the machine (inside the rootfs), so it resolves
   * both for the simulation and for a reader of the rootfs.
   */
  async update(certPem: string, keyPem: string, now = new Date()): Promise<StoredPair> {
    const pair = parsePair(certPem + keyPem);
    if (!pair) throw new Error("invalid certificate data");
    await this.files.mkdirp(this.certDir, 0o755);
    const file = this.files.real(
      join(this.certDir, `${this.pairNamePrefix}-${pairTimestamp(now)}.pem`),
    );
    await writeFileAtomic(file, pair.certPem + pair.keyPem, 0o600);
    const current = this.files.real(this.currentPath());
    const updated = this.files.real(join(this.certDir, `${this.pairNamePrefix}-updated.pem`));
    const currentStat = await lstat(current).catch(() => undefined);
    if (currentStat && !currentStat.isSymbolicLink()) {
      throw new Error(`expected "${current}" to be a symlink but it is a file`);
    }
    await rm(updated, { force: true });
    await symlink(file, updated);
    await rename(updated, current);
    return pair;
  }

  /** Reads the raw current file (tests). */
  async currentFileText(): Promise<string | undefined> {
    try {
      return await readFile(this.files.real(this.currentPath()), "utf8");
    } catch {
      return undefined;
    }
  }
}
