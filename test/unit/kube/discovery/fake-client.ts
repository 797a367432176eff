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

// kubeadm's util/pubkeypin/pubkeypin_test.go (and discovery/token/token_test.go) certificates
// and their pins (the first is kubeadm's known answer; the second computed with the openssl CLI).
export const TEST_CERT_PEM = `-----BEGIN CERTIFICATE-----
MIIDRDCCAiygAwIBAgIJAJgVaCXvC6HkMA0GCSqGSIb3DQEBBQUAMB8xHTAbBgNV
BAMTFGt1YmVhZG0ta2V5cGlucy10ZXN0MCAXDTE3MDcwNTE3NDMxMFoYDzIxMTcw
NjExMTc0MzEwWjAfMR0wGwYDVQQDExRrdWJlYWRtLWtleXBpbnMtdGVzdDCCASIw
DQYJKoZIhvcNAQEBBQADggEPADCCAQoCggEBAK0ba8mHU9UtYlzM1Own2Fk/XGjR
J4uJQvSeGLtz1hID1IA0dLwruvgLCPadXEOw/f/IWIWcmT+ZmvIHZKa/woq2iHi5
+HLhXs7aG4tjKGLYhag1hLjBI7icqV7ovkjdGAt9pWkxEzhIYClFMXDjKpMSynu+
YX6nZ9tic1cOkHmx2yiZdMkuriRQnpTOa7bb03OC1VfGl7gHlOAIYaj4539WCOr8
+ACTUMJUFEHcRZ2o8a/v6F9GMK+7SC8SJUI+GuroXqlMAdhEv4lX5Co52enYaClN
+D9FJLRpBv2YfiCQdJRaiTvCBSxEFz6BN+PtP5l2Hs703ZWEkOqCByM6HV8CAwEA
AaOBgDB+MB0GA1UdDgQWBBRQgUX8MhK2rWBWQiPHWcKzoWDH5DBPBgNVHSMESDBG
gBRQgUX8MhK2rWBWQiPHWcKzoWDH5KEjpCEwHzEdMBsGA1UEAxMUa3ViZWFkbS1r
ZXlwaW5zLXRlc3SCCQCYFWgl7wuh5DAMBgNVHRMEBTADAQH/MA0GCSqGSIb3DQEB
BQUAA4IBAQCaAUif7Pfx3X0F08cxhx8/Hdx4jcJw6MCq6iq6rsXM32ge43t8OHKC
pJW08dk58a3O1YQSMMvD6GJDAiAfXzfwcwY6j258b1ZlI9Ag0VokvhMl/XfdCsdh
AWImnL1t4hvU5jLaImUUMlYxMcSfHBGAm7WJIZ2LdEfg6YWfZh+WGbg1W7uxLxk6
y4h5rWdNnzBHWAGf7zJ0oEDV6W6RSwNXtC0JNnLaeIUm/6xdSddJlQPwUv8YH4jX
c1vuFqTnJBPcb7W//R/GI2Paicm1cmns9NLnPR35exHxFTy+D1yxmGokpoPMdife
aH+sfuxT8xeTPb3kjzF9eJTlnEquUDLM
-----END CERTIFICATE-----
`;
export const TEST_CERT_PIN =
  "sha256:345959acb2c3b2feb87d281961c893f62a314207ef02599f1cc4a5fb255480b3";

export const TEST_CERT2_PEM = `-----BEGIN CERTIFICATE-----
MIID9jCCAt6gAwIBAgIJAN5MXZDic7qYMA0GCSqGSIb3DQEBBQUAMFkxCzAJBgNV
BAYTAkFVMRMwEQYDVQQIEwpTb21lLVN0YXRlMSEwHwYDVQQKExhJbnRlcm5ldCBX
aWRnaXRzIFB0eSBMdGQxEjAQBgNVBAMTCXRlc3RDZXJ0MjAgFw0xNzA3MjQxNjA0
MDFaGA8yMTE3MDYzMDE2MDQwMVowWTELMAkGA1UEBhMCQVUxEzARBgNVBAgTClNv
bWUtU3RhdGUxITAfBgNVBAoTGEludGVybmV0IFdpZGdpdHMgUHR5IEx0ZDESMBAG
A1UEAxMJdGVzdENlcnQyMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA
0brwpJYN2ytPWzRBtZSVc3dhkQlA59AzxzqeLLkano0Pxo9NIc3T/y58nnRI8uaS
I1P7BzUfJTiUEvmAtX8NggqKK4ld/gPrU+IRww1CUYS4KCkA/0d0ctPy0JwBCjD+
b57G3rmNE8c+0jns6J96ZzNtqmv6N+ZlFBAXm1p4S+k0kGi5+hoQ6H7SYXjk2lG+
r/8jPQEjy/NSdw1dcCA0Nc6o+hPr32927dS6J9KOhBeXNYUNdbuDDmroM9/gN2e/
YMSA1olLeDPQ7Xvhk0PIyEDnHh83AffPCx5yM3htVRGddjIsPAVUJEL3z5leJtxe
fzyPghOhHJY0PXqznDQTcwIDAQABo4G+MIG7MB0GA1UdDgQWBBRP0IJqv/5rQ4Uf
SByl77dJeEapRDCBiwYDVR0jBIGDMIGAgBRP0IJqv/5rQ4UfSByl77dJeEapRKFd
pFswWTELMAkGA1UEBhMCQVUxEzARBgNVBAgTClNvbWUtU3RhdGUxITAfBgNVBAoT
GEludGVybmV0IFdpZGdpdHMgUHR5IEx0ZDESMBAGA1UEAxMJdGVzdENlcnQyggkA
3kxdkOJzupgwDAYDVR0TBAUwAwEB/zANBgkqhkiG9w0BAQUFAAOCAQEA0RIMHc10
wHHPMh9UflqBgDMF7gfbOL0juJfGloAOcohWWfMZBBJ0CQKMy3xRyoK3HmbW1eeb
iATjesw7t4VEAwf7mgKAd+eTfWYB952uq5qYJ2TI28mSofEq1Wz3RmrNkC1KCBs1
u+YMFGwyl6necV9zKCeiju4jeovI1GA38TvH7MgYln6vMJ+FbgOXj7XCpek7dQiY
KGaeSSH218mGNQaWRQw2Sm3W6cFdANoCJUph4w18s7gjtFpfV63s80hXRps+vEyv
jEQMEQpG8Ss7HGJLGLBw/xAmG0e//XS/o2dDonbGbvzToFByz8OGxjMhk6yV6hdd
+iyvsLAw/MYMSA==
-----END CERTIFICATE-----
`;
export const TEST_CERT2_PIN =
  "sha256:d1ef16989563fe7775f81a7dc55ce16a467ca9baedae2d081cb0a068b6a81971";
