import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, join, normalize } from "node:path";

// SIMULATION (test double). The simulated kubelet sees the node's file system through a rootfs:
// every absolute host path (/etc/kubernetes/..., /var/lib/kubelet/...) lives under that folder,
// so several simulated nodes share one machine. "" or "/" means the machine's real paths.
// Kept independent of kubeforge's own src/remote/paths.ts on purpose: the simulation must not
// share code with what it tests.

/** Maps host paths of one simulated node into the real file system. */
export class HostFiles {
  readonly rootfs: string;

  constructor(rootfs: string) {
    this.rootfs = rootfs === "/" ? "" : rootfs;
  }

  /** The real path of host path `p` (absolute). */
  real(p: string): string {
    if (!isAbsolute(p)) throw new Error(`simulated kubelet: host path "${p}" is not absolute`);
    return this.rootfs ? join(this.rootfs, normalize(p)) : normalize(p);
  }

  async read(p: string): Promise<Buffer | undefined> {
    try {
      return await readFile(this.real(p));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw e;
    }
  }

  async readText(p: string): Promise<string | undefined> {
    return (await this.read(p))?.toString("utf8");
  }

  async exists(p: string): Promise<boolean> {
    try {
      await stat(this.real(p));
      return true;
    } catch {
      return false;
    }
  }

  /** Writes through a temporary file and a rename, so readers never see half a file. */
  async write(p: string, data: string | Buffer, mode: number): Promise<void> {
    await writeFileAtomic(this.real(p), data, mode);
  }

  async mkdirp(p: string, mode = 0o755): Promise<void> {
    await mkdir(this.real(p), { recursive: true, mode });
  }

  async remove(p: string): Promise<void> {
    await rm(this.real(p), { force: true });
  }
}

export async function writeFileAtomic(
  target: string,
  data: string | Buffer,
  mode: number,
): Promise<void> {
  await mkdir(dirname(target), { recursive: true, mode: 0o755 });
  const tmp = `${target}.sim-${randomBytes(4).toString("hex")}`;
  try {
    await writeFile(tmp, data, { mode });
    await chmod(tmp, mode);
    await rename(tmp, target);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}
