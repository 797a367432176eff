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
  ReadOptions,
} from "../../kube/types.js";
import type { ResourceInfo } from "../../kube/resources.js";

// `upgrade --dry-run` works on a cluster that exists (kubeadm's upgrade dry-run client reads
// through to the real API server and prints every write). The cluster's view is here: reads see
// the real cluster (and what the dry run itself wrote), writes go to stdout. The node's view is
// remote/dry-run.ts's OverlayDryRunHost.

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

  async get<T extends KubeObject = KubeObject>(ref: ObjectRef, opts?: ReadOptions): Promise<T> {
    return (this.recorder.stored(ref) as T | undefined) ?? this.real.get<T>(ref, opts);
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
  getRaw(path: string, opts?: ReadOptions): Promise<RawResponse> {
    return this.real.getRaw(path, opts);
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
