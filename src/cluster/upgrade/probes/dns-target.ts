import { isIP } from "node:net";
import type { KubeClient } from "../../../kube/types.js";
import { CANARY_NAME, serviceProxyPath } from "../../../manifests/probe-canary.js";
import { PROBE_NAMESPACE } from "./api-targets.js";
import type { ProbeTarget } from "./prober.js";
import { lastLine, proxyAnswerError } from "./workload-targets.js";

// The DNS probe (kubeadm-upgrade.md §5.5): `kubernetes.default` looked up from inside the
// cluster every interval, which is what breaks for Pods while CoreDNS is rolled out. The lookup
// runs in one of the canary's Pods, reached like the canary's own request through the API
// server's service proxy: the canary is agnhost `netexec`, whose `/shell?cmd=` runs a command
// and answers JSON {"output", "error"}, 200 when it succeeded and 417 when not
// (test/images/agnhost/README.md, netexec), and the agnhost image ships dig (its Dockerfile
// installs bind-tools "which can used in DNS tests").

export const DNS_LOOKUP_NAME = "kubernetes.default";

/**
 * One try with a 2 s wait, through the Pod's resolv.conf search path as a Pod's own lookups go
 * (kubernetes.default → kubernetes.default.svc.<domain>), both families: any address is an answer.
 */
export const DNS_COMMAND = `dig +short +search +tries=1 +time=2 ${DNS_LOOKUP_NAME} A ${DNS_LOOKUP_NAME} AAAA`;

interface ShellAnswer {
  output?: string;
  error?: string;
}

function shellAnswer(body: string): ShellAnswer {
  try {
    const parsed = JSON.parse(body) as unknown;
    return typeof parsed === "object" && parsed !== null ? parsed : {};
  } catch {
    return {};
  }
}

/** The lookup, through the canary Service's proxy: up when dig printed an address. */
export function dnsTarget(client: KubeClient): ProbeTarget {
  const path = serviceProxyPath(
    PROBE_NAMESPACE,
    CANARY_NAME,
    "http",
    `/shell?cmd=${encodeURIComponent(DNS_COMMAND)}`,
  );
  return {
    name: "dns",
    kind: "dns",
    url: path,
    checks: `${DNS_COMMAND} in a ${CANARY_NAME} Pod`,
    check: async () => {
      const res = await client.getRaw(path);
      const answer = shellAnswer(res.body);
      if (res.status === 417) {
        throw new Error(
          `the lookup of ${DNS_LOOKUP_NAME} failed (${answer.error ?? "no error given"}): ${lastLine(answer.output) || "no output"}`,
        );
      }
      if (res.status !== 200) throw proxyAnswerError(res);
      const lines = (answer.output ?? "").split("\n").map((l) => l.trim());
      if (!lines.some((l) => isIP(l) !== 0)) {
        throw new Error(
          `the lookup of ${DNS_LOOKUP_NAME} found no address: ${lastLine(answer.output) || "an empty answer"}`,
        );
      }
    },
  };
}
