// TEST DOUBLE for the discovery unit tests: a ClientFactory whose clients answer GET
// kube-public/cluster-info from a script, recording the kubeconfig each client was built from
// and every attempt. Only `get` is implemented; discovery uses nothing else.
import { ApiError } from "../../../../src/kube/errors.js";
import type { ClientFactory } from "../../../../src/kube/discovery/index.js";
import type { KubeClient, KubeObject, ObjectRef } from "../../../../src/kube/types.js";
import { parseKubeConfig } from "../../../../src/kubeconfig/parse.js";
import type { KubeConfig } from "../../../../src/kubeconfig/types.js";

/** One answer: a ConfigMap's data, or an error to throw. */
export type Answer = Record<string, string> | Error;

export interface FakeClients {
  clientFor: ClientFactory;
  /** The kubeconfig of each client, parsed, in creation order. */
  kubeconfigs: KubeConfig[];
  /** The description each client was made with. */
  descriptions: string[];
  /** GETs per client, in creation order. */
  attempts: number[];
}

/**
 * `script(client, attempt)` answers the attempt-th GET (0-based) of the client-th client
 * (0 = the first client made).
 */
export function fakeClients(script: (client: number, attempt: number) => Answer): FakeClients {
  const kubeconfigs: KubeConfig[] = [];
  const descriptions: string[] = [];
  const attempts: number[] = [];
  const clientFor: ClientFactory = (text, opts) => {
    const index = kubeconfigs.length;
    kubeconfigs.push(parseKubeConfig(text, opts.description));
    descriptions.push(opts.description);
    attempts.push(0);
    const unsupported = () => Promise.reject(new Error("not used by discovery"));
    const client: KubeClient = {
      description: opts.description,
      get: <T extends KubeObject = KubeObject>(ref: ObjectRef): Promise<T> => {
        if (
          ref.kind !== "ConfigMap" ||
          ref.namespace !== "kube-public" ||
          ref.name !== "cluster-info"
        ) {
          return Promise.reject(new Error(`unexpected GET of ${ref.kind} ${ref.name}`));
        }
        const answer = script(index, attempts[index]!++);
        if (answer instanceof Error) return Promise.reject(answer);
        return Promise.resolve({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "cluster-info", namespace: "kube-public" },
          data: answer,
        } as unknown as T);
      },
      list: unsupported,
      create: unsupported,
      update: unsupported,
      patch: unsupported,
      delete: unsupported,
      createSubresource: unsupported,
      resource: unsupported,
      getRaw: unsupported,
    };
    return Promise.resolve(client);
  };
  return { clientFor, kubeconfigs, descriptions, attempts };
}

const CLUSTER_INFO = {
  verb: "get",
  kind: "ConfigMap",
  name: "cluster-info",
  namespace: "kube-public",
} as const;

/** The error of a request that got no answer. */
export function refused(server: string): ApiError {
  return new ApiError({
    operation: CLUSTER_INFO,
    code: 0,
    reason: "",
    statusMessage: "connect ECONNREFUSED 192.168.1.1:6443",
    server,
    networkCode: "ECONNREFUSED",
  });
}

/** A 403 from the API server. */
export function forbidden(server: string): ApiError {
  return new ApiError({
    operation: CLUSTER_INFO,
    code: 403,
    reason: "Forbidden",
    statusMessage:
      'configmaps "cluster-info" is forbidden: User "system:anonymous" cannot get resource "configmaps"',
    server,
  });
}

export {
  TEST_CERT2_PEM,
  TEST_CERT2_PIN,
  TEST_CERT_PEM,
  TEST_CERT_PIN,
} from "../../pki/pubkeypin-fixtures.js";
