import type { TestHost } from "./testbed.js";

// Real etcdctl against a testbed host's etcd, with the healthcheck-client credentials kubeadm
// creates for exactly this (etcd/healthcheck-client), run inside the host's network namespace.

/** Runs etcdctl against the host's etcd (default: its loopback client URL); stdout. */
export async function etcdctl(
  host: TestHost,
  args: string[],
  endpoint = "https://127.0.0.1:2379",
): Promise<string> {
  const pki = host.path("etc/kubernetes/pki/etcd");
  const r = await host.exec(
    [
      "etcdctl",
      `--endpoints=${endpoint}`,
      `--cacert=${pki}/ca.crt`,
      `--cert=${pki}/healthcheck-client.crt`,
      `--key=${pki}/healthcheck-client.key`,
      ...args,
    ],
    { env: { ETCDCTL_API: "3" } },
  );
  if (r.code !== 0)
    throw new Error(`etcdctl ${args.join(" ")} on ${host.name} failed: ${r.stderr}`);
  return r.stdout;
}
