import { describe, expect, it } from "vitest";
import { dnsTarget } from "../../../../src/cluster/upgrade/probes/dns-target.js";
import { PathUnavailable } from "../../../../src/cluster/upgrade/probes/prober.js";
import type { KubeClient, RawResponse } from "../../../../src/kube/types.js";

// How the DNS probe reads netexec's /shell answer. The answers are agnhost's: its README says 417
// when the command failed, but its shellHandler answers 200 either way with "error" set
// (test/images/agnhost/netexec/netexec.go; "output" and "error" left out when empty), and what
// dig prints is real dig's (test/integration/upgrade/dns-lookup.test.ts runs it).

const answering = (res: RawResponse) =>
  ({ getRaw: () => Promise.resolve(res) }) as unknown as KubeClient;
const check = (res: RawResponse) => dnsTarget(answering(res)).check(new AbortController().signal);
const shell = (status: number, body: object) => ({ status, body: JSON.stringify(body) });
const TIMED_OUT =
  ";; communications error to 10.96.0.10#53: timed out\n;; no servers could be reached\n";

describe("the DNS probe's reading of netexec's answer", () => {
  it("an address printed and no error is up", async () => {
    await expect(check(shell(200, { output: "10.96.0.1\n" }))).resolves.toBeUndefined();
    await expect(
      check(shell(200, { output: "fd00:10:96::1\n", error: "" })),
    ).resolves.toBeUndefined();
  });

  it("dig failed, as agnhost answers it (200 with an error) or as its README says (417)", async () => {
    const said =
      "the lookup of kubernetes.default failed (exit status 9): ;; no servers could be reached";
    await expect(
      check(shell(200, { output: TIMED_OUT + TIMED_OUT, error: "exit status 9" })),
    ).rejects.toThrow(said);
    await expect(
      check(shell(417, { output: TIMED_OUT + TIMED_OUT, error: "exit status 9" })),
    ).rejects.toThrow(said);
    // An address for A but AAAA timed out: dig failed, the server dropped a query.
    await expect(
      check(shell(200, { output: `10.96.0.1\n${TIMED_OUT}`, error: "exit status 9" })),
    ).rejects.toThrow(said);
  });

  it("nothing printed (NXDOMAIN, or no data) is no address; another status is the proxy's", async () => {
    await expect(check(shell(200, {}))).rejects.toThrow(
      "the lookup of kubernetes.default found no address: an empty answer",
    );
    await expect(check({ status: 503, body: "no endpoints available" })).rejects.toThrow(
      "the service proxy answered 503: no endpoints available",
    );
  });

  it("a lookup the API server could not proxy measures nothing about DNS", async () => {
    const etcdDown = {
      status: 500,
      body: JSON.stringify({ kind: "Status", message: "etcdserver: request timed out" }),
    };
    await expect(check(etcdDown)).rejects.toBeInstanceOf(PathUnavailable);
    const unreachable = {
      getRaw: () => Promise.reject(new Error("connect ECONNREFUSED 10.0.0.11:6443")),
    } as unknown as KubeClient;
    await expect(dnsTarget(unreachable).check(new AbortController().signal)).rejects.toBeInstanceOf(
      PathUnavailable,
    );
  });
});
