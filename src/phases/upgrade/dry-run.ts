import { posix } from "node:path";
import { isNotFound } from "../../kube/errors.js";
import type { DryRunKubeClient } from "../../kube/dry-run.js";
import type {
  ClusterAccess,
  KubeClient,
  KubeObject,
  ListOptions,
  ObjectRef,
  PatchType,
  ProbeOptions,
  RawResponse,
} from "../../kube/types.js";
import type { ResourceInfo } from "../../kube/resources.js";
import type { ExecOptions, ExecResult, FileStat, Host, HostFacts } from "../../remote/host.js";
import { LocalHost } from "../../remote/local.js";

// `upgrade --dry-run` works on a cluster and a node that exist (kubeadm's upgrade dry-run
// client reads through to the real API server and prints every write; its dry-run kubelet and
// manifest folders start from the real files). Both views here: reads see the real cluster and
// host (and what the dry run itself wrote), writes go to stdout and to the dry-run folder.

/** A DryRunKubeClient whose reads fall through to the real cluster. */
export class ReadThroughDryRunClient implements KubeClient {
  readonly description: string;

  constructor(
    private readonly real: KubeClient,
    private readonly recorder: DryRunKubeClient,
  ) {
    this.description = real.description;
  }

  private async seed(ref: ObjectRef): Promise<void> {
    if (this.recorder.stored(ref)) return;
    try {
      this.recorder.remember(await this.real.get(ref));
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  async get<T extends KubeObject = KubeObject>(ref: ObjectRef): Promise<T> {
    return (this.recorder.stored(ref) as T | undefined) ?? this.real.get<T>(ref);
  }
  list<T extends KubeObject = KubeObject>(apiVersion: string, kind: string, opts?: ListOptions) {
    return this.real.list<T>(apiVersion, kind, opts);
  }
  async create<T extends KubeObject>(obj: T): Promise<T> {
    await this.seed(refOfObject(obj));
    return this.recorder.create(obj);
  }
  async update<T extends KubeObject>(obj: T): Promise<T> {
    await this.seed(refOfObject(obj));
    return this.recorder.update(obj);
  }
  async patch<T extends KubeObject = KubeObject>(ref: ObjectRef, patch: unknown, type: PatchType) {
    await this.seed(ref);
    return this.recorder.patch<T>(ref, patch, type);
  }
  delete(ref: ObjectRef): Promise<void> {
    return this.recorder.delete(ref);
  }
  createSubresource<T = unknown>(ref: ObjectRef, subresource: string, body: unknown): Promise<T> {
    return this.recorder.createSubresource<T>(ref, subresource, body);
  }
  getRaw(path: string): Promise<RawResponse> {
    return this.real.getRaw(path);
  }
  resource(apiVersion: string, kind: string): Promise<ResourceInfo> {
    return this.real.resource(apiVersion, kind);
  }
}

function refOfObject(obj: KubeObject): ObjectRef {
  const { name, namespace } = obj.metadata;
  return namespace
    ? { apiVersion: obj.apiVersion, kind: obj.kind, name, namespace }
    : { apiVersion: obj.apiVersion, kind: obj.kind, name };
}

/** Every kubeconfig path answers with the one client of the run (the --kubeconfig one). */
export function singleClientAccess(
  client: () => Promise<KubeClient>,
  probe: (url: string, opts: ProbeOptions) => Promise<RawResponse>,
): ClusterAccess {
  return { clientFor: () => client(), probe };
}

/**
 * A host seen through an upgrade dry run: reads come from the dry-run folder when the run wrote
 * the file there, else from the real host; writes and removals stay in the dry-run folder (a
 * removal hides the real file); commands that change the machine are reported, not run.
 */
export class OverlayDryRunHost implements Host {
  readonly name: string;
  private readonly overlay: LocalHost;
  private readonly removed = new Set<string>();

  constructor(
    private readonly real: Host,
    readonly dryRunDir: string,
    private readonly wouldRun: (host: string, argv: string[]) => void,
  ) {
    this.name = real.name;
    this.overlay = new LocalHost({ rootfs: dryRunDir, name: real.name });
  }

  private hidden(path: string): boolean {
    const p = posix.normalize(path);
    for (const r of this.removed) if (p === r || p.startsWith(`${r}/`)) return true;
    return false;
  }

  exec(argv: string[], opts: ExecOptions = {}): Promise<ExecResult> {
    if (opts.readOnly) return this.real.exec(argv, opts);
    this.wouldRun(this.name, argv);
    return Promise.resolve({ code: 0, stdout: "", stderr: "" });
  }
  async readFile(path: string): Promise<Buffer> {
    if (await this.overlay.exists(path)) return this.overlay.readFile(path);
    if (this.hidden(path)) return this.overlay.readFile(path); // ENOENT, as a real read
    return this.real.readFile(path);
  }
  writeFile(path: string, data: string | Buffer, mode: number): Promise<void> {
    this.removed.delete(posix.normalize(path));
    return this.overlay.writeFile(path, data, mode);
  }
  mkdirp(path: string, mode?: number): Promise<void> {
    return this.overlay.mkdirp(path, mode);
  }
  async exists(path: string): Promise<boolean> {
    if (await this.overlay.exists(path)) return true;
    return !this.hidden(path) && this.real.exists(path);
  }
  async stat(path: string): Promise<FileStat | undefined> {
    const own = await this.overlay.stat(path);
    if (own) return own;
    return this.hidden(path) ? undefined : this.real.stat(path);
  }
  async readDir(path: string): Promise<string[]> {
    const names = new Set(await this.overlay.readDir(path));
    if (!this.hidden(path)) {
      for (const n of await this.real.readDir(path)) {
        if (!this.hidden(posix.join(path, n))) names.add(n);
      }
    }
    return [...names].sort();
  }
  async remove(path: string, opts?: { recursive?: boolean }): Promise<void> {
    this.removed.add(posix.normalize(path));
    await this.overlay.remove(path, opts);
  }
  hostname(): Promise<string> {
    return this.real.hostname();
  }
  facts(): Promise<HostFacts> {
    return this.real.facts();
  }
}
