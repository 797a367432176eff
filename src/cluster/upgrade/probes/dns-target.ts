import { isIP } from "node:net";
import type { KubeClient } from "../../../kube/types.js";
import { CANARY_NAME, serviceProxyPath } from "../../../manifests/probe-canary.js";
import { PROBE_NAMESPACE } from "./api-targets.js";
import type { ProbeTarget } from "./prober.js";
import { lastLine, proxyAnswerError, throughServiceProxy } from "./workload-targets.js";

// The DNS probe (kubeadm-upgrade.md §5.5): `kubernetes.default` looked up from inside the
// cluster every interval, which is what breaks for Pods while CoreDNS is rolled out. The lookup
// runs in one of the canary's Pods, reached like the canary's own request through the API
// server's service proxy: the canary is agnhost `netexec`, whose `/shell?cmd=` runs a command
// and answers JSON {"output", "error"}. Its README says 200 when the command succeeded and 417
// when not, but its shellHandler answers 200 either way, with "error" ("exit status 9") set when
// the command failed, and 417 only when the JSON cannot be made
// (test/images/agnhost/netexec/netexec.go): a failed command is an answer with an error, at 200
// or 417. The agnhost image ships dig (its Dockerfile installs bind-tools "which can used in DNS
// tests").

export const DNS_LOOKUP_NAME = "kubernetes.default";

/**
 * One try with a 1 s wait per query, through the Pod's resolv.conf search path as a Pod's own
 * lookups go (kubernetes.default → kubernetes.default.svc.<domain>), both families: any address
 * is an answer. dig asks A, then AAAA, and gives up on the search list after a timeout: a server
 * that does not answer costs 2 s, well within the prober's 5 s, so the sample says what dig said
 * (test/integration/upgrade/dns-lookup.test.ts measures it with real dig). A cluster DNS that
 * takes a second to answer is itself the disruption this probe is for.
 */
export const DNS_COMMAND = `dig +short +search +tries=1 +time=1 ${DNS_LOOKUP_NAME} A ${DNS_LOOKUP_NAME} AAAA`;

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
      const res = await throughServiceProxy(client, path);
      const answer = shellAnswer(res.body);
      if (res.status === 417 || (res.status === 200 && answer.error)) {
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
