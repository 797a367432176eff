import type { Host } from "../../remote/host.js";

// Images through crictl, the CRI client kubeforge uses where kubeadm calls the CRI API itself
// (kubeadm util/runtime ContainerRuntime.ImageExists and PullImage): what crictl pulls lands
// where the kubelet looks (containerd's k8s.io namespace).

export interface CrictlImagesOptions {
  /** Per pull (default 15 minutes). */
  pullTimeoutMs?: number;
  /** Ends the call running; it then rejects. */
  signal?: AbortSignal;
}

function lastLine(text: string): string {
  return text.trim().split("\n").at(-1) ?? "";
}

export class CrictlImages {
  private readonly endpoint: string;

  /** `crictl` is its path on the host; `criSocket` an endpoint or a bare socket path. */
  constructor(
    private readonly host: Host,
    private readonly crictl: string,
    criSocket: string,
    private readonly opts: CrictlImagesOptions = {},
  ) {
    this.endpoint = criSocket.includes("://") ? criSocket : `unix://${criSocket}`;
  }

  private argv(...args: string[]): string[] {
    const e = this.endpoint;
    return [this.crictl, "--runtime-endpoint", e, "--image-endpoint", e, ...args];
  }

  private get signal() {
    return this.opts.signal ? { signal: this.opts.signal } : {};
  }

  /** Whether the runtime has the image (`crictl inspecti`). */
  async exists(image: string): Promise<boolean> {
    const r = await this.host.exec(this.argv("inspecti", "-q", image), {
      sudo: true,
      readOnly: true,
      timeoutMs: 60_000,
      ...this.signal,
    });
    return r.code === 0;
  }

  /**
   * Whether the runtime has every one of the images, in one `crictl inspecti` (it asks the
   * runtime for each in turn and fails at the first it lacks: cri-tools cmd/crictl/image.go).
   * False says only that one is missing: ask `exists` for each to learn which.
   */
  async allExist(images: readonly string[]): Promise<boolean> {
    if (images.length === 0) return true;
    const r = await this.host.exec(this.argv("inspecti", "-q", ...images), {
      sudo: true,
      readOnly: true,
      timeoutMs: 60_000,
      ...this.signal,
    });
    return r.code === 0;
  }

  /** Pulls the image: undefined when it is in, else what the runtime said (crictl's last line). */
  async pull(image: string): Promise<string | undefined> {
    const r = await this.host.exec(this.argv("pull", image), {
      sudo: true,
      timeoutMs: this.opts.pullTimeoutMs ?? 15 * 60_000,
      ...this.signal,
    });
    return r.code === 0 ? undefined : lastLine(r.stderr || r.stdout) || `exit code ${r.code}`;
  }
}
